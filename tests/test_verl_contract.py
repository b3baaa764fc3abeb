"""The drop-in contract with verl 0.9.1: fade's counterpart of a verl estimator gives verl's numbers.

A verl user who swaps ``algorithm.adv_estimator=<verl name>`` for fade's counterpart
(``fade.integrations.verl.COUNTERPARTS``: ``grpo -> fade_grpo``, ``reinforce_plus_plus ->
fade_reinforce_pp``, ...) and changes nothing else gets verl's own advantages and returns. Every
test here runs verl's installed estimator and fade's side by side, through verl's own
``compute_advantage`` on a ``DataProto`` with verl's algorithm config (or, for the keyword and
positional cases, through the registered functions as verl's own tests call them), and holds them
to verl's own test tolerance (rtol 1e-5, atol 1e-6), for every verl setting the estimator reads:
``norm_adv_by_std_in_grpo``, ``gamma``, ``epsilon``, one-rollout groups, multi-token rewards,
holes in the mask and empty responses, multi-output agent-loop sessions, calls without ``index``,
and every config form. Where verl itself refuses an input, fade refuses it too. A setting fade
cannot honour is refused with one line naming it and the estimator. The one difference, verl's
float residue on groups whose rewards are all equal (fade gives exactly 0), has its own test.

Each comparison is recorded by the ``parity`` fixture (tests/conftest.py); ``python
benchmarks/engine_parity.py`` turns the records into docs/engines/parity.md.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

import fade  # noqa: E402
import fade.integrations.verl as fv  # noqa: E402

PAIRS = [(cp.verl, cp.name) for cp in fv.COUNTERPARTS.values()]
VERL_FN = {v: (core_algos.compute_grpo_outcome_advantage if v == "grpo" else core_algos.get_adv_estimator_fn(v))
           for v, _ in PAIRS}


@pytest.fixture(autouse=True)
def fresh_estimators():
    fv.reset_estimators()
    yield
    fv.reset_estimators()


# -- batches and configs -----------------------------------------------------------------------


def make_data(tlr: torch.Tensor, mask: torch.Tensor, uids, baselines: torch.Tensor | None = None) -> DataProto:
    tensors = {"token_level_rewards": tlr, "response_mask": mask}
    if baselines is not None:
        tensors["reward_baselines"] = baselines
    non_tensors = {} if uids is None else {"uid": np.asarray(uids, dtype=object)}
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)


def batch(seed: int, *, singletons: bool = False, spread: bool = False, holes: bool = False, empty: bool = False,
          binary: bool = True) -> dict:
    """A shuffled ragged batch with uuid-like string uids and float32 token rewards.

    ``singletons``: some prompts have one rollout. ``spread``: rewards on several tokens (a
    multi-turn reward), else one outcome reward on the last response token. ``holes``: response
    masks with observation spans inside them. ``empty``: a few responses with no token at all
    (never a whole group). Rewards are dyadic, so sums over tokens are exact and groups either tie
    exactly or differ by at least 1/4.
    """
    rng = np.random.default_rng(seed)
    sizes = list(rng.integers(2, 7, size=rng.integers(2, 6)))
    if singletons:
        sizes += [1] * int(rng.integers(1, 4))
    uids = np.repeat(np.array([f"{rng.integers(1 << 40):x}-{i}" for i in range(len(sizes))], dtype=object), sizes)
    n = uids.size
    perm = rng.permutation(n)
    uids = uids[perm]
    width = int(rng.integers(3, 9))
    lengths = rng.integers(1, width + 1, size=n)
    mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
    if holes:
        mask &= rng.random((n, width)) > 0.3
        mask[np.arange(n), lengths - 1] = 1
    if empty:
        # empty responses, each in a group that keeps a non-empty one
        first = {}
        for i, u in enumerate(uids):
            first.setdefault(u, i)
        candidates = [i for i in range(n) if first[uids[i]] != i]
        for i in rng.choice(candidates, size=min(2, len(candidates)), replace=False):
            mask[i] = 0
    if spread:
        tlr = rng.integers(-2, 5, size=(n, width)) / 4 * (rng.random((n, width)) < 0.5)
    else:
        tlr = np.zeros((n, width))
        values = rng.integers(0, 2, size=n) if binary else rng.integers(-4, 9, size=n) / 4
        tlr[np.arange(n), np.maximum(lengths - 1, 0)] = values
    baselines = torch.as_tensor(rng.integers(0, 2, size=n), dtype=torch.float32)
    return {"tlr": torch.as_tensor(tlr, dtype=torch.float32), "mask": torch.as_tensor(mask), "uids": uids,
            "baselines": baselines}


def algorithm(form: str = "dictconfig", **values):
    """verl's algorithm config in one of the forms verl's callers pass."""
    cfg = {"adv_estimator": "grpo", "gamma": 1.0, "lam": 1.0, "norm_adv_by_std_in_grpo": True,
           "use_kl_in_reward": False, **values}
    if form == "dictconfig":
        return OmegaConf.create(cfg)
    if form == "dict":
        return cfg
    if form == "namespace":
        return types.SimpleNamespace(**cfg)
    if form == "algoconfig":
        return AlgoConfig(**cfg)
    raise ValueError(form)


def run(name: str, b: dict, config, *, uids=True) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's compute_advantage on a fresh DataProto, as verl's trainers call it."""
    cp = fv.COUNTERPARTS.get(name)
    remax = name == "remax" or (cp is not None and cp.verl == "remax")
    data = make_data(
        b["tlr"].clone(), b["mask"].clone(), b["uids"] if uids else None, b["baselines"] if remax else None
    )
    norm = fv.setting(config, "norm_adv_by_std_in_grpo", True)
    out = compute_advantage(data, adv_estimator=name, norm_adv_by_std_in_grpo=norm, config=config)
    return out.batch["advantages"], out.batch["returns"]


