"""Number validation for the core: what a parameter, a setting or a state field must be, decided
in one place and refused in one line that names the key, what was expected and the value given.

Python and numpy numbers are numbers; a bool is not (``True`` is an int to Python, never a
parameter value here); an int too large for a float64 (``10**400``) is not finite.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["finite", "in_range", "plain", "require"]


def finite(value: Any) -> bool:
    """Whether ``value`` is a real, finite number (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


def in_range(value: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False) -> bool:
    """Whether ``value`` is a finite number with ``low <= value`` (``<`` where ``low_open``) and
    ``value <= high``, each bound where given."""
    if not finite(value):
        return False
    if low is not None and (value <= low if low_open else value < low):
        return False
    return high is None or value <= high


def plain(params: dict[str, Any], key: str) -> Any:
    """``params[key]``, with a numpy scalar (np.float64(0.5), np.int64(4)) made a Python number in
    place, so what is stored and printed is the plain value."""
    value = params[key]
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = params[key] = value.item()
    return value


def require(params: dict[str, Any], key: str, *, low: float | None = None, high: float | None = None,
            low_open: bool = False, what: str | None = None) -> None:
    """Refuse ``params[key]`` unless it is a finite number within the bounds (see :func:`in_range`).

    The message says ``{key} must be {what}`` where ``what`` is given, else which condition failed
    ("a finite number", ">= low", "> low", "<= high"); it ends with the value given.
    """
    value = plain(params, key)
    if in_range(value, low=low, high=high, low_open=low_open):
        return
    if what is not None:
        raise ValueError(f"{key} must be {what}, got {value!r}")
    if not finite(value):
        raise ValueError(f"{key} must be a finite number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{key} must be {'>' if low_open else '>='} {low}, got {value!r}")
    raise ValueError(f"{key} must be <= {high}, got {value!r}")
