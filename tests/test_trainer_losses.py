"""The testbed trainer's loss side end to end, small: every policy loss and entropy term reaches the
update, off-policy updates clip and log what the loss measured, FADE advances once per batch however
many optimizer steps follow, and DAPO's zero-variance filter trains only groups whose raw rewards
differ, drawing again deterministically up to its cap."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

import fade
from fade import adaptive, losses
from fade.cli import build_parser
from fade.dynamic_sampling import zero_variance_mask
from fade.testbed import update as update_module
from fade.testbed.checkpoint import load_checkpoint
from fade.testbed.datasets import VERIFIERS
from fade.testbed.policy import load_policy
from fade.testbed.runlog import ENTROPY_TERM_KEYS, LOSS_KEYS, METRIC_KEYS, SCHEDULE, TIMING_KEYS, load_run
from fade.testbed.sampling import join_rollouts, sample, sequence_logprobs
from fade.testbed.tasks import Verdict
from fade.testbed.trainer import TrainConfig, train

POLICY_LOSSES = losses.available("policy")
ENTROPY_TERMS = [None, *losses.available("entropy")]


def _parity(answer: str, completion: str) -> Verdict:
    """Reward 1 for completions whose characters' codes sum to an even number: mixed rewards from a random policy."""
    return Verdict(float(sum(map(ord, completion)) % 2 == 0), "parity", None)


def _quarters(answer: str, completion: str) -> Verdict:
    """A graded reward in {0, 1/3, 2/3, 1}: raw rewards that differ where successes (>= 0.5) may agree."""
    return Verdict((sum(map(ord, completion)) % 4) / 3, "graded", None)


@pytest.fixture
def data(tmp_path, monkeypatch) -> dict:
    """--data settings whose verifier (parity unless a test names another) gives a random policy mixed rewards."""
    for name, verifier in (
        ("parity", _parity),
        ("quarters", _quarters),
        ("never", lambda a, c: Verdict(0.0, "no", None)),
    ):
        monkeypatch.setitem(VERIFIERS, name, verifier)
    path = tmp_path / "sums.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"{a}+{b}=", "answer": str(a + b)}) + "\n" for a in range(10) for b in range(10))
    )
    return {"data": str(path), "verifier": "parity", "max_new_tokens": 4}


def _config(out, model, data, **kw) -> TrainConfig:
    base = dict(out=str(out), model=model, steps=1, prompts_per_step=4, group_size=4, eval_every=0, eval_prompts=0,
                checkpoint_every=1, progress=False, estimator="grpo", **data)
    return TrainConfig(**{**base, **kw})


def _records(out) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in load_run(out).metrics]


def _spy(monkeypatch, name: str, calls: list) -> None:
    """Record every call of the loss term ``name``'s function (its parameters and what it returned)."""
    spec = losses.spec(name)

    def spied(*args, **params):
        result = spec.fn(*args, **params)
        count = args[0].count if spec.kind == "policy" else None
        calls.append((params, result, count))
        return result

    monkeypatch.setitem(losses._REGISTRY, name, dataclasses.replace(spec, fn=spied))


# -- the options ------------------------------------------------------------------------------------


def test_train_help_lists_the_loss_options_with_their_defaults():
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["train"].format_help().split())
    for flag, default in (
        ("--policy-loss SPEC", "ppo_clip"),
        ("--clip-eps EPS", "0.2"),
        ("--entropy SPEC", "none"),
        ("--filter-zero-variance", "off"),
        ("--filter-max-draws N", "10"),
        ("--loss-agg", "token-mean"),
    ):
        start = text.index(flag + " ", text.index("options:"))
        assert f"(default: {default})" in text[start:text.index("(default:", start) + 40], flag
    assert all(name in text for name in (*POLICY_LOSSES, *losses.AGGREGATIONS, "adaptive_entropy", "entropy_bonus"))
    args = build_parser().parse_args(["train", "--out", "x", "--policy-loss", "kl_cov:kl_cov_ratio=0.002", "--entropy",
                                      "adaptive_entropy:target_ratio=0.7", "--filter-zero-variance",
                                      "--filter-max-draws", "3", "--loss-agg", "seq-mean-token-sum-norm"])
    assert (args.policy_loss, args.entropy, args.filter_zero_variance, args.filter_max_draws, args.loss_agg) == (
        "kl_cov:kl_cov_ratio=0.002", "adaptive_entropy:target_ratio=0.7", True, 3, "seq-mean-token-sum-norm")