def side_by_side(parity, theirs: str, ours: str, b: dict, config, setting: str, **kw) -> torch.Tensor:
    adv_v, ret_v = run(theirs, b, config, **kw)
    adv_f, ret_f = run(ours, b, copy.deepcopy(config), **kw)
    parity("verl", theirs, ours, setting, adv_f, adv_v)
    parity("verl", theirs, ours, setting, ret_f, ret_v)
    return adv_f


def both_refuse(theirs: Callable[[], object], ours: Callable[[], object]) -> str:
    """verl refuses the input (an exception, or NaN where it divides 0 by 0) and fade refuses it with a ValueError."""
    try:
        out = theirs()
    except Exception as exc:  # verl's refusals are ValueError, TypeError, KeyError, AssertionError, AttributeError
        refused = type(exc).__name__
    else:
        adv = out[0] if isinstance(out, tuple) else out
        assert not bool(torch.isfinite(adv).all()), "verl accepted the input"
        refused = "NaN"
    with pytest.raises(ValueError):
        ours()
    return refused


# -- the cases of the contract -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_outcome_rewards(parity, theirs, ours, seed):
    side_by_side(parity, theirs, ours, batch(seed, binary=seed != 1), algorithm(), "outcome rewards")


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_norm_adv_by_std_in_grpo_false(parity, theirs, ours):
    """Dr. GRPO as verl users run it; estimators that do not read the setting are unchanged by it.
    verl's grpo_vectorized is called by compute_advantage without it and divides by the std anyway:
    fade refuses the setting there rather than ignore it."""
    b, config = batch(4, binary=False), algorithm(norm_adv_by_std_in_grpo=False)
    if theirs == "grpo_vectorized":
        adv_v, _ = run(theirs, b, config)
        torch.testing.assert_close(adv_v, run(theirs, b, algorithm())[0], rtol=0, atol=0)  # verl ignores it
        with pytest.raises(ValueError, match=r"^fade_grpo_vectorized: algorithm.norm_adv_by_std_in_grpo=False is not "
                                             r"read by verl's grpo_vectorized"):
            run(ours, b, config)
        parity.refused("verl", theirs, ours, "norm_adv_by_std_in_grpo=False", "fade refuses; verl ignores it")
        return
    side_by_side(parity, theirs, ours, b, config, "norm_adv_by_std_in_grpo=False")


