"""Bad input raises ValueError saying what was wrong (the README's "Using it").

Every case is a ``pytest.raises(ValueError, match=...)`` on the part of the message that names
the problem. The last tests pin the one-rollout convention: a group with no peer gets 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fade
from fade.registry import spec

R = [1.0, 0.0, 1.0, 0.0]


# -- rewards -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rewards", "match"),
    [
        ([1.0, math.nan, 0.0, 1.0], r"rewards must be finite, got nan at position 1"),
        ([1.0, 0.0, math.inf, 1.0], r"rewards must be finite, got inf at position 2"),
        ([1.0, 0.0, -math.inf, 1.0], r"rewards must be finite"),
        ([[1.0, 0.0], [0.0, 1.0]], r"rewards must be 1-D .* got shape \(2, 2\)"),
        ([], r"rewards is empty"),
        (["a", "b"], r"rewards must be"),
    ],
    ids=["nan", "inf", "-inf", "2d", "empty", "strings"],
)
def test_bad_rewards(rewards, match):
    with pytest.raises(ValueError, match=match):
        fade.advantages("grpo", rewards, 2 if len(rewards) != 2 else 1)


def test_complex_rewards():
    with pytest.raises(ValueError, match="real numbers"):
        fade.advantages("grpo", torch.tensor([1 + 1j, 0j]), 2)


@pytest.mark.parametrize("name", ["psr", "maxrl", "power", "nsr", "w_reinforce"])
@pytest.mark.parametrize("bad", [-0.5, 1.5])
def test_rewards_outside_unit_interval(name, bad):
    with pytest.raises(ValueError, match=rf"{name}.* expects rewards in \[0, 1\]"):
        fade.advantages(name, [bad, 0.0, 1.0, 0.5], 2)


@pytest.mark.parametrize("name", ["passk", "pkpo"])
def test_non_binary_rewards_for_passk(name):
    with pytest.raises(ValueError, match=r"expects binary rewards \(0 or 1\), got 0.5"):
        fade.advantages(name, [1.0, 0.5, 0.0, 1.0], 4, k=2)


# -- groups ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "match"),
    [
        ([0, 0, 1], r"got 3 group ids for 4 rollouts"),
        (torch.tensor([0, 0, 1, 1, 2]), r"got 5 group ids for 4 rollouts"),
        ([0.0, 0.0, 1.0, 1.0], r"group ids must be integers, got dtype float64"),
        (torch.tensor([0.0, 0.0, 1.0, 1.0]), r"group ids must be integers"),
        ([True, True, False, False], r"group ids must be integers"),
        (np.zeros((2, 2), dtype=np.int64), r"groups must be 1-D"),
        (3, r"4 rollouts cannot be split into consecutive groups of 3"),
        (0, r"group size must be a positive integer, got 0"),
        (-2, r"group size must be a positive integer"),
        (True, r"groups must be an int group size or one id per rollout"),
    ],
    ids=["short", "long", "float-list", "float-tensor", "bool", "2d", "not-multiple", "G=0", "G<0", "bool-G"],
)
def test_bad_groups(groups, match):
    with pytest.raises(ValueError, match=match):
        fade.advantages("grpo", R, groups)


@pytest.mark.parametrize("name", ["passk", "pkpo"])
def test_k_larger_than_group(name):
    with pytest.raises(ValueError, match=rf"{name} with k=5 needs every group to have at least k rollouts"):
        fade.advantages(name, R, 4, k=5)
    with pytest.raises(ValueError, match=r"smallest group has 1"):
        fade.advantages(name, R, [0, 0, 0, 1], k=2)


def test_grpo_passk_needs_two_rollouts_per_group():
    with pytest.raises(ValueError, match=r"at least k rollouts; smallest group has 1"):
        fade.advantages("grpo_passk", R, [0, 0, 0, 1])


# -- per-rollout inputs ------------------------------------------------------------------------


def test_missing_lengths_for_opo():
    with pytest.raises(ValueError, match=r"'opo' needs lengths="):
        fade.advantages("opo", R, 2)


def test_missing_baseline_rewards_for_remax():
    with pytest.raises(ValueError, match=r"'remax' needs baseline_rewards="):
        fade.advantages("remax", R, 2)


@pytest.mark.parametrize(
    ("lengths", "match"),
    [
        ([1, 2, 3], r"lengths must have one value per rollout \(4\)"),
        ([1, 2, -3, 4], r"lengths must be non-negative, got minimum -3"),
        ([0, 0, 1, 4], r"the group of rollout 0 has total length 0"),
        ([1, 2, math.nan, 4], r"lengths must be finite"),
    ],
)
def test_bad_lengths(lengths, match):
    with pytest.raises(ValueError, match=match):
        fade.advantages("opo", R, 2, lengths=lengths)


def test_bad_baseline_rewards():
    with pytest.raises(ValueError, match=r"baseline_rewards must be finite"):
        fade.advantages("remax", R, 2, baseline_rewards=[0.0, math.inf, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"baseline_rewards must have one value per rollout"):
        fade.advantages("remax", R, 2, baseline_rewards=[0.0, 1.0])


def test_whitening_needs_two_tokens():
    with pytest.raises(ValueError, match=r"whitening needs more than one token"):
        fade.advantages("reinforce_pp", [1.0], 1)


# -- names and parameters ----------------------------------------------------------------------


def test_unknown_estimator_lists_available_names():
    with pytest.raises(ValueError, match=r"unknown estimator 'gpro'; available: .*dr_grpo.*grpo") as info:
        fade.estimator("gpro")
    for name in fade.available():
        assert name in str(info.value)
    with pytest.raises(ValueError, match=r"unknown estimator"):
        fade.advantages("nope", R, 2)


def test_unknown_parameter_lists_accepted_ones():
    with pytest.raises(ValueError, match=r"'grpo' got unknown parameter\(s\) \['epsilon'\]; accepted .*eps=1e-06"):
        fade.estimator("grpo", epsilon=1e-6)
    with pytest.raises(ValueError, match=r"unknown parameter"):
        fade.mass_profile("dr_grpo", group_size=4, alpha=2.0)


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("asym_grpo", {"delta": 0}, r"delta must be > 0"),
        ("asym_grpo", {"delta": -1.0}, r"delta must be > 0"),
        ("asym_grpo", {"delta": math.nan}, r"delta must be a finite number"),
        ("power", {"alpha": -1}, r"alpha must be >= 0"),
        ("power", {"alpha": math.inf}, r"alpha must be a finite number"),
        ("power", {"alpha": "2"}, r"alpha must be a finite number"),
        ("passk", {"k": 0}, r"k must be a positive integer, got 0"),
        ("passk", {"k": 2.0}, r"k must be a positive integer"),
        ("pkpo", {"k": -3}, r"k must be a positive integer"),
        ("pkpo", {"k": True}, r"k must be a positive integer"),
        ("logmeanexp", {"beta": 0}, r"beta must be non-zero"),
        ("logmeanexp", {"beta": math.nan}, r"beta must be a finite number"),
        ("grpo", {"eps": -1}, r"eps must be >= 0"),
        ("grpo", {"std": "x"}, r"std must be 'unbiased' or 'population', got 'x'"),
        ("grpo", {"scale": "token"}, r"scale must be 'group', 'batch' or 'none'"),
        ("grpo_passk", {"norm_by_std": 1}, r"norm_by_std must be True or False"),
        ("grpo_passk", {"eps": -1e-6}, r"eps must be >= 0"),
        ("reinforce_pp", {"eps": -1.0}, r"eps must be >= 0"),
        ("w_reinforce", {"lam": -0.1}, r"lam must be >= 0"),
    ],
)
def test_bad_parameter_values(name, params, match):
    with pytest.raises(ValueError, match=match):
        fade.estimator(name, **params)


def test_mass_profile_bad_group_size():
    for g in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match=r"group_size must be an integer >= 2"):
            fade.mass_profile("grpo", group_size=g)


# -- decompose ---------------------------------------------------------------------------------


def test_decompose_mismatched_lengths():
    with pytest.raises(ValueError, match=r"got 3 advantages for 4 rewards"):
        fade.decompose([0.1, 0.2, 0.3], R, 2)


def test_decompose_2d_advantages():
    with pytest.raises(ValueError, match=r"advantages must be 1-D .* got shape \(4, 3\)"):
        fade.decompose(torch.zeros(4, 3), R, 2)


def test_decompose_nan_advantages():
    with pytest.raises(ValueError, match=r"advantages must be finite, got nan at position 2"):
        fade.decompose([0.1, 0.2, math.nan, 0.3], R, 2)


def test_decompose_bad_rewards_and_groups():
    with pytest.raises(ValueError, match=r"rewards must be finite"):
        fade.decompose([0.0] * 4, [1.0, math.nan, 0.0, 0.0], 2)
    with pytest.raises(ValueError, match=r"cannot be split into consecutive groups of 3"):
        fade.decompose([0.0] * 4, R, 3)


# -- pass_at_k ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        (5, 2, 6, r"k=6 exceeds the number of samples n=5"),
        (5, 6, 2, r"c must be at most n, got c=6 with n=5"),
        (5, -1, 2, r"c must be non-negative"),
        (-5, 0, 2, r"n must be non-negative"),
        (5, 2, 0, r"k must be a positive integer, got 0"),
        (5, 2, 1.5, r"k must be a positive integer"),
        (5, 2.5, 1, r"c must hold whole numbers"),
        (5.0, math.nan, 1, r"c must hold whole numbers"),
        ("5", 2, 1, r"n must be integers"),
        (np.array([5, 3]), np.array([1, 4]), 2, r"c must be at most n, got c=4 with n=3"),
    ],
)
def test_pass_at_k_bad_input(n, c, k, match):
    with pytest.raises(ValueError, match=match):
        fade.pass_at_k(n, c, k)


# -- observe / state ---------------------------------------------------------------------------


def test_stateless_observe_validates_signals():
    est = fade.estimator("grpo")
    est.observe(entropy=1.2)  # a no-op
    with pytest.raises(ValueError, match=r"entropy must be"):
        est.observe(entropy=math.nan)
    with pytest.raises(ValueError, match=r"entropy must be"):
        est.observe(entropy=-0.1)
    with pytest.raises(ValueError, match=r"unknown training signal 'temperature'"):
        est.observe(temperature=1.0)
    with pytest.raises(ValueError, match=r"stateless"):
        est.load_state_dict({"p_hat": 0.5})


# -- the one-rollout convention ----------------------------------------------------------------


def _kwargs(name: str, n: int) -> dict:
    out = {}
    if "lengths" in spec(name).needs:
        out["lengths"] = np.arange(1, n + 1)
    if "baseline_rewards" in spec(name).needs:
        out["baseline_rewards"] = np.zeros(n)
    if "k" in spec(name).defaults:
        out["k"] = 1
    return out


CENTRED = [n for n in fade.available() if spec(n).centred and not n.startswith("fade")]


@pytest.mark.parametrize("name", CENTRED)
def test_one_rollout_group_gets_zero_from_every_centred_estimator(name):
    r = np.array([1.0, 1.0, 0.0, 1.0, 0.0])
    ids = np.array([7, 3, 3, 9, 9])  # group 7 has one rollout
    a = fade.advantages(name, r, ids, **_kwargs(name, r.size))
    assert a[0].item() == 0.0
    # a batch of lone rollouts gets all zeros
    lone = fade.advantages(name, [1.0, 0.0, 1.0], [0, 1, 2], **_kwargs(name, 3))
    assert torch.equal(lone, torch.zeros(3, dtype=lone.dtype))


@pytest.mark.parametrize("name", ["opo"])
def test_one_rollout_group_gets_zero_from_opo(name):
    """opo is not flagged centred (length-weighted baseline), but a lone rollout is its own baseline."""
    a = fade.advantages(name, [1.0, 1.0, 0.0], [5, 6, 6], lengths=[4, 2, 3])
    assert a[0].item() == 0.0


# -- issue 14: ids of mixed types, meta tensors, numpy inputs (items 4 and 9) -------------------


@pytest.mark.parametrize(
    ("groups", "match"),
    [
        (["1", 1, "a", "a"], r"integers or strings of one type, got a mix of \['int', 'str'\]"),
        ([1, True, 0, 0], r"group ids must be integers or strings, got a bool"),
        (np.array([1, True, 0, 0], dtype=object), r"got a bool"),
        (np.array(["1", 1, "a", "a"], dtype=object), r"of one type"),
        (np.array([1, 1.0, 0, 0], dtype=object), r"of one type, got a mix of \['float', 'int'\]"),
        (("a", b"a", "b", "b"), r"of one type"),
    ],
    ids=["str-int", "int-bool", "object-int-bool", "object-str-int", "object-int-float", "str-bytes"],
)
def test_mixed_id_types_are_refused(groups, match):
    """np.asarray(["1", 1]) makes both "1", np.asarray([1, True]) both 1: groups would merge."""
    with pytest.raises(ValueError, match=match):
        fade.advantages("grpo", R, groups)
    with pytest.raises(ValueError, match=match):
        fade.decompose([0.5, -0.5, 0.5, -0.5], R, groups)


def test_meta_tensors_are_refused():
    with pytest.raises(ValueError, match=r"rewards is a meta tensor"):
        fade.advantages("grpo", torch.empty(4, device="meta"), 2)
    with pytest.raises(ValueError, match=r"groups is a meta tensor"):
        fade.advantages("grpo", R, torch.empty(4, dtype=torch.int64, device="meta"))
    with pytest.raises(ValueError, match=r"advantages is a meta tensor"):
        fade.decompose(torch.empty(4, device="meta"), R, 2)
    with pytest.raises(ValueError, match=r"lengths is a meta tensor"):
        fade.advantages("opo", R, 2, lengths=torch.empty(4, device="meta"))


def test_decompose_takes_string_ids_like_the_estimators():
    ids = ["b", "a", "b", "a"]
    a = fade.advantages("grpo", R, ids)
    assert fade.decompose(a, R, ids) == fade.decompose(a, R, [1, 0, 1, 0])
    with pytest.raises(ValueError, match=r"advantages must be a 1-D array of numbers"):
        fade.decompose(["x", "y", "z", "w"], R, ids)


def test_numpy_arrays_with_negative_strides_are_accepted():
    r = np.arange(8.0)[::-1]
    ids = np.arange(8)[::-1] // 2
    lengths = np.arange(1.0, 9.0)[::-1]
    want = fade.advantages("grpo", r.copy(), ids.copy())
    assert torch.equal(fade.advantages("grpo", r, ids), want)
    assert torch.equal(
        fade.advantages("opo", r, ids, lengths=lengths),
        fade.advantages("opo", r.copy(), ids.copy(), lengths=lengths.copy()),
    )
    rep = fade.decompose(want.numpy()[::-1], r[::-1], ids[::-1])
    assert rep == fade.decompose(want.numpy()[::-1].copy(), r[::-1].copy(), ids[::-1].copy())


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("passk", {"k": np.int64(2)}),
        ("pkpo", {"k": np.int32(2)}),
        ("power", {"alpha": np.float32(0.5)}),
        ("asym_grpo", {"delta": np.float64(0.5)}),
        ("grpo", {"eps": np.int64(0)}),
        ("grpo_passk", {"norm_by_std": np.bool_(False)}),
        ("logmeanexp", {"beta": np.float16(2)}),
        ("w_reinforce", {"lam": np.float32(0.25)}),
        ("fade", {"delta_min": np.float32(0.5), "ema": np.float64(0.1), "alpha_max": np.int64(2)}),
        ("fade_decay", {"total_steps": np.int64(10)}),
    ],
)
def test_numpy_scalars_are_accepted_as_parameters(name, params):
    est = fade.estimator(name, **params)
    plain = fade.estimator(name, **{k: v.item() for k, v in params.items()})
    assert est.params == plain.params and all(type(est.params[k]) is type(plain.params[k]) for k in params)
    assert torch.equal(est(R, 4), plain(R, 4))


def test_huge_python_ints_are_value_errors():
    with pytest.raises(ValueError, match=r"entropy must be a number"):
        fade.estimator("grpo").observe(entropy=10**400)
    with pytest.raises(ValueError, match=r"alpha must be a finite number"):
        fade.estimator("power", alpha=10**400)