def test_clip_eps_fills_the_ratios_a_spec_leaves_unset_and_is_refused_where_none_is_left():
    def loss(**kw):
        return TrainConfig(out="x", **kw).build_policy_loss()

    assert loss().params == {"clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "clip_ratio_c": 3.0}
    assert loss(clip_eps=0.3).params["clip_ratio_low"] == loss(clip_eps=0.3).params["clip_ratio_high"] == 0.3
    higher = loss(clip_eps=0.1, policy_loss="ppo_clip:clip_ratio_high=0.28").params
    assert (higher["clip_ratio_low"], higher["clip_ratio_high"]) == (0.1, 0.28)
    assert loss(policy_loss="clip_cov", clip_eps=0.25).params["clip_ratio_high"] == 0.25
    assert loss(policy_loss="kl_cov").params == {"kl_cov_ratio": 0.0002, "ppo_kl_coef": 0.1}
    for spec, why in (
        ("kl_cov", "kl_cov has no ratio clip"),
        ("ppo_clip:clip_ratio_low=0.2,clip_ratio_high=0.28", "sets both clip_ratio_low and clip_ratio_high"),
    ):
        with pytest.raises(ValueError, match=f"--clip-eps 0.3 cannot apply to --policy-loss {spec}: .*{why}"):
            TrainConfig(out="x", policy_loss=spec, clip_eps=0.3).validate()


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("policy_loss", "ppo", "unknown policy loss 'ppo'; available: clip_cov, kl_cov, ppo_clip"),
        ("policy_loss", "entropy_bonus", "'entropy_bonus' is an entropy term, not a policy loss"),
        ("policy_loss", "ppo_clip:clip_ratio_c=0.5", "clip_ratio_c must be a finite number > 1"),
        ("entropy", "ppo_clip", "'ppo_clip' is a policy loss, not an entropy term"),
        ("entropy", "adaptive_entropy:target=0.3,target_ratio=0.7", "give target or target_ratio, not both"),
        ("loss_agg", "mean", "loss_agg must be one of 'token-mean', 'token-sum', 'seq-mean-token-sum', "
                             "'seq-mean-token-mean', 'seq-mean-token-sum-norm', 'seq-mean' ('seq-mean' is the old "
                             "name of 'seq-mean-token-mean'), got 'mean'"),
        ("filter_max_draws", 0, "filter_max_draws must be a positive integer, got 0"),
        ("filter_max_draws", 3, "--filter-max-draws 3 applies with --filter-zero-variance only"),
        ("group_size", 1, "--filter-zero-variance needs --group-size 2 or more"),
    ],
)
def test_bad_loss_and_filter_settings_are_refused_before_the_run_starts(field, value, match, tmp_path):
    kw = {"filter_zero_variance": True} if field in ("group_size", "filter_max_draws") and value != 3 else {}
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
        train(TrainConfig(out=str(tmp_path / "x"), **{field: value, **kw}))
    assert not (tmp_path / "x").exists()


# -- every loss reaches the update ---------------------------------------------------------------------


@pytest.mark.parametrize("entropy", ENTROPY_TERMS)
@pytest.mark.parametrize("policy", POLICY_LOSSES)
def test_every_policy_loss_and_entropy_term_reaches_the_update(
    policy, entropy, tiny_model, tmp_path, data, monkeypatch
):
    """Two epochs of two minibatches: the loss named runs at each of the 4 optimizer steps with the
    spec's parameters, the entropy term too, and the step logs what they measured, token-weighted."""
    loss_calls, entropy_calls = [], []
    _spy(monkeypatch, policy, loss_calls)
    if entropy is not None:
        _spy(monkeypatch, entropy, entropy_calls)
    spec = {"ppo_clip": "ppo_clip:clip_ratio_high=0.28", "clip_cov": "clip_cov:clip_cov_ub=9.0",
            "kl_cov": "kl_cov:kl_cov_ratio=0.01"}[policy]
    term = {
        None: None,
        "entropy_bonus": "entropy_bonus:coef=0.01",
        "adaptive_entropy": "adaptive_entropy:target_ratio=2",
    }
    # The filter leaves no group whose leave-one-out advantages are all 0: every minibatch reaches the loss.
    out = train(_config(tmp_path / "r", tiny_model, data, policy_loss=spec, entropy=term[entropy], epochs=2,
                        minibatches=2, lr=1e-2, estimator="rloo", group_size=2, prompts_per_step=8,
                        filter_zero_variance=True))
    (record,) = _records(out)
    assert len(loss_calls) == 4 and all(params == TrainConfig(out="x", policy_loss=spec).build_policy_loss().params
                                        for params, _, _ in loss_calls)
    reported = losses.spec(policy).metrics
    for key in LOSS_KEYS:
        if key not in reported:
            assert record[key] is None, key
            continue
        tokens = sum(n for _, _, n in loss_calls)
        expected = sum(metrics[key] * n for _, (_, metrics), n in loss_calls) / tokens
        assert record[key] == pytest.approx(expected, rel=1e-12, abs=1e-15), key
    assert len(entropy_calls) == (4 if entropy else 0)
    if entropy is None:
        assert all(record[key] is None for key in ENTROPY_TERM_KEYS)
    else:
        assert record["update_entropy"] > 0 and record["entropy_coef"] >= 0
        assert entropy != "entropy_bonus" or record["entropy_coef"] == pytest.approx(0.01)
        state = load_checkpoint(out / "checkpoint.pt")["entropy"]
        assert (state == {}) == (entropy == "entropy_bonus")
        if entropy == "adaptive_entropy":  # the target is twice the first step's entropy: the bonus switched on
            assert state["target"] > 0 and state["coef"] > 0 and record["entropy_coef"] > 0