def test_norm_adv_by_std_in_grpo_false_on_the_issues_batch(parity):
    b = {"tlr": torch.tensor([[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]), "mask": torch.ones(3, 2, dtype=torch.int64),
         "uids": ["a", "a", "a"], "baselines": torch.zeros(3)}
    adv = side_by_side(parity, "grpo", "fade_grpo", b, algorithm(norm_adv_by_std_in_grpo=False),
                       "norm_adv_by_std_in_grpo=False")
    torch.testing.assert_close(adv[:, 0], torch.tensor([2 / 3, -1 / 3, -1 / 3]))
    adv = side_by_side(parity, "grpo_passk", "fade_grpo_passk", b, algorithm(norm_adv_by_std_in_grpo=False),
                       "norm_adv_by_std_in_grpo=False")
    torch.testing.assert_close(adv[:, 0], torch.tensor([1.0, 0.0, 0.0]))


@pytest.mark.parametrize("gamma", [0.9, 0.5])
@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_gamma(parity, theirs, ours, gamma):
    """REINFORCE++ discounts its per-token returns by gamma; verl's outcome estimators do not read it."""
    side_by_side(parity, theirs, ours, batch(5, spread=True, holes=True), algorithm(gamma=gamma), f"gamma={gamma}")


def _direct_args(theirs: str, b: dict, config) -> tuple[list, dict]:
    """verl's own positional order for its function ``theirs`` (as verl's tests call them)."""
    tlr, mask = b["tlr"].clone(), b["mask"].clone()
    if theirs == "reinforce_plus_plus":
        return [tlr, mask, config], {}
    if theirs == "remax":
        return [tlr, b["baselines"], mask, config], {}
    # grpo_passk asserts a config; the others accept one
    return [tlr, mask, b["uids"]], {"config": config}


@pytest.mark.parametrize("how", ["keyword", "positional"])
@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_epsilon(parity, theirs, ours, how):
    """verl's grpo, grpo_vectorized and grpo_passk divide by std + epsilon; its other functions take
    epsilon (or swallow it in **kwargs) and never read it, and fade refuses it there rather than ignore
    it. Positional: verl's order, with epsilon the fourth argument where verl's order has it
    (REINFORCE++ and ReMax take (rewards, mask, config) and (rewards, baselines, mask, config))."""
    b = batch(6, binary=False)
    config = algorithm()
    args, kwargs = _direct_args(theirs, b, config)
    with torch.no_grad():
        plain, _ = VERL_FN[theirs](*copy.deepcopy(args), **kwargs)
    eps = 1e-3
    setting = f"epsilon={eps} ({how})"
    if how == "positional" and theirs in ("reinforce_plus_plus", "remax"):
        # verl's order here has no epsilon: the positional call itself is the case
        with torch.no_grad():
            adv_f, ret_f = core_algos.get_adv_estimator_fn(ours)(*args, **kwargs)
            adv_v, ret_v = VERL_FN[theirs](*args, **kwargs)
        parity("verl", theirs, ours, setting, adv_f, adv_v)
        parity("verl", theirs, ours, setting, ret_f, ret_v)
        return
    if how == "keyword":
        kwargs["epsilon"] = eps
    else:
        args.insert(3, eps)
    with torch.no_grad():
        adv_v, ret_v = VERL_FN[theirs](*copy.deepcopy(args), **kwargs)
        if not fv.COUNTERPARTS[ours].epsilon:
            assert torch.equal(adv_v, plain)  # verl's function takes it and never reads it
            with pytest.raises(ValueError, match=rf"^{ours}: verl's {theirs} takes epsilon=0.001 but never reads it; "
                                                 "fade refuses it rather than ignore it"):
                core_algos.get_adv_estimator_fn(ours)(*args, **kwargs)
            parity.refused("verl", theirs, ours, setting, "fade refuses; verl ignores it")
            return
        adv_f, ret_f = core_algos.get_adv_estimator_fn(ours)(*args, **kwargs)
    parity("verl", theirs, ours, setting, adv_f, adv_v)
    parity("verl", theirs, ours, setting, ret_f, ret_v)
    assert (plain - adv_v).abs().max() > 1e-4  # the setting is read: it changes the numbers


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_one_rollout_groups(parity, theirs, ours):
    b = batch(7, singletons=True, binary=False)
    config = algorithm()
    if theirs == "grpo_passk":  # pass@k needs two rollouts per group, in verl and in fade
        assert both_refuse(lambda: run(theirs, b, config), lambda: run(ours, b, config)) == "ValueError"
        parity.refused("verl", theirs, ours, "one-rollout groups", "both refuse")
        return
    side_by_side(parity, theirs, ours, b, config, "one-rollout groups")


def test_one_rollout_groups_on_the_issues_batch(parity):
    b = {"tlr": torch.tensor([[1.0], [0.0], [1.0]]), "mask": torch.ones(3, 1, dtype=torch.int64),
         "uids": ["a", "b", "b"], "baselines": torch.zeros(3)}
    adv = side_by_side(parity, "grpo", "fade_grpo", b, algorithm(), "one-rollout groups")
    torch.testing.assert_close(adv[:, 0], torch.tensor([1 / (1 + 1e-6), -(0.5**0.5), 0.5**0.5]))
    # verl's two RLOOs disagree on a lone rollout: each has its counterpart
    rloo = side_by_side(parity, "rloo", "fade_rloo", b, algorithm(), "one-rollout groups")
    vectorized = side_by_side(parity, "rloo_vectorized", "fade_rloo_vectorized", b, algorithm(), "one-rollout groups")
    assert rloo[0, 0] == 1.0 and vectorized[0, 0] == 0.0


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_multi_token_rewards(parity, theirs, ours):
    """Rewards on several tokens of a response (verl's multi-turn rewards): outcome estimators score the
    sum, REINFORCE++ and ReMax give per-token returns."""
    side_by_side(parity, theirs, ours, batch(8, spread=True), algorithm(), "multi-token rewards")


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_mask_holes_and_empty_responses(parity, theirs, ours):
    b = batch(9, spread=True, holes=True, empty=True)
    assert bool((b["mask"].sum(-1) == 0).any())
    side_by_side(parity, theirs, ours, b, algorithm(), "mask holes, empty responses")


def test_an_empty_group_is_refused_where_verl_divides_0_by_0():
    b = batch(9)
    b["mask"][np.flatnonzero(b["uids"] == b["uids"][0])] = 0
    config = algorithm()
    assert both_refuse(lambda: run("opo", b, config), lambda: run("fade_opo", b, config)) == "NaN"
    with pytest.raises(ValueError, match=r"fade_opo \(fade's 'opo'\): .*has total length 0"):
        run("fade_opo", b, config)


def multi_output(seed: int) -> tuple[dict, list[str]]:
    """Rows of verl's multi-output agent loops: prompts x sessions x outputs, keyed {uid}_{session}_{index},
    in a shuffled order, with an empty output among them."""
    rng = np.random.default_rng(seed)
    keys, uids = [], []
    for _ in range(3):
        uid = f"{rng.integers(1 << 40):x}"
        for s in range(int(rng.integers(2, 5))):
            for i in range(int(rng.integers(1, 4))):
                keys.append(f"{uid}_{s}_{i}")
                uids.append(uid)
    n, width = len(keys), 4
    perm = rng.permutation(n)
    keys, uids = [keys[i] for i in perm], [uids[i] for i in perm]
    mask = (rng.random((n, width)) < 0.8).astype(np.int64)
    mask[:, 0] = 1
    mask[int(rng.integers(n))] = 0
    tlr = rng.integers(0, 3, size=(n, width)) / 2 * mask
    b = {"tlr": torch.as_tensor(tlr, dtype=torch.float32), "mask": torch.as_tensor(mask),
         "uids": np.array(uids, dtype=object), "baselines": torch.zeros(n)}
    return b, keys


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_multi_output_sessions(parity, theirs, ours):
    """verl's v1 trainers score each agent-loop session by its final output for the name ``grpo`` only
    (trainer/ppo/v1/utils.py); fade_grpo gets the same rule, every other name sees one rollout per row."""
    from verl.trainer.ppo.v1 import trainer_base
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories as verls

    b, keys = multi_output(10)
    config = algorithm()

    def call(fn, name):
        data = make_data(b["tlr"].clone(), b["mask"].clone(), b["uids"], b["baselines"] if theirs == "remax" else None)
        out = fn(data, batch_keys=keys, adv_estimator=name, config=config)
        return out.batch["advantages"], out.batch["returns"]

    adv_v, ret_v = call(verls, theirs)
    adv_f, ret_f = call(trainer_base.compute_advantage_for_multi_trajectories, ours)
    parity("verl", theirs, ours, "multi-output sessions", adv_f, adv_v)
    parity("verl", theirs, ours, "multi-output sessions", ret_f, ret_v)
    # verl's own names pass through fade's wrapper untouched
    torch.testing.assert_close(call(trainer_base.compute_advantage_for_multi_trajectories, theirs)[0], adv_v,
                               rtol=0, atol=0)
    if theirs == "grpo":  # the rule changes the numbers: one rollout per row would differ
        per_row, _ = run(ours, b, config)
        assert (per_row - adv_f).abs().max() > 0.1


def test_final_sessions_reads_verls_keys():
    rows, session_of = fv.final_sessions(["a_b_0_0", "a_b_0_2", "x_1_0", "a_b_0_1", "x_0_0"])
    assert rows == [1, 2, 4] and session_of == [0, 0, 1, 0, 2]
    with pytest.raises(ValueError, match=r"batch key 'abc_1' is not verl's \{uid\}_\{session\}_\{index\}"):
        fv.final_sessions(["abc_1"])


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_calls_without_index(parity, theirs, ours):
    """verl's REINFORCE++ and ReMax group nothing and are called without uids (verl's own tests do);
    its grouped estimators cannot run without them, and neither can fade's."""
    b = batch(11, spread=True, holes=True)
    config = algorithm()
    if fv.COUNTERPARTS[ours].ungrouped:
        adv_v, ret_v = run(theirs, b, config, uids=False)
        adv_f, ret_f = run(ours, b, config, uids=False)
        parity("verl", theirs, ours, "no index", adv_f, adv_v)
        parity("verl", theirs, ours, "no index", ret_f, ret_v)
    else:
        both_refuse(lambda: run(theirs, b, config, uids=False), lambda: run(ours, b, config, uids=False))
        with pytest.raises(ValueError, match=rf"{ours}: verl passed no group ids"):
            run(ours, b, config, uids=False)
        parity.refused("verl", theirs, ours, "no index", "both refuse")


@pytest.mark.parametrize("form", ["dict", "namespace", "algoconfig"])
@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_config_forms(parity, theirs, ours, form):
    """Every config form verl's callers pass. verl's REINFORCE++ reads ``config.gamma`` (a dict has
    none) and its grpo_passk ``config.get`` (a namespace has none); fade reads every form."""
    b = batch(12, binary=False, spread=True, holes=True)
    # grpo_vectorized does not read norm_adv_by_std_in_grpo, and fade refuses it there (test below)
    values = {"gamma": 0.8, "norm_adv_by_std_in_grpo": theirs == "grpo_vectorized"}
    reference, _ = run(ours, b, algorithm("dictconfig", **values))
    try:
        run(theirs, b, algorithm(form, **values))
    except (AttributeError, TypeError) as exc:
        ours_adv, _ = run(ours, b, algorithm(form, **values))
        torch.testing.assert_close(ours_adv, reference, rtol=0, atol=0)
        parity.refused("verl", theirs, ours, f"config as {form}", f"verl raises {type(exc).__name__}; fade reads it")
        return
    side_by_side(parity, theirs, ours, b, algorithm(form, **values), f"config as {form}")


# -- random ragged batches ------------------------------------------------------------------------


@st.composite
def ragged_batches(draw) -> dict:
    """Groups of 1 to 5 rollouts under string uids in any order, dyadic rewards on any tokens, masks
    with holes and empty responses."""
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    n = sum(sizes)
    width = draw(st.integers(1, 6))
    # uids are any strings verl's uuid4 uids could be, numeric ones included ("01" and "1"); not
    # negative numbers, which verl's grpo_vectorized reads as negative group indices and fails on
    labels = draw(st.lists(st.text("abcxyz_0123456789", min_size=1, max_size=12), min_size=len(sizes),
                           max_size=len(sizes), unique=True))
    uids = [labels[g] for g, size in enumerate(sizes) for _ in range(size)]
    order = draw(st.permutations(range(n)))
    cells = st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 0.5, -0.25, 2.0]), min_size=width, max_size=width),
                     min_size=n, max_size=n)
    bits = st.lists(st.lists(st.booleans(), min_size=width, max_size=width), min_size=n, max_size=n)
    return {
        "tlr": torch.tensor(draw(cells), dtype=torch.float32)[list(order)],
        "mask": torch.tensor(draw(bits), dtype=torch.int64)[list(order)],
        "uids": np.array([uids[i] for i in order], dtype=object),
        "baselines": torch.tensor(draw(st.lists(st.sampled_from([0.0, 1.0, 0.5]), min_size=n, max_size=n))),
        "gamma": draw(st.sampled_from([1.0, 0.9])),
        "norm": draw(st.booleans()),
    }


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=ragged_batches())
def test_random_ragged_batches(parity, b):
    """Every counterpart on random batches: verl's numbers, or a refusal where verl refuses."""
    config = algorithm(gamma=b["gamma"], norm_adv_by_std_in_grpo=b["norm"])
    for theirs, ours in PAIRS:
        if theirs == "grpo_vectorized" and not b["norm"]:
            continue  # verl's grpo_vectorized does not read the setting; fade refuses it (test below)
        try:
            adv_v, ret_v = run(theirs, b, config)
            verl_ok = bool(torch.isfinite(adv_v).all())
        except Exception:
            verl_ok = False
        if not verl_ok:
            both_refuse(lambda: run(theirs, b, config), lambda: run(ours, b, config))
            continue
        adv_f, ret_f = run(ours, b, config)
        parity("verl", theirs, ours, "random ragged batches", adv_f, adv_v)
        parity("verl", theirs, ours, "random ragged batches", ret_f, ret_v)


