"""The core's number validation (fade.validation): what counts as a finite number, the bounds, and
the one-line refusals every parameter check shares."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fade.validation import finite, in_range, plain, require


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_float_is_finite_as_math_says(x):
    assert finite(x) == math.isfinite(x) == finite(np.float64(x))


@given(st.integers(min_value=-(10**400), max_value=10**400))
def test_an_int_is_finite_while_a_float64_holds_it(n):
    fits = abs(n) < 2**1024 - 2**970  # the float64 range, past which float(n) overflows
    assert finite(n) == fits


@pytest.mark.parametrize("value", [True, False, np.bool_(True), "1.0", None, [1.0], 1j, np.array(1.0)])
def test_bools_text_and_containers_are_not_numbers(value):
    assert not finite(value)


@given(st.floats(-10, 10), st.floats(-10, 10), st.floats(-10, 10), st.booleans())
def test_in_range_is_the_bounds_it_names(x, low, high, low_open):
    expected = (x > low if low_open else x >= low) and x <= high
    assert in_range(x, low=low, high=high, low_open=low_open) == expected
    assert in_range(x) and in_range(x, low=None, high=None)


def test_plain_makes_numpy_scalars_python_numbers_in_place():
    params = {"a": np.float32(0.5), "b": np.int64(4), "c": "text"}
    assert plain(params, "a") == 0.5 and type(params["a"]) is float
    assert plain(params, "b") == 4 and type(params["b"]) is int
    assert plain(params, "c") == "text"


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (math.nan, {}, "eps must be a finite number, got nan"),
        (10**400, {}, "eps must be a finite number, got 1000"),
        (True, {"low": 0.0}, "eps must be a finite number, got True"),
        (-1.0, {"low": 0.0}, "eps must be >= 0.0, got -1.0"),
        (0.0, {"low": 0.0, "low_open": True}, "eps must be > 0.0, got 0.0"),
        (2.0, {"high": 1.0}, "eps must be <= 1.0, got 2.0"),
        (2.0, {"high": 1.0, "what": "a share in [0, 1]"}, "eps must be a share in [0, 1], got 2.0"),
    ],
)
def test_require_refuses_in_one_line_naming_the_key_and_the_value(value, kwargs, message):
    with pytest.raises(ValueError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        require({"eps": value}, "eps", **kwargs)


def test_require_accepts_what_is_in_range_and_stores_it_plain():
    params = {"eps": np.float64(0.25)}
    require(params, "eps", low=0.0, low_open=True, high=1.0)
    assert type(params["eps"]) is float
