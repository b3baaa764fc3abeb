"""Finite rewards give finite, correct advantages, or a ValueError naming what cannot be done.

First the probes of issue 14 item 3, each as written there (each gave zeros, NaN or -inf before
the estimators learnt to scale before reducing). Then two property-based tests over every
registered estimator at extreme magnitudes:

- float16 and float32 rewards near the top of the dtype's range (sums and squares overflow) and
  in its subnormal range (squares underflow), against the same estimator on the same rewards in
  float64, where nothing overflows or underflows. A ValueError is allowed only where the float64
  result itself does not fit the dtype.
- float64 rewards x * 2^e with e near +-1000, against 2^e times the advantage of x (every
  estimator on unbounded rewards is equivariant under such a scaling, with eps and beta moved
  accordingly): powers of two make the rescaling exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fade
from fade.registry import spec

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F32 = torch.float32
F64 = torch.float64


def adv(name, rewards, groups, dtype=F32, **params):
    return fade.advantages(name, torch.tensor(rewards, dtype=dtype), groups, **params)


def close(a: torch.Tensor, want, rtol: float = 1e-6) -> None:
    want = torch.as_tensor(want, dtype=F64)
    torch.testing.assert_close(a.to(F64), want, rtol=rtol, atol=0.0)


# -- the probes of item 3 ----------------------------------------------------------------------


def test_grpo_at_1e38_is_not_zero():
    a = adv("grpo", [1e38, 1e38, 1e38, -1e38], 4)
    close(a, [0.5, 0.5, 0.5, -1.5])


def test_grpo_float16_does_not_overflow_in_the_std():
    a = adv("grpo", [300.0, 0.0, 300.0, 0.0], 4, dtype=torch.float16)
    assert a.dtype == torch.float16
    close(a, [math.sqrt(0.75), -math.sqrt(0.75)] * 2, rtol=2e-3)


def test_grpo_constant_group_at_3e38_is_zero_not_nan():
    a = adv("grpo", [3e38, 3e38], 2)
    assert torch.equal(a, torch.zeros(2))


@pytest.mark.parametrize("name", ["dr_grpo", "rloo"])
def test_constant_group_at_3e38_is_zero_not_minus_inf(name):
    a = adv(name, [3e38] * 4, 4)
    assert torch.equal(a, torch.zeros(4))


def test_dr_grpo_and_rloo_keep_large_finite_results():
    close(adv("dr_grpo", [3e38, -3e38], 2), [3e38, -3e38])
    # rloo = n (r - mean)/(n - 1): (r - mean) * n would overflow, the result does not.
    close(adv("rloo", [2e38, 2e38, 2e38, -1e38], 4), [1e38, 1e38, 1e38, -3e38])


def test_an_advantage_beyond_the_dtype_is_a_value_error():
    with pytest.raises(ValueError, match=r"'dr_grpo' gives advantage .* exceeds the range of torch.float32"):
        adv("dr_grpo", [3e38, -3e38, -3e38, -3e38], 4)


def test_grpo_passk_at_1e308_float64():
    a = adv("grpo_passk", [1e308, -1e308, 0.0, 5.0], 4, dtype=F64)
    # gap = 1e308 - 5 over the group's unbiased std sqrt(2/3) 1e308 (to 1e-300 relative).
    close(a, [math.sqrt(1.5), 0.0, 0.0, 0.0], rtol=1e-12)


def test_asym_grpo_delta_1e40_is_refused():
    with pytest.raises(ValueError, match=r"delta must be >= 2.9\d*e-39 .* got 1e-40"):
        fade.estimator("asym_grpo", delta=1e-40)
    # The floor itself works in float32: failures get -p/delta, finite.
    a = adv("asym_grpo", [1.0, 0.0, 1.0, 0.0], 4, delta=3e-39)
    assert torch.isfinite(a).all()
    close(a, [0.5, -0.5 / 3e-39] * 2, rtol=1e-5)


@pytest.mark.parametrize("key", ["delta_min", "delta"])
def test_fade_delta_1e40_is_refused(key):
    with pytest.raises(ValueError, match=rf"{key} must be >= 2.9\d*e-39 .* got 1e-40"):
        fade.estimator("fade", **{key: 1e-40})


def test_logmeanexp_beta_1e39_float32():
    a = adv("logmeanexp", [1.0, 0.0, 1.0, 0.0], 4, beta=1e39)
    # beta -> inf: e = (1, 0, 1, 0), mean 1/2, A = (2 r - 1)/beta.
    close(a, [1e-39, -1e-39] * 2, rtol=1e-5)
    close(adv("logmeanexp", [1.0, 0.0, 1.0, 0.0], 4, dtype=F64, beta=1e39), [1e-39, -1e-39] * 2, rtol=1e-12)


def test_logmeanexp_tiny_beta_is_dr_grpo():
    r = [1.0, 0.0, 0.25, 0.0]
    close(adv("logmeanexp", r, 4, beta=1e-40), adv("dr_grpo", r, 4), rtol=1e-6)
    with pytest.raises(ValueError, match=r"beta must be non-zero, at least 2.2\d*e-308"):
        fade.estimator("logmeanexp", beta=1e-320)


def test_maxrl_subnormal_group_mean():
    a = adv("maxrl", [4e-40, 0.0, 0.0, 0.0], 4)  # mean 1e-40: (r - mean)/mean = 3, -1
    close(a, [3.0, -1.0, -1.0, -1.0], rtol=1e-5)


def test_large_lengths_and_whitening():
    close(adv("opo", [1e38, 0.0], [0, 0], lengths=[3e38, 3e38]), [5e37, -5e37])
    a = adv("reinforce_pp", [3e38, -3e38, 3e38, -3e38], 4)
    close(a, [math.sqrt(0.75), -math.sqrt(0.75)] * 2, rtol=1e-6)


def test_w_reinforce_lam_beyond_the_dtype():
    with pytest.raises(ValueError, match=r"lam=1e\+39 is not representable in torch.float32"):
        adv("w_reinforce", [1.0, 0.0], 2, lam=1e39)
    close(adv("w_reinforce", [0.0, 1.0], 2, dtype=F64, lam=1e39), [-1.0, 1e39])


# -- property: half and single precision against double ----------------------------------------

MIN_GROUP = 2  # passk/pkpo run with k = 2, grpo_passk needs 2
AMPLIFY = {"grpo": 1e6, "grpo_passk": 1e6, "reinforce_pp": 1e4, "reinforce_pp_baseline": 1e4}


def _params(name: str) -> dict:
    out = {}
    if "k" in spec(name).defaults:
        out["k"] = 2
    if name == "fade_decay":
        out["total_steps"] = 10
    if name == "fade_fixed":
        out["path"] = "shift"
    return out


def _inputs(name: str, rng: np.random.Generator, r: np.ndarray) -> dict[str, np.ndarray]:
    s = spec(name)
    out = {}
    if "lengths" in (*s.needs, *s.uses):
        out["lengths"] = rng.integers(1, 9, size=r.size).astype(np.float64)
    if "baseline_rewards" in (*s.needs, *s.uses):
        out["baseline_rewards"] = rng.permutation(r)
    return out


def _extreme_rewards(kind: str, dtype: torch.dtype, rng: np.random.Generator, n: int) -> np.ndarray:
    """Dyadic rewards k/8 2^e (few mantissa bits, so float32 group sums are exact) at one exponent
    e near the top or the bottom of ``dtype``'s range; unit rewards are tiny or 1 - tiny."""
    fi = torch.finfo(dtype)
    top = int(math.log2(fi.max))  # 2^top <= max
    bottom = round(math.log2(fi.smallest_normal * fi.eps)) + 3  # k/8 2^bottom >= the smallest subnormal
    if kind == "binary":
        return rng.integers(0, 2, size=n).astype(np.float64)
    low = kind == "unit" or rng.random() < 0.5
    e = int(rng.integers(bottom, bottom + 6)) if low else int(rng.integers(top - 3, top + 1))
    pool = rng.integers(-8, 9, size=int(rng.integers(1, 5))) / 8 * 2.0**e
    if kind == "unit":
        pool = np.abs(pool)
        if rng.random() < 0.5:
            pool = np.append(pool, 1.0)
    return rng.choice(pool, size=n).astype(np.float64)