# -- the one difference ---------------------------------------------------------------------------


@pytest.mark.parametrize(("theirs", "ours"), PAIRS)
def test_all_equal_groups_get_exactly_zero_where_verl_leaves_a_float_residue(parity, theirs, ours):
    """A group of 15 rewards of 0.98 in float32: their mean rounds off by an ulp, and verl's grpo divides
    that residue by a std of about 1e-8 plus epsilon, giving every rollout an advantage of order 0.1
    where the group carries no signal. fade centres twice and gives exactly 0: the one documented
    difference. Every other estimator agrees with verl's on the same batch, and so does the other group."""
    n = 15
    b = {"tlr": torch.tensor([[0.0, 0.98]] * n + [[0.0, 1.0], [0.0, 0.0], [0.5, 0.5]]),
         "mask": torch.ones(n + 3, 2, dtype=torch.int64), "uids": ["same"] * n + ["x"] * 3,
         "baselines": torch.zeros(n + 3)}
    if theirs not in ("grpo", "grpo_vectorized"):
        side_by_side(parity, theirs, ours, b, algorithm(), "all-equal groups")
        return
    adv_v, _ = run(theirs, b, algorithm())
    adv_f, _ = run(ours, b, algorithm())
    assert bool((adv_f[:n] == 0).all())
    residue = parity("verl", theirs, ours, "all-equal groups", adv_f[:n], adv_v[:n],
                     exception="verl's float residue; fade gives exactly 0")
    assert residue > 1e-2  # far outside verl's own tolerance
    parity("verl", theirs, ours, "all-equal groups", adv_f[n:], adv_v[n:])


