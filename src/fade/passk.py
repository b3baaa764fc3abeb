"""The unbiased pass@k estimator of Chen et al. (2021, "Evaluating Large Language Models
Trained on Code", arXiv 2107.03374).

With n samples of which c are correct, pass@k = 1 - C(n-c, k) / C(n, k), the probability that
a random k-subset of the samples holds a success. The ratio is evaluated as the product
prod_{i=n-c+1}^{n} (1 - k/i), summed in log space from one table of log1p terms, so it is
exact to rounding for n in the thousands and vectorised over arrays of n and c.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pass_at_k"]


def pass_at_k(n, c, k: int):
    """Unbiased pass@k from ``n`` samples with ``c`` correct.

    Args:
        n: samples per problem (int or array).
        c: correct samples per problem (int or array broadcastable with ``n``), 0 <= c <= n.
        k: 1 <= k <= n.

    Returns:
        A float for scalar inputs, else a float64 array of the broadcast shape.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    n_arr = _counts(n, "n")
    c_arr = _counts(c, "c")
    n_arr, c_arr = np.broadcast_arrays(n_arr, c_arr)
    if n_arr.size == 0:
        return np.zeros(n_arr.shape)
    if (c_arr > n_arr).any():
        i = np.flatnonzero(c_arr > n_arr)[0]
        raise ValueError(f"c must be at most n, got c={c_arr.flat[i]} with n={n_arr.flat[i]}")
    if (n_arr < k).any():
        raise ValueError(f"k={k} exceeds the number of samples n={int(n_arr.min())}: expected k <= n")
    top = int(n_arr.max())
    # table[m] = sum_{i=k+1}^{m} log(1 - k/i) for m >= k; the product over (n-c, n] is a difference.
    i = np.arange(k + 1, top + 1, dtype=np.float64)
    table = np.zeros(top + 1)
    table[k + 1 :] = np.cumsum(np.log1p(-k / i))
    lower = n_arr - c_arr
    some_fail_set = lower >= k  # else every k-subset holds a success
    log_ratio = table[n_arr] - table[np.where(some_fail_set, lower, k)]
    out = np.where(some_fail_set, -np.expm1(log_ratio), 1.0) + 0.0  # no negative zero
    if np.ndim(n) == 0 and np.ndim(c) == 0:
        return float(out)
    return out


def _counts(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            raise ValueError(f"{name} must hold whole numbers, got {x!r}")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu" or arr.dtype.kind == "b":
        raise ValueError(f"{name} must be integers, got {x!r}")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative, got {x!r}")
    return arr.astype(np.int64)
