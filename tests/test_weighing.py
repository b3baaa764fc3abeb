"""``fade.weigh``, the one way a batch is weighed: exactly the estimator's inputs, the step's signals
observed first, and what the call gave (advantages, record, diagnostics, the engines' metrics).

Every trainer, engine and command weighs through it; tests/test_layers.py holds that no other
module reads an estimator's inputs from its spec.
"""

from __future__ import annotations

import math

import pytest
import torch

import fade
from fade.mass import DIAGNOSTICS, batch_diagnostics
from fade.registry import INPUTS, check_inputs, check_real_valued

R = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
G = torch.tensor([0, 0, 1, 1, 2, 2])
LENGTHS = torch.tensor([3.0, 5.0, 1.0, 2.0, 4.0, 4.0])
BASELINES = torch.tensor([0.5, 0.5, 1.0, 1.0, 0.0, 0.0])
#: Every input, whatever the estimator reads.
GIVEN = {"lengths": LENGTHS, "baseline_rewards": BASELINES}


@pytest.mark.parametrize("name", fade.available())
def test_weigh_is_the_estimators_call_with_its_diagnostics(name):
    params = {"k": 2} if name in ("passk", "pkpo") else {"total_steps": 4} if name == "fade_decay" else (
        {"path": "shift"} if name == "fade_fixed" else {})
    est, twin = fade.estimator(name, **params), fade.estimator(name, **params)
    weighing = fade.weigh(est, R, G, inputs=GIVEN)
    wanted = {k: v for k, v in GIVEN.items() if k in twin.spec.inputs}
    want = twin(R, G, **wanted)
    assert torch.equal(weighing.advantages, want)
    assert weighing.record == twin.last
    assert weighing.diagnostics == batch_diagnostics(twin, want, R, G)
    assert set(weighing.diagnostics) == set(DIAGNOSTICS)
    assert est.state_dict() == twin.state_dict()


def test_the_inputs_are_exactly_the_specs_and_a_costly_one_is_computed_only_when_wanted():
    calls = []

    def baseline():
        calls.append("baseline")
        return BASELINES

    assert fade.spec("opo").inputs == ("lengths",) and fade.spec("remax").inputs == ("baseline_rewards",)
    fade.weigh(fade.estimator("opo"), R, G, inputs={"lengths": LENGTHS, "baseline_rewards": baseline})
    assert calls == []
    remax = fade.estimator("remax")
    weighing = fade.weigh(remax, R, G, inputs={"lengths": lambda: 1 / 0, "baseline_rewards": baseline})
    assert calls == ["baseline"]
    assert torch.equal(weighing.advantages, fade.advantages("remax", R, G, baseline_rewards=BASELINES))
    # an input the estimator only uses is left out where the caller has none
    assert torch.equal(fade.weigh(fade.estimator("reinforce_pp"), R, G, inputs={"lengths": None}).advantages,
                       fade.advantages("reinforce_pp", R, G))


def test_a_missing_need_and_an_unknown_input_are_refused_before_anything_is_observed_or_computed():
    est = fade.estimator("remax")
    with pytest.raises(ValueError, match=r"^estimator 'remax' needs baseline_rewards= \(reward of a baseline"):
        fade.weigh(est, R, G, inputs={"lengths": lambda: 1 / 0})
    with pytest.raises(ValueError, match=r"^estimator 'opo' needs lengths="):
        fade.weigh(fade.estimator("opo"), R, G, inputs={"lengths": None})
    with pytest.raises(ValueError, match=r"unknown per-rollout input\(s\) \['length'\]; known: \['baseline_rewards'"):
        fade.weigh(fade.estimator("grpo"), R, G, inputs={"length": LENGTHS})
    fresh = fade.estimator("fade")
    with pytest.raises(ValueError, match="unknown per-rollout input"):
        fade.weigh(fresh, R, G, entropy=1.0, step=3, inputs={"lenghts": LENGTHS})
    assert fresh.state_dict() == fade.estimator("fade").state_dict()


def test_the_signals_are_observed_before_the_batch_is_weighed():
    est, twin = fade.estimator("fade", ema=1.0, h_star_ratio=1.1), fade.estimator("fade", ema=1.0, h_star_ratio=1.1)
    for step, h in enumerate([1.0, 0.8, 0.5]):
        weighing = fade.weigh(est, R, G, entropy=h, step=step)
        twin.observe(entropy=h, step=step)
        assert torch.equal(weighing.advantages, twin(R, G))
        assert weighing.record == twin.last and weighing.record["step"] == step
    assert weighing.record["delta"] < 1  # the entropy moved the sign knob: the order is seen
    # only the signals given: a step alone moves no entropy
    fade.weigh(est, R, G, step=7)
    assert est.state.step == 8 and est.state.h_hat == twin.state.h_hat
    with pytest.raises(ValueError, match="entropy must be"):
        fade.weigh(fade.estimator("grpo"), R, G, entropy=math.nan)


def test_advance_false_weighs_at_the_present_state_and_observes_nothing():
    est = fade.estimator("fade")
    fade.weigh(est, R, G, entropy=1.0, step=0)
    state = est.state_dict()
    weighing = fade.weigh(est, R, G, advance=False)
    want, record = est.peek(R, G)
    assert torch.equal(weighing.advantages, want) and weighing.record == record
    assert est.state_dict() == state
    with pytest.raises(ValueError, match=r"signals \['entropy', 'step'\] are observed only by a weighing that adv"):
        fade.weigh(est, R, G, entropy=1.0, step=1, advance=False)
    assert est.state_dict() == state