# -- settings fade cannot honour ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "config", "kwargs", "message"),
    [
        (
            "fade_grpo",
            algorithm(norm_adv_by_std_in_grpo=False, fade={"scale": "group"}),
            {},
            r"^fade_grpo: norm_adv_by_std_in_grpo=False means scale='none', but algorithm.fade.scale='group'",
        ),
        (
            "fade_grpo_passk",
            algorithm(norm_adv_by_std_in_grpo=True, fade={"norm_by_std": False}),
            {},
            r"^fade_grpo_passk: norm_adv_by_std_in_grpo=True means norm_by_std=True, "
            r"but algorithm.fade.norm_by_std=False",
        ),
        (
            "fade_grpo_vectorized",
            algorithm(norm_adv_by_std_in_grpo=False),
            {},
            r"^fade_grpo_vectorized: algorithm.norm_adv_by_std_in_grpo=False is not read by verl's grpo_vectorized",
        ),
        (
            "fade_grpo",
            algorithm(norm_adv_by_std_in_grpo=True),
            {"norm_adv_by_std_in_grpo": False},
            r"^fade_grpo: the norm_adv_by_std_in_grpo=False keyword contradicts the algorithm config's",
        ),
        (
            "fade_grpo_passk",
            {"gamma": 1.0},
            {"norm_adv_by_std_in_grpo": False},
            r"^fade_grpo_passk: verl's grpo_passk reads norm_adv_by_std_in_grpo from the algorithm config",
        ),
        (
            "fade_grpo",
            algorithm(fade={"eps": 1e-4}),
            {"epsilon": 1e-3},
            r"^fade_grpo: epsilon=0.001 contradicts algorithm.fade.eps=0.0001",
        ),
        ("fade", algorithm(), {"epsilon": 1e-3}, r"^fade: verl's epsilon=0.001 has no meaning for fade's 'fade'"),
        ("fade_gpg", algorithm(), {"alpha": 2.0}, r"^fade_gpg: verl's gpg takes alpha=2.0 but replaces it with N / M"),
        (
            "fade",
            algorithm(use_kl_in_reward=True),
            {},
            r"^fade: fade's 'fade' reads each score as a success in \[0, 1\], but algorithm.use_kl_in_reward=True",
        ),
    ],
)
def test_a_setting_fade_cannot_honour_is_refused_in_one_line(name, config, kwargs, message):
    b = batch(13)
    fn = core_algos.get_adv_estimator_fn(name)
    with pytest.raises(ValueError, match=message) as caught:
        fn(b["tlr"], b["mask"], index=b["uids"], config=config, **kwargs)
    assert "\n" not in str(caught.value) and name in str(caught.value)


def test_fade_with_a_success_threshold_reads_a_reward_models_scores():
    """Real-valued scores (a reward model, a KL penalty in the reward): FADE with
    +algorithm.fade.success_threshold trains on the successes they define."""
    b = batch(14, binary=False)
    config = algorithm(use_kl_in_reward=True, fade={"success_threshold": 0.5, "h_star": 0.5})
    fv.estimator_for("fade", {"success_threshold": 0.5, "h_star": 0.5}).observe(entropy=0.4)
    ref = fade.estimator("fade", h_star=0.5)
    ref.observe(entropy=0.4)
    adv, _ = run("fade", b, config)
    scores = b["tlr"].sum(-1)
    assert bool(((scores < 0) | (scores > 1)).any())
    expected = ref((scores >= 0.5).float(), b["uids"]).unsqueeze(-1) * b["mask"]
    torch.testing.assert_close(adv, expected, rtol=0, atol=0)
    assert fv.fade_metrics("fade", {"success_threshold": 0.5, "h_star": 0.5})["fade/delta"] == pytest.approx(0.9)
