"""Invariants every registered estimator keeps, on random ragged batches (property-based).

Batches have 1..8 groups of 1..12 rollouts (at least what the estimator needs), arbitrary
integer ids (negative, huge, sparse), and come in shuffled order. Rewards follow the estimator's
``spec.rewards``: binary, in [0, 1], or any real. For comparisons, rewards lie on a dyadic grid so
that group sums are exact in float32 and a reordering cannot change a mean by an ulp that a
near-zero standard deviation would then amplify; finiteness is checked with wide floats.

The properties: permuting the batch permutes the advantages; centred estimators have zero group
mean; GRPO is affine invariant; finite in, finite out; dtype and shape follow the rewards;
``groups=G`` equals ids ``arange(N) // G``; string ids equal integer ids; float32 agrees with
float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fade
from fade.registry import spec

settings.register_profile(
    "fade-invariants",
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SETTINGS = settings.get_profile("fade-invariants")

NAMES = [n for n in fade.available() if not n.startswith("fade")]
CENTRED = [n for n in NAMES if spec(n).centred]
DTYPES = [torch.float64, torch.float32]


def min_group_size(name: str) -> int:
    s = fade.estimator(name)
    if "k" in s.params:
        return int(s.params["k"])
    if name == "grpo_passk":
        return 2
    return 1


def reward_array(rng: np.random.Generator, kind: str, n: int, *, wide: bool) -> np.ndarray:
    """n rewards of the given kind; drawn from a small pool half the time, so ties are common."""
    if kind == "binary":
        grid = np.array([0.0, 1.0])
    elif kind == "unit":
        grid = np.arange(17) / 16
    else:
        grid = np.arange(-400, 401) / 8
    if wide and rng.random() < 0.5:
        if kind == "binary":
            pool = grid
        elif kind == "unit":
            pool = rng.random(8)
        else:
            pool = rng.uniform(-1e6, 1e6, size=8) * 10.0 ** rng.integers(-6, 1, size=8)
    else:
        pool = grid
    if rng.random() < 0.5:
        pool = rng.choice(pool, size=min(pool.size, int(rng.integers(1, 4))), replace=False)
    return rng.choice(pool, size=n).astype(np.float64)


@st.composite
def group_ids(draw, n_groups: int) -> list[int]:
    """Distinct ids: a compact range at some offset, or sparse huge / negative values."""
    if draw(st.booleans()):
        offset = draw(st.integers(-(2**40), 2**40))
        step = draw(st.integers(1, 5))
        ids = [offset + step * i for i in range(n_groups)]
        return draw(st.permutations(ids))
    return draw(st.lists(st.integers(-(2**62), 2**62), min_size=n_groups, max_size=n_groups, unique=True))


@st.composite
def batches(draw, name: str, *, wide: bool = False, equal_sizes: bool = False):
    """(rewards, ids, inputs, sizes) as numpy arrays, rollouts in shuffled order."""
    s = spec(name)
    lo = min_group_size(name)
    if equal_sizes:
        size = draw(st.integers(lo, 12))
        sizes = [size] * draw(st.integers(1, 8))
    else:
        sizes = draw(st.lists(st.integers(lo, 12), min_size=1, max_size=8))
    if sum(sizes) < 2:  # batch whitening (reinforce_pp) needs two rollouts
        sizes.append(lo)
    ids = draw(group_ids(len(sizes)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    per_rollout = np.repeat(np.array(ids, dtype=np.int64), sizes)
    n = per_rollout.size
    rewards = reward_array(rng, s.rewards, n, wide=wide)
    inputs = {}
    if "lengths" in s.needs or ("lengths" in s.uses and draw(st.booleans())):
        inputs["lengths"] = rng.integers(1, 65, size=n).astype(np.float64)
    if "baseline_rewards" in (*s.needs, *s.uses):
        inputs["baseline_rewards"] = reward_array(rng, s.rewards, n, wide=wide)
    if not equal_sizes:
        perm = rng.permutation(n)
        rewards, per_rollout = rewards[perm], per_rollout[perm]
        inputs = {k: v[perm] for k, v in inputs.items()}
    return rewards, per_rollout, inputs, sizes


def run(name, rewards, groups, inputs, dtype):
    t = {k: torch.as_tensor(v, dtype=dtype) for k, v in inputs.items()}
    return fade.advantages(name, torch.as_tensor(rewards, dtype=dtype), groups, **t)


def tol(dtype, a: torch.Tensor) -> dict[str, float]:
    scale = max(1.0, float(a.abs().max()))
    if dtype == torch.float32:
        return {"rtol": 1e-3, "atol": 1e-3 * scale}
    return {"rtol": 1e-9, "atol": 1e-10 * scale}


# -- order of rollouts -------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_permuting_the_batch_permutes_the_advantages(name):
    @SETTINGS
    @given(batch=batches(name), seed=st.integers(0, 2**32 - 1))
    def check(batch, seed):
        rewards, ids, inputs, _ = batch
        perm = np.random.default_rng(seed).permutation(rewards.size)
        for dtype in DTYPES:
            a = run(name, rewards, ids, inputs, dtype)
            b = run(name, rewards[perm], ids[perm], {k: v[perm] for k, v in inputs.items()}, dtype)
            torch.testing.assert_close(b, a[torch.as_tensor(perm)], **tol(dtype, a))

    check()


# -- centring ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CENTRED)
def test_centred_estimators_have_zero_group_mean(name):
    @SETTINGS
    @given(batch=batches(name))
    def check(batch):
        rewards, ids, inputs, _ = batch
        inputs = {k: v for k, v in inputs.items() if k != "lengths"}  # rollouts weigh equally
        dense = torch.as_tensor(np.unique(ids, return_inverse=True)[1].reshape(-1))
        for dtype in DTYPES:
            a = run(name, rewards, ids, inputs, dtype).to(torch.float64)
            sums = torch.zeros(int(dense.max()) + 1, dtype=torch.float64).index_add_(0, dense, a)
            scale = max(1.0, float(a.abs().max())) * 12
            eps = 1e-5 if dtype == torch.float32 else 1e-12
            torch.testing.assert_close(sums, torch.zeros_like(sums), rtol=0, atol=eps * scale)

    check()


@pytest.mark.parametrize("name", CENTRED)
def test_constant_groups_get_zero_from_centred_estimators(name):
    @SETTINGS
    @given(batch=batches(name))
    def check(batch):
        rewards, ids, inputs, _ = batch
        # every group constant: one group value each
        uniq, inverse = np.unique(ids, return_inverse=True)
        rng = np.random.default_rng(len(uniq))
        level = rng.integers(0, 2, size=uniq.size).astype(np.float64)
        const = level[inverse.reshape(-1)]
        inputs = {k: v for k, v in inputs.items() if k != "lengths"}
        a = run(name, const, ids, inputs, torch.float64)
        assert torch.equal(a.abs(), torch.zeros_like(a))

    check()


# -- scale -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", ["group", "batch"])
@pytest.mark.parametrize("std", ["unbiased", "population"])
def test_grpo_affine_rescaling_moves_only_eps(std, scale):
    """(a r + b - mean) / (a s + eps) = (r - mean) / (s + eps / a): exact, eps accounted for.

    a and b are dyadic so that a r + b is exact and a constant group stays exactly constant
    (see test_grpo_constant_float32_group_is_zero for what rounding does otherwise).
    """

    @SETTINGS
    @given(
        batch=batches("grpo"),
        a=st.integers(1, 800).map(lambda m: m / 8),
        b=st.integers(-80, 80).map(lambda m: m / 8),
        eps=st.sampled_from([1e-6, 1e-4, 0.1]),
    )
    def check(batch, a, b, eps):
        rewards, ids, _, _ = batch
        moved = fade.advantages("grpo", torch.as_tensor(a * rewards + b), ids, eps=eps, std=std, scale=scale)
        ref = fade.advantages("grpo", torch.as_tensor(rewards), ids, eps=eps / a, std=std, scale=scale)
        torch.testing.assert_close(moved, ref, rtol=1e-7, atol=1e-7)

    check()


def test_grpo_is_affine_invariant_when_std_is_not_tiny():
    """With the default eps and group std >= 1/32, a r + b leaves GRPO unchanged to ~1e-4."""

    @SETTINGS
    @given(batch=batches("grpo"), a=st.floats(0.5, 100.0), b=st.floats(-10.0, 10.0))
    def check(batch, a, b):
        rewards, ids, _, _ = batch
        moved = fade.advantages("grpo", a * rewards + b, ids)
        ref = fade.advantages("grpo", rewards, ids)
        torch.testing.assert_close(moved, ref, rtol=1e-3, atol=1e-3)

    check()


def test_grpo_without_scale_is_shift_invariant_and_scale_equivariant():
    @SETTINGS
    @given(batch=batches("grpo"), a=st.floats(0.01, 100.0), b=st.floats(-10.0, 10.0))
    def check(batch, a, b):
        rewards, ids, _, _ = batch
        moved = fade.advantages("grpo", a * rewards + b, ids, scale="none")
        ref = fade.advantages("grpo", rewards, ids, scale="none")
        torch.testing.assert_close(moved, a * ref, rtol=1e-9, atol=1e-9 * max(1.0, a))

    check()


# -- numbers in, numbers out -------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_finite_inputs_give_finite_outputs_of_same_dtype_and_shape(name):
    @SETTINGS
    @given(batch=batches(name, wide=True))
    def check(batch):
        rewards, ids, inputs, _ = batch
        for dtype in DTYPES:
            r = torch.as_tensor(rewards, dtype=dtype)
            a = run(name, rewards, ids, inputs, dtype)
            assert a.dtype == r.dtype
            assert a.shape == r.shape
            assert bool(torch.isfinite(a).all()), (dtype, rewards, ids, a)

    check()


@pytest.mark.parametrize("name", NAMES)
def test_float32_agrees_with_float64(name):
    @SETTINGS
    @given(batch=batches(name))
    def check(batch):
        rewards, ids, inputs, _ = batch
        a64 = run(name, rewards, ids, inputs, torch.float64)
        a32 = run(name, rewards, ids, inputs, torch.float32)
        assert a32.dtype == torch.float32
        torch.testing.assert_close(a32.to(torch.float64), a64, **tol(torch.float32, a64))

    check()


def test_integer_and_bool_rewards_become_the_default_float_dtype():
    a = fade.advantages("grpo", torch.tensor([0, 1, 1, 0]), 2)
    b = fade.advantages("grpo", torch.tensor([False, True, True, False]), 2)
    assert a.dtype == b.dtype == torch.get_default_dtype()
    torch.testing.assert_close(a, b)


# -- forms of the grouping ---------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_int_group_size_equals_consecutive_ids_and_strided_rewards(name):
    @SETTINGS
    @given(batch=batches(name, equal_sizes=True))
    def check(batch):
        rewards, _, inputs, sizes = batch
        g = sizes[0]
        n = rewards.size
        a = run(name, rewards, g, inputs, torch.float64)
        b = run(name, rewards, torch.arange(n) // g, inputs, torch.float64)
        torch.testing.assert_close(a, b, **tol(torch.float64, a))
        # a strided view of the rewards (the reshape path) gives what its contiguous copy gives
        r = torch.as_tensor(np.stack([rewards, -rewards], axis=1))[:, 0]
        assert not r.is_contiguous()
        t = {k: torch.as_tensor(v) for k, v in inputs.items()}
        torch.testing.assert_close(fade.advantages(name, r, g, **t), a, rtol=0, atol=0)

    check()


@pytest.mark.parametrize("name", NAMES)
def test_string_and_other_id_forms_equal_integer_ids(name):
    @SETTINGS
    @given(batch=batches(name))
    def check(batch):
        rewards, ids, inputs, _ = batch
        uid = np.array([f"prompt-{i}" for i in ids])
        a = run(name, rewards, ids, inputs, torch.float64)
        b = run(name, rewards, uid, inputs, torch.float64)
        c = run(name, rewards, list(uid), inputs, torch.float64)
        torch.testing.assert_close(a, b, **tol(torch.float64, a))
        torch.testing.assert_close(a, c, **tol(torch.float64, a))
        # ids as a tensor, a numpy array or a list are the same grouping
        for same in (torch.as_tensor(ids), ids.tolist()):
            torch.testing.assert_close(run(name, rewards, same, inputs, torch.float64), a, rtol=0, atol=0)

    check()


# -- known numerical weakness ------------------------------------------------------------------


@pytest.mark.parametrize("value", [0.7, 0.3, 933.1])
@pytest.mark.parametrize("scale", ["group", "batch"])
def test_grpo_constant_float32_group_is_zero(value, scale):
    """The mean of 7 equal non-dyadic float32 values rounds off by an ulp; the advantage stays 0."""
    r = torch.full((7,), value, dtype=torch.float32)
    assert fade.advantages("grpo", r, 7, scale=scale).abs().max().item() == 0.0
    # the same constant group inside a ragged, shuffled batch with non-constant neighbours
    rr = torch.cat([r, torch.tensor([0.1, 0.9, 0.2, 0.8], dtype=torch.float32)])
    ids = torch.tensor([3] * 7 + [8, 8, 8, 8])
    perm = torch.randperm(11, generator=torch.Generator().manual_seed(0))
    a = fade.advantages("grpo", rr[perm], ids[perm])
    assert a[ids[perm] == 3].abs().max().item() == 0.0
    assert a[ids[perm] == 8].abs().min().item() > 0.1


@pytest.mark.parametrize("scale", ["group", "batch"])
def test_grpo_eps_zero_constant_group_is_finite_zero(scale):
    r = torch.tensor([1.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    rewards = r if scale == "group" else torch.ones(4, dtype=torch.float64)
    a = fade.advantages("grpo", rewards, 2, eps=0.0, scale=scale)
    assert bool(torch.isfinite(a).all()), a
    assert a[:2].abs().max().item() == 0.0