def test_off_policy_steps_clip_and_log_the_mean_and_the_last_gradient_norm(tiny_model, tmp_path, data, monkeypatch):
    norms = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording(*args, **kwargs):
        norms.append(float(clip(*args, **kwargs)))
        return torch.tensor(norms[-1])

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", recording)
    out = train(_config(tmp_path / "off", tiny_model, data, steps=2, epochs=2, minibatches=2, lr=2e-2))
    records = _records(out)
    assert any(r["clip_fraction"] > 0 for r in records) and all(r["ppo_kl"] != 0 for r in records)
    assert len(norms) == 8
    for r, step_norms in zip(records, (norms[:4], norms[4:])):
        assert r["grad_norm"] == pytest.approx(sum(step_norms) / 4) and r["grad_norm_last"] == step_norms[-1]
    on_policy = _records(train(_config(tmp_path / "on", tiny_model, data, steps=2, lr=2e-2)))
    assert all(r["clip_fraction"] == 0 and abs(r["ppo_kl"]) < 1e-6 and r["grad_norm"] == r["grad_norm_last"]
               for r in on_policy)


def test_each_epoch_shuffles_the_batch_anew(tiny_model, tmp_path, data, monkeypatch):
    orders = []
    forward = update_module.sequence_logprobs

    def recording(model, prompt_ids, prompt_mask, completion_ids, completion_mask, **kwargs):
        orders.append(torch.cat([prompt_ids, completion_ids], dim=1).tolist())
        return forward(model, prompt_ids, prompt_mask, completion_ids, completion_mask, **kwargs)

    monkeypatch.setattr(update_module, "sequence_logprobs", recording)
    train(_config(tmp_path / "e", tiny_model, data, epochs=3, prompts_per_step=8, kl_coef=0.1))  # KL: every row goes in
    assert len(orders) == 3 and all(sorted(o) == sorted(orders[0]) for o in orders)
    assert orders[0] != orders[1] != orders[2]


