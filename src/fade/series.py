"""A run's series of per-step numbers, read as figures and summaries read them.

:func:`finite_mean` is the one mean over steps, gaps left out: a run's summary
(:mod:`fade.testbed.summary`), the sweep's claims and ``fade analyze``'s report take it, the
report turning its NaN (no finite value) into JSON's null where it writes one.
:func:`moving_average` is the one smoothing of a series against step: the run figures, the
sweep's figures and the summaries' peak and threshold rules all smooth through it. numpy only,
so the testbed's readers, the plotting layer and ``fade analyze`` may all import it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = ["finite_mean", "mean_of", "moving_average"]


def mean_of(values: np.ndarray) -> float:
    """The mean of finite ``values``, finite too: where their sum overflows (rewards near 1e308),
    they are summed scaled by a power of two (exact) below their largest magnitude."""
    with np.errstate(over="ignore"):
        mean = float(np.mean(values))
    if math.isfinite(mean) or not np.isfinite(values).all():
        return mean
    _, exponent = np.frexp(np.abs(values).max())
    return float(np.ldexp(np.mean(np.ldexp(values, -int(exponent))), int(exponent)))


def finite_mean(values: np.ndarray | Iterable[float | None] | None) -> float:
    """The mean of the finite ones of ``values`` (None, NaN and infinities, a step's missing
    number, left out), by :func:`mean_of`; NaN where none is finite (or ``values`` is None)."""
    if values is None:
        return math.nan
    values = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    values = values[np.isfinite(values)]
    return mean_of(values) if values.size else math.nan


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average over ``window`` values, the window shrinking at both ends.

    Point i averages values[i - window // 2 : i + (window - 1) // 2 + 1] (clipped to the array),
    so an even window leans one point into the past. Cumulative sums keep it O(n) for long runs.
    """
    n = len(values)
    if window <= 1 or n == 0:
        return values.astype(float, copy=True)
    # Summing differences from the first value keeps a constant series exactly constant and
    # the rounding of a long cumulative sum small.
    origin = float(values[0])
    sums = np.concatenate([[0.0], np.cumsum(values - origin, dtype=float)])
    index = np.arange(n)
    lo = np.maximum(index - window // 2, 0)
    hi = np.minimum(index + (window - 1) // 2 + 1, n)
    return origin + (sums[hi] - sums[lo]) / (hi - lo)
