"""A run's series of per-step numbers, read as figures and summaries read them.

:func:`moving_average` is the one smoothing of a series against step: the run figures, the
sweep's figures and the summaries' peak and threshold rules all smooth through it. numpy only,
so the testbed's readers, the plotting layer and ``fade analyze`` may all import it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["moving_average"]


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
