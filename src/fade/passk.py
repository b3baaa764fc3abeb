"""The unbiased pass@k estimator of Chen et al. (2021, "Evaluating Large Language Models
Trained on Code", arXiv 2107.03374).

With n samples of which c are correct, pass@k = 1 - C(n-c, k) / C(n, k), the probability that
a random k-subset of the samples holds a success. The ratio is the product of m = min(k, c)
factors, prod_{t<m} (1 - max(k, c)/(n - t)) (the k-subset's draws all missing the c successes,
or the c successes all missing the k-subset), summed in log space from log1p terms: exact to
rounding, memory bounded whatever n (no table of size n), and vectorised over arrays of n and c.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pass_at_k"]

_BLOCK = 2**20  # log1p terms evaluated at once


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
    lower = n_arr - c_arr
    some_fail_set = lower >= k  # else every k-subset holds a success
    terms = np.where(some_fail_set, np.minimum(c_arr, k), 0).ravel()
    big = np.maximum(c_arr, k).ravel().astype(np.float64)
    top = n_arr.ravel().astype(np.float64)
    log_ratio = np.zeros(terms.shape)
    live = np.flatnonzero(terms > 0)
    longest = int(terms.max()) if terms.size else 0
    # Blocks of term indices t, at most _BLOCK terms in flight at once: memory stays bounded for
    # n = 10^9 and for long products alike.
    step = max(1, _BLOCK // max(live.size, 1))
    for start in range(0, longest, step):
        live = live[terms[live] > start]
        t = np.arange(start, min(start + step, longest), dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):  # past an element's last term
            x = np.log1p(-big[live, None] / (top[live, None] - t))
        x[t >= terms[live, None]] = 0.0
        log_ratio[live] += x.sum(axis=1)
    out = np.where(some_fail_set, -np.expm1(log_ratio.reshape(n_arr.shape)), 1.0) + 0.0  # no negative zero
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