def test_the_diagnostics_are_measured_when_read_and_are_of_the_batch_as_weighed(monkeypatch):
    calls = []
    monkeypatch.setattr(fade.weighing, "batch_diagnostics", lambda *a: calls.append(a) or batch_diagnostics(*a))
    rewards, groups = R.clone(), G.clone()
    weighing = fade.weigh(fade.estimator("rloo"), rewards, groups)
    want = batch_diagnostics(fade.estimator("rloo"), weighing.advantages.clone(), R, G)
    assert calls == []  # a caller that wants only the advantages does not pay for the diagnostics
    rewards.fill_(1.0)  # the caller reuses its tensors in place after weighing
    groups.zero_()
    weighing.advantages.mul_(3.0)
    assert weighing.diagnostics == want
    assert weighing.diagnostics is weighing.diagnostics and len(calls) == 1  # measured once


def test_fades_diagnostics_are_its_records_as_weighed_and_a_weighing_is_built_by_measure():
    weighing = fade.weigh(fade.estimator("fade"), R, G, entropy=0.7, step=0)
    want = {key: weighing.record[key] for key in DIAGNOSTICS}  # FADE measures the batch itself
    weighing.record["positive_mass"] = -1.0  # a caller edits the record it was handed
    assert weighing.diagnostics == want
    with pytest.raises(TypeError, match="build a Weighing with fade.weighing.measure"):
        fade.Weighing(weighing.advantages, {}, dict(want))


def test_metrics_are_the_schedule_and_diagnostics_finite_only():
    est = fade.estimator("fade")
    metrics = fade.weigh(est, R, G).metrics()  # no entropy yet: h_hat and h_star are NaN, left out
    assert "fade/h_hat" not in metrics and "fade/h_star" not in metrics
    assert metrics["fade/alpha"] == est.last["alpha"] and metrics["fade/delta"] == 1.0
    assert {f"fade/{k}" for k in DIAGNOSTICS} <= set(metrics)
    flat = fade.weigh(fade.estimator("grpo"), [1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1]).metrics()
    assert "fade/sign_balance" not in flat and flat["fade/positive_mass"] == 0.0  # no signal: no balance
    assert not any(k.startswith(("fade/alpha", "fade/p_hat")) for k in flat)


def test_the_diagnostics_read_the_rewards_as_the_estimator_does():
    scores = torch.tensor([0.9, 0.2, 0.6, 0.7])
    est = fade.estimator("maxrl", success_threshold=0.5)
    weighing = fade.weigh(est, scores, 2)
    assert weighing.diagnostics == fade.decompose(weighing.advantages, (scores >= 0.5).double(), 2).diagnostics()


def test_an_empty_batch_is_refused_as_the_estimator_refuses_it():
    with pytest.raises(ValueError, match="rewards is empty"):
        fade.weigh(fade.estimator("grpo"), [], [])


def test_measure_weighs_what_an_engine_applies():
    est = fade.estimator("gpg")
    weighing = fade.weigh(est, R, G)
    scaled = fade.weighing.measure(est, weighing.advantages / 2, R, G, weighing.record)
    assert scaled.diagnostics == fade.decompose(weighing.advantages / 2, R, G).diagnostics()
    assert scaled.diagnostics["positive_mass"] == pytest.approx(weighing.diagnostics["positive_mass"] / 2)


def test_check_inputs_refuses_a_need_the_caller_cannot_give_in_its_own_words():
    check_inputs(fade.spec("opo"), {"lengths"}, where="unused")
    check_inputs(fade.estimator("reinforce_pp"), set(), where="unused")  # a used input is never refused
    with pytest.raises(ValueError, match=r"^estimator 'opo' needs lengths= \(response length .*\), which the "
                                         r"batch has none$"):
        check_inputs(fade.spec("opo"), (), where="the batch has none")
    with pytest.raises(ValueError, match=r"^fade_remax: needs verl's reward_baselines, which only verl computes$"):
        check_inputs(fade.spec("remax"), {"lengths"}, where="only verl computes", who="fade_remax:",
                     called={"baseline_rewards": "verl's reward_baselines"})
    with pytest.raises(ValueError, match=r"unknown per-rollout input 'length'"):
        check_inputs(fade.spec("grpo"), {"length"}, where="unused")
    assert set(INPUTS) == {"lengths", "baseline_rewards"}


def test_check_real_valued_refuses_an_estimator_reading_successes_only_where_the_rewards_can_leave_the_unit_range():
    hint = "set a success option"
    check_real_valued(fade.estimator("grpo"), "a reward model scores them", who="x", hint=hint)  # any reward
    check_real_valued(fade.estimator("maxrl", success_threshold=0.5), "a reward model scores them", who="x", hint=hint)
    check_real_valued(fade.estimator("maxrl"), None, who="x", hint=hint)  # the rewards stay in [0, 1]
    with pytest.raises(ValueError, match=r"^engine: 'maxrl' reads each score as a success in \[0, 1\], but a reward "
                                         r"model scores them: set a success option$"):
        check_real_valued(fade.estimator("maxrl"), "a reward model scores them", who="engine: 'maxrl'", what="score",
                          hint=hint)
