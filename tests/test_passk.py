"""The unbiased pass@k estimator (Chen et al. 2021): pass@k = 1 - C(n-c, k) / C(n, k).

Checked against the exact rational value from ``math.comb`` for every (c, k) up to n = 200,
for stability at n = 4096 (range, monotonicity, the n - c < k case, exact points), and for its
array and scalar forms.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fade


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16, 33, 64, 100, 200])
def test_matches_exact_formula_for_every_c_and_k(n):
    c = np.arange(n + 1)
    for k in range(1, n + 1):
        got = fade.pass_at_k(n, c, k)
        want = np.array([float(exact(n, ci, k)) for ci in range(n + 1)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_matches_exact_formula_property(data):
    n = data.draw(st.integers(1, 300))
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    assert fade.pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), rel=1e-12, abs=1e-13)


def test_known_values():
    assert fade.pass_at_k(10, 0, 1) == 0.0
    assert fade.pass_at_k(10, 10, 1) == 1.0
    assert fade.pass_at_k(10, 3, 1) == pytest.approx(0.3, rel=1e-14)
    assert fade.pass_at_k(4, 1, 2) == pytest.approx(0.5, rel=1e-14)  # 1 - C(3,2)/C(4,2)
    assert fade.pass_at_k(5, 1, 5) == 1.0


N_BIG = 4096


@pytest.mark.parametrize("k", [1, 2, 10, 100, 1000, 4000, 4096])
def test_stable_at_n_4096(k):
    c = np.arange(N_BIG + 1)
    p = fade.pass_at_k(N_BIG, c, k)
    assert p.shape == (N_BIG + 1,)
    assert np.isfinite(p).all()
    assert (p >= 0).all() and (p <= 1).all()
    assert p[0] == 0.0
    assert (np.diff(p) >= 0).all()  # monotone in c
    assert (p[N_BIG - c < k] == 1.0).all()  # every k-subset holds a success


def test_monotone_in_k_at_n_4096():
    ks = [1, 2, 5, 10, 50, 100, 500, 1000, 4096]
    for c in (0, 1, 7, 100, 2048, 4000, 4096):
        vals = [fade.pass_at_k(N_BIG, c, k) for k in ks]
        assert all(b >= a for a, b in zip(vals, vals[1:])), (c, vals)


@pytest.mark.parametrize(
    ("c", "k"),
    [(1, 1), (1, 100), (3, 64), (17, 10), (100, 50), (500, 8), (2048, 2), (4000, 3), (40, 1000), (4090, 5)],
)
def test_exact_points_at_n_4096(c, k):
    assert fade.pass_at_k(N_BIG, c, k) == pytest.approx(float(exact(N_BIG, c, k)), rel=1e-12, abs=1e-12)


def test_vectorised_over_c_and_n():
    n = np.array([10, 20, 30, 200])
    c = np.array([0, 5, 30, 17])
    got = fade.pass_at_k(n, c, 4)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64 and got.shape == (4,)
    np.testing.assert_allclose(got, [float(exact(a, b, 4)) for a, b in zip(n, c)], rtol=1e-12, atol=1e-13)
    # broadcasting a scalar n against an array of c, and a 2-D array
    grid = fade.pass_at_k(16, np.arange(17).reshape(1, 17).repeat(2, axis=0), 3)
    assert grid.shape == (2, 17)
    np.testing.assert_allclose(grid[1], [float(exact(16, ci, 3)) for ci in range(17)], rtol=1e-12, atol=1e-13)
    # lists are arrays too
    np.testing.assert_allclose(fade.pass_at_k([8, 8], [1, 2], 2), [float(exact(8, 1, 2)), float(exact(8, 2, 2))])


def test_scalar_in_float_out():
    for n, c in ((10, 3), (np.int64(10), np.int32(3)), (10.0, 3.0)):
        out = fade.pass_at_k(n, c, 2)
        assert type(out) is float
    assert fade.pass_at_k(10, 3, np.int64(2)) == fade.pass_at_k(10, 3, 2)


def test_no_negative_zero():
    assert math.copysign(1.0, fade.pass_at_k(10, 0, 3)) == 1.0


def test_huge_n_needs_no_table_of_size_n():
    """pass_at_k(10**9, 3, 2) once built a 10^9-entry table (23 GB); now min(k, c) factors."""
    import tracemalloc

    tracemalloc.start()
    try:
        got = fade.pass_at_k(10**9, 3, 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == pytest.approx(float(exact(10**9, 3, 2)), rel=1e-12)
    assert peak < 10**7
    n = np.array([10**9, 10**12, 7])
    c = np.array([10**6, 5, 3])
    want = [float(exact(10**9, 10**6, 4)), float(exact(10**12, 5, 4)), float(exact(7, 3, 4))]
    np.testing.assert_allclose(fade.pass_at_k(n, c, 4), want, rtol=1e-12)