@pytest.mark.parametrize("dtype", [torch.float16, F32], ids=["float16", "float32"])
@pytest.mark.parametrize("name", fade.available())
@SETTINGS
@given(data=st.data())
def test_extreme_magnitudes_match_float64(name, dtype, data):
    sizes = data.draw(st.lists(st.integers(MIN_GROUP, 6), min_size=1, max_size=4), label="sizes")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    n = sum(sizes)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    r = _extreme_rewards(spec(name).rewards, dtype, rng, n)
    inputs = _inputs(name, rng, r)
    low = torch.tensor(r, dtype=dtype)
    r = low.to(F64)  # the rewards as the dtype holds them
    ref = fade.advantages(name, r, ids, **{k: torch.tensor(v, dtype=F64) for k, v in inputs.items()}, **_params(name))
    fi = torch.finfo(dtype)
    peak = float(ref.abs().max())
    try:
        low_inputs = {k: torch.tensor(v, dtype=dtype) for k, v in inputs.items()}
        got = fade.advantages(name, low, ids, **low_inputs, **_params(name))
    except ValueError as exc:
        assert peak > fi.max * 0.99, f"{name}: ValueError though the result fits {dtype}: {exc}"
        assert "exceeds the range" in str(exc) or "not representable" in str(exc)
        return
    assert got.dtype == dtype
    assert torch.isfinite(got).all(), f"{name}: non-finite {got} from {low}"
    assert peak <= fi.max * 1.01
    rtol = 5e-2 if dtype == torch.float16 else 2e-5
    # Subnormal rewards are held to a spacing of one subnormal (a group mean rounds to it);
    # estimators that divide by eps, not by the spread, amplify that spacing by up to 1/eps.
    spacing = 4 * fi.smallest_normal * fi.eps * AMPLIFY.get(name, 1.0)
    err = (got.to(F64) - ref).abs()
    assert float(err.max()) <= rtol * peak + spacing, (name, low, got, ref)


