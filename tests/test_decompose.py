"""Batch diagnostics of advantages (docs/method.md, section 1), on hand-made batches with known answers.

positive_mass = (1/N) sum max(A, 0); negative_mass = (1/N) sum max(-A, 0);
sign_balance = positive / (positive + negative); difficulty = sum |A_i| p_g(i) / sum |A_i|;
effective_sample_fraction = (sum |A|)^2 / (N sum A^2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fade
from fade.mass import canonical_batch


def test_hand_made_batch():
    # group 0: rewards 1, 0 (p = 1/2); group 1: rewards 1, 1, 1, 0 (p = 3/4)
    rewards = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    groups = [0, 0, 1, 1, 1, 1]
    adv = [0.5, -0.5, 0.25, 0.25, 0.25, -0.75]
    rep = fade.decompose(adv, rewards, groups)
    assert rep.positive_mass == pytest.approx(1.25 / 6)
    assert rep.negative_mass == pytest.approx(1.25 / 6)
    assert rep.total_mass == pytest.approx(2.5 / 6)
    assert rep.sign_balance == pytest.approx(0.5)
    # |A| weights: group 0 has 1.0 at p = 1/2, group 1 has 1.5 at p = 3/4
    assert rep.difficulty == pytest.approx((1.0 * 0.5 + 1.5 * 0.75) / 2.5)
    sum_sq = 0.25 + 0.25 + 3 * 0.0625 + 0.5625
    assert rep.effective_sample_fraction == pytest.approx(2.5**2 / (6 * sum_sq))
    assert rep.num_rollouts == 6 and rep.num_groups == 2
    assert set(rep.to_dict()) >= {"positive_mass", "negative_mass", "sign_balance", "difficulty",
                                  "effective_sample_fraction"}


def test_failure_biased_batch():
    rewards = [1.0, 0.0, 0.0, 0.0]  # one group, p = 1/4
    adv = [0.1, -1.0, -1.0, -1.0]
    rep = fade.decompose(adv, rewards, 4)
    assert rep.positive_mass == pytest.approx(0.1 / 4)
    assert rep.negative_mass == pytest.approx(3.0 / 4)
    assert rep.sign_balance == pytest.approx(0.1 / 3.1)
    assert rep.difficulty == pytest.approx(0.25)
    assert rep.effective_sample_fraction == pytest.approx(3.1**2 / (4 * 3.01))


def test_non_binary_rewards_use_group_mean_reward():
    rewards = [0.2, 0.4, 0.9, 0.9]
    groups = ["x", "x", "y", "y"]
    adv = [1.0, 1.0, 0.0, -2.0]
    rep = fade.decompose(adv, rewards, groups)
    assert rep.difficulty == pytest.approx((2.0 * 0.3 + 2.0 * 0.9) / 4.0)
    assert rep.sign_balance == pytest.approx(0.5)
    assert rep.effective_sample_fraction == pytest.approx(16 / (4 * 6))


def test_one_rollout_carries_everything():
    rep = fade.decompose([0.0, 0.0, 3.0, 0.0], [0.0, 0.0, 1.0, 0.0], 2)
    assert rep.effective_sample_fraction == pytest.approx(0.25)  # 1 of 4 rollouts
    assert rep.sign_balance == 1.0
    assert rep.difficulty == pytest.approx(0.5)


def test_uniform_magnitudes_have_full_effective_sample():
    rep = fade.decompose([1.0, -1.0, -1.0, 1.0], [1.0, 0.0, 0.0, 1.0], 2)
    assert rep.effective_sample_fraction == pytest.approx(1.0)


def test_zero_advantages():
    rep = fade.decompose([0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 1.0], 2)
    assert rep.positive_mass == 0.0 and rep.negative_mass == 0.0 and rep.total_mass == 0.0
    assert math.isnan(rep.sign_balance)
    assert math.isnan(rep.difficulty)
    assert rep.effective_sample_fraction == 0.0


def test_float32_and_tensor_inputs():
    a = torch.tensor([0.5, -0.5, 0.25, -0.25], dtype=torch.float32)
    r = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float32)
    rep = fade.decompose(a, r, 2)
    ref = fade.decompose(a.double().numpy(), r.double().numpy(), np.array([0, 0, 1, 1]))
    assert rep.to_dict() == pytest.approx(ref.to_dict())


@settings(max_examples=60, deadline=None)
@given(
    adv=st.lists(
        st.one_of(st.just(0.0), st.floats(-1e3, -1e-6), st.floats(1e-6, 1e3)), min_size=1, max_size=40
    ),
    data=st.data(),
)
def test_ranges(adv, data):
    n = len(adv)
    rewards = data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0]), min_size=n, max_size=n))
    ids = data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    rep = fade.decompose(adv, rewards, ids)
    assert 0.0 <= rep.effective_sample_fraction <= 1.0
    assert rep.positive_mass >= 0 and rep.negative_mass >= 0
    assert rep.total_mass == pytest.approx(rep.positive_mass + rep.negative_mass)
    if rep.total_mass > 0:
        assert 0.0 <= rep.sign_balance <= 1.0
        assert min(rewards) - 1e-12 <= rep.difficulty <= max(rewards) + 1e-12
        mags = np.abs(np.array(adv))
        assert rep.effective_sample_fraction == pytest.approx(
            min(1.0, mags.sum() ** 2 / (n * (mags**2).sum())), rel=1e-9
        )
    # a permutation of the batch changes nothing
    perm = np.random.default_rng(n).permutation(n)
    again = fade.decompose(np.array(adv)[perm], np.array(rewards)[perm], np.array(ids)[perm])
    assert again.to_dict() == pytest.approx(rep.to_dict(), nan_ok=True)


@pytest.mark.parametrize("g", [2, 4, 8, 16])
@pytest.mark.parametrize(
    ("name", "params"),
    [("dr_grpo", {}), ("grpo", {}), ("maxrl", {}), ("power", {"alpha": 3.0}), ("asym_grpo", {"delta": 0.3}),
     ("psr", {}), ("nsr", {}), ("w_reinforce", {"lam": 0.1}), ("passk", {"k": 2}), ("logmeanexp", {"beta": 2.0})],
)
def test_mass_profile_scalars_equal_decompose_on_canonical_batch(name, params, g):
    prof = fade.mass_profile(name, group_size=g, **params)
    rewards, ids = canonical_batch(g)
    assert rewards.numel() == g * (g + 1)
    # the canonical batch holds group k with k successes
    assert torch.equal(rewards.view(g + 1, g).sum(1), torch.arange(g + 1, dtype=torch.float64))
    rep = fade.decompose(fade.advantages(name, rewards, ids, **params), rewards, ids)
    for key in ("sign_balance", "difficulty", "effective_sample_fraction"):
        assert getattr(prof, key) == pytest.approx(getattr(rep, key), rel=1e-12, nan_ok=True), key
    # and the profile's masses average to the batch masses (each group has G rollouts)
    assert float(prof.positive.sum()) / (g + 1) == pytest.approx(rep.positive_mass, rel=1e-12, abs=1e-15)
    assert float(prof.negative.sum()) / (g + 1) == pytest.approx(rep.negative_mass, rel=1e-12, abs=1e-15)


def test_balanced_estimators_profile_sign_balance_is_half():
    for name in ("dr_grpo", "grpo", "rloo", "maxrl", "power"):
        assert fade.mass_profile(name, group_size=8).sign_balance == pytest.approx(0.5)
    assert fade.mass_profile("asym_grpo", group_size=8, delta=0.5).sign_balance == pytest.approx(1 / 3)
    assert fade.mass_profile("psr", group_size=8).sign_balance == 1.0
    assert fade.mass_profile("nsr", group_size=8).sign_balance == 0.0


def test_power_focus_lowers_difficulty():
    d = [fade.mass_profile("power", group_size=16, alpha=a).difficulty for a in (1.0, 2.0, 3.0)]
    assert d[0] == pytest.approx(0.5)
    assert d[0] > d[1] > d[2]


@pytest.mark.parametrize(
    "scale",
    [
        1e-3,
        1e3,
        1e-170,  # A^2 would underflow to 0
        1e170,  # (sum |A|)^2 would overflow
        1e-300,
        1e300,
    ],
)
def test_diagnostics_are_scale_free(scale):
    """sign_balance, difficulty and ESF do not change when every advantage is multiplied by c > 0."""
    adv = np.array([0.5, -0.5, 0.25, 0.25, 0.25, -0.75])
    rewards, groups = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0], [0, 0, 1, 1, 1, 1]
    ref = fade.decompose(adv, rewards, groups)
    rep = fade.decompose(adv * scale, rewards, groups)
    for key in ("sign_balance", "difficulty", "effective_sample_fraction"):
        assert getattr(rep, key) == pytest.approx(getattr(ref, key), rel=1e-12), key


def test_tiny_single_advantage_has_full_effective_sample():
    assert fade.decompose([8.167250084814686e-179], [0.0], 1).effective_sample_fraction == 1.0


# -- the logged diagnostics of an estimator's call: one definition for trainer and engines -------


def test_batch_diagnostics_measure_the_rewards_as_the_estimator_reads_them():
    """With a success threshold the difficulty is the mass-weighted success rate of the groups, not
    the mean of the raw scores; with a reward range, the mean of the mapped rewards."""
    from fade.mass import DIAGNOSTICS, batch_diagnostics

    scores = torch.tensor([0.9, 0.2, 0.2, 0.6, 0.9, 0.9, 0.2, 0.2])
    groups = [0, 0, 0, 0, 1, 1, 1, 1]
    successes = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    est = fade.estimator("maxrl", success_threshold=0.5)
    adv = est(scores, groups)
    got = batch_diagnostics(est, adv, scores, groups)
    assert list(got) == list(DIAGNOSTICS)
    assert got == fade.decompose(adv, successes, groups).diagnostics()
    # Each group has solve rate 1/2 and the same mass: a raw-score mean would say 0.475 and 0.55.
    assert got["difficulty"] == pytest.approx(0.5, abs=1e-12)
    assert fade.decompose(adv, scores, groups).difficulty != pytest.approx(0.5)
    mapped = fade.estimator("maxrl", reward_min=0.0, reward_max=2.0)
    adv = mapped(scores, groups)
    assert batch_diagnostics(mapped, adv, scores, groups) == fade.decompose(adv, scores / 2, groups).diagnostics()
    # An estimator that takes any reward reads them as they are.
    grpo = fade.estimator("grpo")
    adv = grpo(scores, groups)
    assert batch_diagnostics(grpo, adv, scores, groups) == fade.decompose(adv, scores, groups).diagnostics()


def test_batch_diagnostics_take_what_fade_measured_and_nothing_from_nothing():
    from fade.mass import batch_diagnostics

    est = fade.estimator("fade", success_threshold=0.5, alpha=2.0, delta=0.5)
    scores = torch.tensor([0.9, 0.2, 0.2, 0.6, 0.9, 0.9, 0.2, 0.2], dtype=torch.float64)
    adv = est(scores, 4)
    got = batch_diagnostics(est, adv, scores, 4)
    assert got == {key: est.last[key] for key in got}
    assert got == fade.decompose(adv, (scores >= 0.5).double(), 4).diagnostics()
    adv, record = est.peek(scores.flip(0), 4)
    assert batch_diagnostics(est, adv, scores.flip(0), 4, record) == {key: record[key] for key in got}
    assert batch_diagnostics(fade.estimator("grpo"), torch.zeros(0), torch.zeros(0), 1) == {}
