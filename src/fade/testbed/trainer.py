"""The testbed's RL trainer: sample, verify, weigh with an advantage, take policy-loss steps.

One step, as :func:`train` calls its parts:

1. sample (``_sample_batch``): draw ``prompts_per_step`` training problems (from the train
   split, or from the fixed pool of ``train_pool`` problems; of the buckets ``difficulties``
   names) and sample ``group_size`` completions of each at the sampling temperature with a KV
   cache, and score every completion with the task's verifier (the raw outcome reward). With
   ``filter_zero_variance`` (DAPO's dynamic sampling) the groups whose raw rewards all agree are
   dropped and more problems drawn until ``prompts_per_step`` groups are kept or
   ``filter_max_draws`` draws are made; the first draw is the unfiltered run's, seed for seed;
2. the old log-probs and the policy's mean token entropy (``_policy_pass``): those sampling
   recorded, or with ``old_logprobs="recompute"`` one no-grad forward over the batch (the order
   verl uses);
3. advantage: ``_advantages`` weighs the batch once with any registered estimator, by name and
   parameters (:func:`fade.weigh`: a stateful one, FADE, is fed the policy pass's entropy and the
   updates before this batch, and advances once per batch however many optimizer steps follow),
   giving its advantages, gradient-mass diagnostics and entropy-formula terms;
4. loss and update (``_update``, :mod:`fade.testbed.update`): ``epochs`` passes over
   ``minibatches`` minibatches, each an optimizer step on the policy loss of :mod:`fade.losses`
   (PPO-clip by default; clip-higher, Clip-Cov, KL-Cov), an optional entropy term (a bonus or
   TRL's adaptive coefficient), an optional KL to the base policy, AdamW or plain SGD, and
   gradient clipping;
5. log the step's metrics (:func:`train` first hands the output head's rank-1 share to the
   estimator with ``observe``; ``_record`` builds the line: reward and solve rate per difficulty
   bucket, entropy, norms, the output head's rank-1 share, the diagnostics, the loss's clip
   fractions and KL, the estimator's schedule, the filter's draws, timings), evaluate every ``eval_every`` steps
   (``_evaluate``), checkpoint every ``checkpoint_every`` steps (``save_state``).

All randomness of step t comes from generators seeded by (seed, t), and a checkpoint holds the
model, optimizer, estimator and entropy-term state, RNG states, step and configuration: a resumed
run's metrics equal an uninterrupted run's. Resuming with other settings is refused when they would
change what the run computes (see :data:`~fade.testbed.config.RESUME_MAY_CHANGE`); the settings that
may change are recorded in ``resumes.jsonl``, one line per resume. A checkpoint whose digest does
not match or whose model holds NaN or inf is refused, and temporary files a kill left behind are
removed when the run starts again. The per-step logs are written compressed (``metrics.jsonl.gz``,
``eval.jsonl.gz``; :class:`~fade.testbed.checkpoint.JsonlLog`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fade.dynamic_sampling import kept_groups
from fade.geometry import rank1_share
from fade.progress import step_bar
from fade.weighing import weigh

from .checkpoint import JsonlLog
from .config import OPTIMIZERS, RESUME_MAY_CHANGE, TrainConfig
from .evaluation import decode_completions, encode_prompt, held_out_passk
from .policy import save_policy
from .runlog import (
    DIAGNOSTICS,
    ENTROPY_FORMULA_KEYS,
    ENTROPY_TERM_KEYS,
    LOSS_KEYS,
    SCHEDULE,
    bucket_key,
)
from .sampling import Rollouts, greedy, join_rollouts, sample, sequence_logprobs
from .session import (
    CHECKPOINT,
    Setup,
    base_model_dir,
    generator,
    open_logs,
    output_head,
    prepare,
    resume_changes,
    save_state,
    seed_for,
)
from .tasks import Problem
from .update import UpdateBatch, update_policy

__all__ = [
    "CHECKPOINT",
    "OPTIMIZERS",
    "RESUME_MAY_CHANGE",
    "TrainConfig",
    "base_model_dir",
    "resume_changes",
    "token_covariance",
    "train",
]

_EVAL_STREAM = 1_000_003  # keeps evaluation randomness apart from the training steps'


def _norm(tensors) -> float:
    return float(torch.sqrt(sum((t.detach().float() ** 2).sum() for t in tensors)))


def token_covariance(adv: torch.Tensor, logp: torch.Tensor, mask: torch.Tensor) -> float:
    """Cov(A, log pi) over the batch's completion tokens, each token carrying its rollout's advantage.

    Cov = mean_t(A_t lp_t) - mean_t(A_t) mean_t(lp_t) = (1/N) sum_t (A_t - mean_t A) lp_t, the sums
    over the N tokens where ``mask`` is True. It is the covariance term of the first-order entropy
    change dH ~ -eta [(m_S - m_F) H + Cov(A, log pi)] (Cui et al., arXiv 2505.22617; docs/method.md,
    section 4). Computed in float64 from each rollout's token count and log-prob sum (one
    reduction over the tokens); the centred form keeps it exact for a constant A.

    Args:
        adv: (B,) the advantage of each rollout.
        logp: (B, T) the log-prob of each sampled token (anything where ``mask`` is False).
        mask: (B, T) bool, True on the completion tokens.

    Returns:
        The covariance as a float; NaN when ``mask`` selects no token.

    Raises:
        ValueError: ``logp`` and ``mask`` are not (B, T) of one shape, or ``adv`` is not (B,).
    """
    if logp.ndim != 2 or mask.shape != logp.shape or adv.shape != logp.shape[:1]:
        raise ValueError(
            f"token_covariance needs adv (B,), logp and mask (B, T), got {tuple(adv.shape)}, "
            f"{tuple(logp.shape)} and {tuple(mask.shape)}"
        )
    m = mask.to(torch.float64)
    lp = torch.where(mask.bool(), logp.to(torch.float64), 0.0)  # padding may hold -inf or NaN
    counts, sums = torch.stack((m, lp)).sum(dim=2)  # tokens and log-prob sum of each rollout
    n = float(counts.sum())
    if n == 0:
        return math.nan
    a = adv.to(device=counts.device, dtype=torch.float64)
    mean_a = (a * counts).sum() / n
    return float(((a - mean_a) * sums).sum() / n)


# -- one step's parts -----------------------------------------------------------------------------


@dataclass
class Batch:
    """One step's scored rollouts: the groups the update trains on, and what the first draw measured.

    ``problems``, ``prompts``: one per group, in group order (``rollouts.prompt_index``);
    ``rewards``: the verifier's score of each rollout trained on. ``first_rewards`` and
    ``first_difficulty``: each rollout of the first draw (the whole batch without the filter),
    which the step's reward and solve rate are logged on, so that a run with the filter reads
    like one without. ``draws``: the draws of prompts made; ``filtered_share``: the share of the
    first draw's groups the filter dropped (None without the filter).
    """

    problems: list[Problem]
    prompts: list[list[int]]
    rollouts: Rollouts
    rewards: torch.Tensor
    first_rewards: torch.Tensor
    first_difficulty: torch.Tensor
    draws: int = 1
    filtered_share: float | None = None
    sample_seconds: float = 0.0


def _draw(setup: Setup, step: int, draw: int, n: int) -> Batch:
    """Draw ``n`` training problems and sample ``group_size`` completions of each, at the
    sampling temperature with a KV cache, then score them. The first draw of step t uses the
    seeds (seed, t), as every run without the filter; a later draw d has its own, (seed, "t/d").
    With a training pool the problems are ``n`` distinct ones of it, sampled with that seed."""
    c = setup.config
    stream = step if draw == 0 else f"{step}/{draw}"
    seed = seed_for(c.seed, stream)
    if setup.pool is None:
        problems = setup.task.problems("train", n=n, seed=seed, difficulties=c.difficulties)
    else:  # n distinct problems of the fixed training pool
        problems = random.Random(f"pool/{seed}").sample(setup.pool, n)
    prompts = [encode_prompt(setup.tokenizer, p.prompt) for p in problems]
    t0 = time.perf_counter()
    rollouts = sample(
        setup.model, prompts, num_samples=c.group_size, max_new_tokens=setup.max_new, eos_id=setup.eos_id,
        pad_id=setup.pad_id, temperature=c.temperature, generator=generator(setup.device, c.seed, stream),
    )
    seconds = time.perf_counter() - t0
    rewards = _score(setup, problems, rollouts)
    difficulty = torch.tensor([problems[i].difficulty for i in rollouts.prompt_index.tolist()])
    return Batch(problems, prompts, rollouts, rewards, rewards, difficulty, sample_seconds=seconds)


def _score(setup: Setup, problems: list[Problem], rollouts: Rollouts) -> torch.Tensor:
    """Each completion's reward: the task's verifier on its text (the raw outcome reward)."""
    texts = decode_completions(setup.tokenizer, rollouts.completion_ids, rollouts.completion_mask, setup.eos_id)
    owners = [problems[i] for i in rollouts.prompt_index.tolist()]
    return torch.tensor([v.score for v in setup.task.verify_many(owners, texts)], dtype=torch.float32)


def _sample_batch(setup: Setup, step: int) -> Batch:
    """The step's batch: one draw of ``prompts_per_step`` problems, or, with the zero-variance
    filter (DAPO's dynamic sampling), the groups whose raw rewards differ, drawn again for the
    groups still missing until ``prompts_per_step`` are kept or ``filter_max_draws`` draws are
    made; then the batch holds what was kept (possibly nothing)."""
    c = setup.config
    first = _draw(setup, step, 0, c.prompts_per_step)
    if not c.filter_zero_variance:
        return first
    filtered = 1.0 - len(kept_groups(first.rewards, first.rollouts.prompt_index.cpu())) / len(first.problems)
    parts, problems, prompts, rewards = [], [], [], []
    batch, draw, seconds = first, 0, 0.0
    while True:
        seconds += batch.sample_seconds
        index = batch.rollouts.prompt_index.cpu()
        groups = kept_groups(batch.rewards, index, c.prompts_per_step - len(problems))  # the first ones
        rows = torch.nonzero(torch.isin(index, torch.tensor(groups, dtype=index.dtype))).flatten()
        parts.append((batch.rollouts, rows))
        problems += [batch.problems[g] for g in groups]
        prompts += [batch.prompts[g] for g in groups]
        rewards.append(batch.rewards[rows])
        draw += 1
        if len(problems) == c.prompts_per_step or draw == c.filter_max_draws:
            break
        batch = _draw(setup, step, draw, c.prompts_per_step - len(problems))
    return Batch(problems, prompts, join_rollouts(parts, setup.pad_id), torch.cat(rewards), first.first_rewards,
                 first.first_difficulty, draws=draw, filtered_share=filtered, sample_seconds=seconds)


@dataclass
class PolicyPass:
    """The policy's view of a batch before the update (no gradient): each completion token's
    log-prob under it (and under the base policy when a KL term needs it), and its mean token
    entropy."""

    old_logprobs: torch.Tensor
    ref_logprobs: torch.Tensor | None
    entropy: float
    tokens: int


@torch.no_grad()
def _policy_pass(setup: Setup, batch: Batch) -> PolicyPass:
    """The old log-probs and the mean token entropy: what sampling recorded for each token (the
    policy that sampled, at the sampling temperature), or, with ``old_logprobs="recompute"``, one
    no-grad forward over the batch (the order verl uses when its rollout engine is not its
    training engine); the two agree within 1e-5 (tests/test_sampling.py)."""
    r, t = batch.rollouts, setup.config.temperature
    if setup.config.old_logprobs == "sampler":
        old_lp, tok_entropy = r.logprobs, r.entropy
    else:
        old_lp, tok_entropy = sequence_logprobs(setup.model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                                r.completion_mask, temperature=t, with_entropy=True)
    ref_lp = None
    if setup.ref_model is not None:
        ref_lp, _ = sequence_logprobs(setup.ref_model, r.prompt_ids, r.prompt_mask, r.completion_ids,
                                      r.completion_mask, temperature=t)
    tokens = int(r.completion_mask.sum())
    return PolicyPass(old_lp, ref_lp, float(tok_entropy.sum()) / max(tokens, 1), tokens)


def _advantages(setup: Setup, batch: Batch, policy: PolicyPass, step: int) -> tuple[torch.Tensor, dict[str, Any]]:
    """Weigh the batch of ``step`` (:func:`fade.weigh`, fed this batch's entropy and the updates before
    it): its advantages, once per batch however many optimizer steps follow, and its diagnostics (the
    gradient mass, the first-order entropy formula's terms before the update, docs/method.md, section 4)."""
    groups = batch.rollouts.prompt_index.cpu()
    weighing = weigh(setup.est, batch.rewards, groups, entropy=policy.entropy, step=step - 1,
                     inputs=_estimator_inputs(setup, batch))
    adv, diagnostics = weighing.advantages, weighing.diagnostics
    cov_adv_logp = token_covariance(adv, policy.old_logprobs, batch.rollouts.completion_mask)
    mass_entropy_term = (float(diagnostics["positive_mass"]) - float(diagnostics["negative_mass"])) * policy.entropy
    return adv, {
        **diagnostics,
        "cov_adv_logp": cov_adv_logp,
        "mass_entropy_term": mass_entropy_term,
        "entropy_drive": 0.0 - (mass_entropy_term + cov_adv_logp),  # 0.0 -: never a -0.0
    }


def _estimator_inputs(setup: Setup, batch: Batch) -> dict[str, Callable[[], torch.Tensor]]:
    """The per-rollout inputs the testbed can give an estimator, each computed only if it weighs with
    it (:func:`fade.weigh`): response lengths, and ReMax's baseline, the reward of a greedy decode."""
    r = batch.rollouts

    def baseline_rewards() -> torch.Tensor:
        ids, mask = greedy(setup.model, batch.prompts, max_new_tokens=setup.max_new, eos_id=setup.eos_id,
                           pad_id=setup.pad_id)
        texts = decode_completions(setup.tokenizer, ids, mask, setup.eos_id)
        per_prompt = torch.tensor([v.score for v in setup.task.verify_many(batch.problems, texts)], dtype=torch.float32)
        return per_prompt[r.prompt_index.cpu()]

    return {"lengths": lambda: r.lengths.to("cpu", torch.float32), "baseline_rewards": baseline_rewards}


def _update(setup: Setup, batch: Batch, policy: PolicyPass, adv: torch.Tensor, step: int) -> dict[str, Any]:
    """The policy loss and the optimizer steps on the batch (:func:`fade.testbed.update.update_policy`)."""
    r, c = batch.rollouts, setup.config
    tensors = UpdateBatch(r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask, policy.old_logprobs,
                          policy.ref_logprobs, adv.to(device=setup.device, dtype=torch.float32))
    return update_policy(
        setup.model, setup.optimizer, tensors, config=c, loss=setup.loss, entropy=setup.entropy,
        horizon=float(setup.max_new), order=torch.Generator().manual_seed(seed_for(c.seed, -step)),
        draws=generator(setup.device, c.seed, f"{step}/loss"),
    )


def _rank1_share(setup: Setup) -> float:
    """The rank-1 share of the output head's change since the start of the run (docs/method.md)."""
    return rank1_share(output_head(setup.model).detach() - setup.head0)


def _record(setup: Setup, step: int, batch: Batch, policy: PolicyPass | None, weighed: dict[str, Any],
            update: dict[str, Any], seconds: dict[str, float], share: float) -> dict[str, Any]:
    """The step's ``metrics.jsonl`` record, in the schema's order (:data:`~fade.testbed.runlog.METRIC_KEYS`)."""
    rewards, difficulty = batch.first_rewards, batch.first_difficulty
    solved = setup.est.as_success(rewards) == 1  # a success as the estimator reads the rewards
    record: dict[str, Any] = {
        "step": step,
        "reward_mean": float(rewards.mean()),
        "solve_rate": float(solved.float().mean()),
    }
    for b in sorted(set(difficulty.tolist())):
        sel = difficulty == b
        record[bucket_key("reward_mean", b)] = float(rewards[sel].mean())
        record[bucket_key("solve_rate", b)] = float(solved[sel].float().mean())
    record.update({
        "entropy": policy.entropy if policy else None,
        "param_norm": _norm(setup.model.parameters()),
        "grad_norm": update.get("grad_norm"),
        "grad_norm_last": update.get("grad_norm_last"),
        "rank1_share": share,
        **{key: weighed.get(key) for key in (*DIAGNOSTICS, *ENTROPY_FORMULA_KEYS)},
        **{key: update.get(key) for key in (*LOSS_KEYS, "kl", *ENTROPY_TERM_KEYS)},
        "completion_tokens": policy.tokens if policy else 0,
        "lr": setup.config.lr,
    })
    for key in SCHEDULE:
        if policy is not None and key in setup.est.last:  # a step without a batch was weighed with nothing
            record[key] = setup.est.last[key]
    filtered = setup.config.filter_zero_variance
    record.update({
        "filtered_share": batch.filtered_share,
        "sample_draws": batch.draws if filtered else None,
        "groups_kept": len(batch.problems) if filtered else None,
        "sample_seconds": batch.sample_seconds,
        **seconds,
    })
    return record


def _evaluate(setup: Setup, step: int, test_set: list[Problem], log: JsonlLog, writer: Any,
              note: Callable[[str], None]) -> str:
    """Evaluate the policy on the held-out problems, log it, and return the progress bar's note."""
    c = setup.config

    def done(prompts: int) -> None:
        note(f"evaluating at step {step}: {prompts}/{len(test_set)} prompts x {c.eval_samples} samples")

    done(0)
    result = held_out_passk(
        setup.model, setup.tokenizer, setup.task, test_set, samples=c.eval_samples, max_new_tokens=setup.max_new,
        eos_id=setup.eos_id, pad_id=setup.pad_id, generator=generator(setup.device, c.seed, _EVAL_STREAM),
        on_prompts=done,
    )
    log.append({"step": step, **result})
    if writer is not None:
        for key, value in result.items():
            writer.add_scalar(f"eval/{key}", value, step)
    return f"  pass@1 {result['pass@1']:.3f} (step {step})"


def _progress_line(record: dict[str, Any]) -> str:
    stats = f"reward {record['reward_mean']:.3f}  entropy {_number(record['entropy'])}"
    if record.get("alpha") is not None:
        stats += f"  alpha {record['alpha']:.2f}  delta {record['delta']:.2f}"
    if record.get("groups_kept") is not None:
        stats += f"  groups {record['groups_kept']} ({record['sample_draws']} draws)"
    return stats


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _tensorboard_step(writer: Any, record: dict[str, Any], step: int) -> None:
    if writer is not None:
        for key, value in record.items():
            if key != "step" and isinstance(value, (int, float)):
                writer.add_scalar(f"train/{key}", value, step)


# -- the run ----------------------------------------------------------------------------------------


def train(config: TrainConfig, *, resume: bool = False) -> Path:
    """Run (or resume) one RL training run; returns the output directory."""
    setup, start, changes = prepare(config, resume)
    logs = open_logs(setup, start, resume, changes)
    test_set = (setup.task.problems("test", n=config.eval_prompts, seed=config.seed, difficulties=config.difficulties)
                if config.eval_prompts else [])
    writer = _tensorboard(setup.out / "tb")
    name = config.task if config.data is None else Path(config.data).name
    last_eval = ""
    with step_bar(f"{config.estimator} on {name}", config.steps, start, config.progress) as advance:

        def note(text: str) -> None:  # the stats line during a pause, without counting a step
            advance(text, 0)

        if start == 0 and test_set and config.eval_every:
            last_eval = _evaluate(setup, 0, test_set, logs.evals, writer, note)
        est = setup.est
        for step in range(start + 1, config.steps + 1):
            t0 = time.perf_counter()
            setup.model.eval()  # sampling, the policy pass and the estimator's inputs only read the policy
            batch = _sample_batch(setup, step)  # sample and score, with the filter's draws
            policy, weighed, update = None, {}, {}
            t1 = t2 = t_scored = time.perf_counter()
            if batch.problems:  # else the filter kept nothing after its last draw: no update this step
                policy = _policy_pass(setup, batch)
                t1 = time.perf_counter()
                adv, weighed = _advantages(setup, batch, policy, step)
                t2 = time.perf_counter()
                setup.model.train()
                update = _update(setup, batch, policy, adv, step)
            t3 = time.perf_counter()
            seconds = {"policy_seconds": t1 - t_scored, "advantage_seconds": t2 - t1, "update_seconds": t3 - t2,
                       "step_seconds": t3 - t0}
            share = _rank1_share(setup)
            est.observe(rank1_share=share)  # read by the next batch's weighing (FADE's rank guard)
            record = _record(setup, step, batch, policy, weighed, update, seconds, share)
            logs.metrics.append(record)
            _tensorboard_step(writer, record, step)
            if test_set and config.eval_every and (step % config.eval_every == 0 or step == config.steps):
                last_eval = _evaluate(setup, step, test_set, logs.evals, writer, note)
            if step % config.checkpoint_every == 0 or step == config.steps:
                save_state(setup, step)
                if writer is not None:
                    writer.flush()
            advance(_progress_line(record) + last_eval)
    for log in (logs.metrics, logs.evals):
        log.close()
    if writer is not None:
        writer.close()
    save_policy(setup.model, setup.tokenizer, setup.out / "policy")
    return setup.out


def _tensorboard(directory: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # the testbed extra brings tensorboard; without it, JSONL only
        return None
    return SummaryWriter(log_dir=str(directory))