# -- property: double precision at 2^+-1000 against the rescaled moderate batch -----------------

# name -> (how parameters move when rewards are multiplied by s, the degree d: A(s r) = s^d A(r))
EQUIVARIANT = {
    "dr_grpo": (lambda s: {}, 1),
    "rloo": (lambda s: {}, 1),
    "gpg": (lambda s: {}, 1),
    "opo": (lambda s: {}, 1),
    "remax": (lambda s: {}, 1),
    "reinforce": (lambda s: {}, 1),
    "asym_grpo": (lambda s: {}, 1),
    "grpo": (lambda s: {"eps": 1e-6 * s}, 0),
    "grpo_passk": (lambda s: {"eps": 1e-6 * s}, 0),
    "reinforce_pp": (lambda s: {"eps": 0.0}, 0),  # eps s^2 leaves float64 at s = 2^+-1000
    "reinforce_pp_baseline": (lambda s: {"eps": 0.0}, 0),
    "logmeanexp": (lambda s: {"beta": 2.0 / s}, 1),
    "maxrl": (lambda s: {}, 0),
}


def test_every_unbounded_estimator_is_covered():
    unbounded = {n for n in fade.available() if spec(n).rewards == "any"}
    assert unbounded <= set(EQUIVARIANT)


@pytest.mark.parametrize("name", sorted(EQUIVARIANT))
@SETTINGS
@given(data=st.data())
def test_float64_extremes_are_rescaled_moderate_batches(name, data):
    move, degree = EQUIVARIANT[name]
    sizes = data.draw(st.lists(st.integers(MIN_GROUP, 6), min_size=1, max_size=4), label="sizes")
    e = data.draw(st.sampled_from([-1000, -990, -960, 960, 1000, 1016]), label="exponent")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    n = sum(sizes)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    unit = spec(name).rewards == "unit"
    if unit and e > 0:
        e = -e
    x = rng.choice(rng.uniform(0 if unit else -1, 1, size=int(rng.integers(1, 5))), size=n)
    inputs = {k: torch.tensor(v) for k, v in _inputs(name, rng, x).items()}
    s = 2.0**e
    moved = move(s)
    defaults = {"eps": 0.0 if name.startswith("reinforce_pp") else 1e-6, "beta": 2.0}
    base = {k: v for k, v in defaults.items() if k in moved}
    want = fade.advantages(name, torch.tensor(x), ids, **inputs, **base) * s**degree
    scaled_inputs = dict(inputs)
    if "baseline_rewards" in scaled_inputs:
        scaled_inputs["baseline_rewards"] = scaled_inputs["baseline_rewards"] * s
    if not all(math.isfinite(v) for v in moved.values()):
        return  # the moved parameter itself is beyond float64: no reference
    try:
        got = fade.advantages(name, torch.tensor(x) * s, ids, **scaled_inputs, **moved)
    except ValueError as exc:
        assert float(want.abs().max()) > 1e307, f"{name}: {exc}"
        return
    assert torch.isfinite(got).all()
    peak = float(want.abs().max())
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9 * peak + 1e-300 * s**degree)