@pytest.mark.parametrize("agg", ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-sum-norm"])
def test_every_loss_aggregation_trains(agg, tiny_model, tmp_path, data):
    (record,) = _records(train(_config(tmp_path / agg, tiny_model, data, loss_agg=agg, minibatches=2)))
    assert record["grad_norm"] > 0


def test_seq_mean_is_the_old_name_of_seq_mean_token_mean(tiny_model, tmp_path, data):
    old, new = (train(_config(tmp_path / name, tiny_model, data, loss_agg=name, steps=2, lr=1e-2))
                for name in ("seq-mean", "seq-mean-token-mean"))
    assert _records(old) == _records(new)
    a, b = (load_checkpoint(run / "checkpoint.pt")["model"] for run in (old, new))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_solve_rate_counts_successes_as_the_estimator_reads_them(tiny_model, tmp_path, data, monkeypatch):
    """With graded rewards and success_threshold 0.5 a reward of 2/3 is a success: solve_rate is the
    share of rewards >= 0.5, not of rewards equal to 1."""
    calls = _estimator_calls(monkeypatch)
    out = train(_config(tmp_path / "s", tiny_model, {**data, "verifier": "quarters"}, steps=2, estimator="power",
                        estimator_args={"success_threshold": 0.5}, prompts_per_step=8))
    for (rewards, _), record in zip(calls, _records(out), strict=True):
        assert record["solve_rate"] == float((rewards >= 0.5).float().mean())
        assert record["reward_mean"] == float(rewards.mean())
    assert any(bool(((r > 0.5) & (r < 1)).any()) for r, _ in calls)  # a 2/3 counted: rewards == 1 would differ


# -- every estimator off policy, FADE once per batch ------------------------------------------------------


@pytest.mark.parametrize("index, name", list(enumerate(fade.available())))
def test_every_estimator_trains_off_policy(index, name, tiny_model, tmp_path, data):
    args = ({"total_steps": 1} if name == "fade_decay" else {"path": "shift"} if name == "fade_fixed"
            else {"k": 2} if name in ("passk", "pkpo") else {})
    policy, entropy = POLICY_LOSSES[index % 3], ENTROPY_TERMS[(index // 3) % 3]
    out = train(_config(tmp_path / name, tiny_model, data, estimator=name, estimator_args=args, epochs=2,
                        minibatches=2, policy_loss=policy, entropy=entropy))
    (record,) = _records(out)
    assert set(record) >= set(METRIC_KEYS) - set(SCHEDULE) - set(TIMING_KEYS)
    assert math.isfinite(record["grad_norm"]) and math.isfinite(record["param_norm"])
    assert all(record[key] is not None for key in losses.spec(policy).metrics)
    assert (record["entropy_coef"] is None) == (entropy is None)


def test_fade_advances_once_per_batch_with_several_optimizer_steps(tiny_model, tmp_path, data, monkeypatch):
    """Epochs 2 x minibatches 4: the logged schedule is FADE's pure functions fed once per step
    with the step's logged entropy and solve rate, and the checkpoint holds that state; the
    optimizer took 8 steps a batch."""
    steps = []
    step = torch.optim.AdamW.step
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, *a, **k: steps.append(1) or step(self, *a, **k))
    out = train(_config(tmp_path / "f", tiny_model, data, estimator="fade", steps=4, epochs=2, minibatches=4,
                        prompts_per_step=8, lr=1e-2))
    est = fade.estimator("fade")
    state = adaptive.init(est.params)
    for record in _records(out):
        state = adaptive.observe(state, est.params, entropy=record["entropy"], step=record["step"] - 1)
        (alpha, delta), state = adaptive.update(state, est.params, "feedback", record["reward_mean"])
        assert (alpha, delta, state.p_hat, state.h_hat, state.h_star) == tuple(
            record[k] for k in ("alpha", "delta", "p_hat", "h_hat", "h_star"))
        state = adaptive.observe(state, est.params, rank1_share=record["rank1_share"])
    assert len({r["p_hat"] for r in _records(out)}) == 4  # the schedule moved
    assert load_checkpoint(out / "checkpoint.pt")["estimator"] == state.to_dict()
    assert len(steps) == 4 * 2 * 4


# -- dynamic sampling ----------------------------------------------------------------------------------


def _estimator_calls(monkeypatch) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Record the rewards and groups of every advantage computation."""
    calls = []
    call = fade.Estimator.__call__

    def recording(self, rewards, groups, **inputs):
        calls.append((rewards.clone(), torch.as_tensor(groups).clone()))
        return call(self, rewards, groups, **inputs)

    monkeypatch.setattr(fade.Estimator, "__call__", recording)
    return calls


@pytest.mark.parametrize("estimator, group_size", [("rloo", 2), ("fade", 3)])
def test_the_filter_trains_only_groups_whose_raw_rewards_differ(estimator, group_size, tiny_model, tmp_path, data,
                                                                monkeypatch):
    """Leave-one-out groups of 2, and graded rewards read as successes at 0.5: every group trained on
    has raw rewards that differ (the success-mapped ones may agree), the batch is full, and the
    first draw's share of filtered groups is logged."""
    calls = _estimator_calls(monkeypatch)
    graded = estimator == "fade"
    out = train(_config(tmp_path / "f", tiny_model, {**data, "verifier": "quarters" if graded else "parity"}, steps=3,
                        estimator=estimator, estimator_args={"success_threshold": 0.5} if graded else {},
                        group_size=group_size, filter_zero_variance=True, prompts_per_step=6))
    records = _records(out)
    assert len(calls) == 3
    for (rewards, groups), record in zip(calls, records):
        assert not bool(zero_variance_mask(rewards, groups).any())
        assert groups.tolist() == [g for g in range(6) for _ in range(group_size)]
        assert record["groups_kept"] == 6 and 1 <= record["sample_draws"] <= 10 and 0 <= record["filtered_share"] < 1
        assert record["completion_tokens"] > 0
    assert any(r["sample_draws"] > 1 for r in records)
    if graded:  # groups whose successes agree but raw rewards do not were kept
        successes = [((r >= 0.5).float(), g) for r, g in calls]
        assert any(bool(zero_variance_mask(s, g).any()) for s, g in successes)


def test_the_filter_keeps_the_first_draw_of_a_run_without_it_and_draws_deterministically(tiny_model, tmp_path, data):
    kw = dict(steps=2, group_size=2, prompts_per_step=6, estimator="rloo")
    plain = _records(train(_config(tmp_path / "plain", tiny_model, data, **kw)))
    a, b, other = (
        _records(train(_config(tmp_path / name, tiny_model, data, filter_zero_variance=True, seed=seed, **kw)))
        for name, seed in (("a", 0), ("b", 0), ("c", 1))
    )
    assert a == b and a != other
    first = {k: v for k, v in plain[0].items() if k.startswith(("reward_mean", "solve_rate"))}
    assert first == {k: v for k, v in a[0].items() if k.startswith(("reward_mean", "solve_rate"))}
    assert plain[0]["filtered_share"] is None and a[0]["filtered_share"] > 0


def test_the_filter_trains_on_what_it_kept_when_the_draws_run_out(tiny_model, tmp_path, data):
    out = train(_config(tmp_path / "capped", tiny_model, data, steps=3, group_size=2, prompts_per_step=8,
                        estimator="rloo", filter_zero_variance=True, filter_max_draws=1))
    records = _records(out)
    assert all(r["sample_draws"] == 1 and r["groups_kept"] == round(8 * (1 - r["filtered_share"])) for r in records)
    assert any(0 < r["groups_kept"] < 8 for r in records) and all(r["grad_norm"] > 0 for r in records)


def test_a_step_whose_filter_keeps_nothing_skips_its_update(tiny_model, tmp_path, data):
    """Every reward 0: each draw is filtered out; after 3 draws the step logs it and trains nothing,
    and FADE's state does not move."""
    out = train(_config(tmp_path / "none", tiny_model, {**data, "verifier": "never"}, steps=2, estimator="fade",
                        filter_zero_variance=True, filter_max_draws=3))
    for record in _records(out):
        assert (record["sample_draws"], record["groups_kept"], record["filtered_share"]) == (3, 0, 1.0)
        assert record["reward_mean"] == 0 and record["completion_tokens"] == 0
        assert all(record[k] is None for k in ("entropy", "grad_norm", "clip_fraction", "positive_mass"))
        assert "alpha" not in record  # FADE weighed no batch
    checkpoint = load_checkpoint(out / "checkpoint.pt")
    assert checkpoint["estimator"]["p_hat"] == 0.5 and checkpoint["estimator"]["h_hat"] is None
    start, _ = load_policy(tiny_model)
    assert all(torch.equal(v, checkpoint["model"][k]) for k, v in start.state_dict().items())


# -- joining draws -------------------------------------------------------------------------------------


def test_joined_rollouts_score_as_their_parts(tiny_model):
    model, tokenizer = load_policy(tiny_model)
    pad = tokenizer.pad_token_id
    gen = torch.Generator().manual_seed(0)
    short = sample(model, [[1, 5], [1, 6]], num_samples=2, max_new_tokens=3, eos_id=tokenizer.eos_token_id,
                   pad_id=pad, generator=gen)
    long = sample(model, [[1, 5, 6, 7, 8]], num_samples=3, max_new_tokens=6, eos_id=tokenizer.eos_token_id,
                  pad_id=pad, generator=gen)
    joined = join_rollouts([(short, torch.tensor([2, 3])), (long, torch.tensor([0, 1, 2]))], pad)
    assert joined.prompt_index.tolist() == [0, 0, 1, 1, 1]
    with torch.no_grad():
        lp, _ = sequence_logprobs(model, joined.prompt_ids, joined.prompt_mask, joined.completion_ids,
                                  joined.completion_mask)
        parts = [sequence_logprobs(model, r.prompt_ids[rows], r.prompt_mask[rows], r.completion_ids[rows],
                                   r.completion_mask[rows])[0] for r, rows in ((short, [2, 3]), (long, [0, 1, 2]))]
    width = lp.shape[1]
    expected = torch.cat([torch.nn.functional.pad(p, (0, width - p.shape[1])) for p in parts])
    torch.testing.assert_close(lp, expected, rtol=1e-5, atol=1e-5)
    assert torch.equal(joined.lengths, torch.cat([short.lengths[2:], long.lengths]))
