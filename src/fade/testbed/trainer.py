"""The testbed's RL trainer: sample, verify, weigh with an advantage, take a PPO-clip step.

One step, top to bottom in :func:`train`:

1. draw ``prompts_per_step`` training problems and sample ``group_size`` completions of each
   at temperature 1 with a KV cache;
2. score every completion with the task's verifier (reward 1 or 0);
3. recompute the old log-probs and the policy's mean token entropy in one no-grad pass (the
   order verl uses), and feed the entropy to the estimator with ``observe``;
4. compute the advantages with any registered estimator, by name and parameters;
5. update with the PPO-clip policy-gradient loss (``epochs`` passes over ``minibatches``
   minibatches, token-mean aggregation by default, optional KL to the base policy), AdamW or
   plain SGD, and gradient clipping;
6. log the step's metrics (reward and solve rate per difficulty bucket, entropy, norms, the
   output head's rank-1 share, the batch's gradient-mass diagnostics, the terms of the
   first-order entropy formula measured before the update, the estimator's schedule, timings),
   evaluate every ``eval_every`` steps, checkpoint every
   ``checkpoint_every`` steps.

All randomness of step t comes from generators seeded by (seed, t), and a checkpoint holds the
model, optimizer, estimator state, RNG states, step and configuration: a resumed run's metrics
equal an uninterrupted run's. Resuming with other settings is refused when they would change
what the run computes (see :data:`RESUME_MAY_CHANGE`); the settings that may change are recorded
in ``resumes.jsonl``, one line per resume. A checkpoint whose digest does not match or whose model
holds NaN or inf is refused, and temporary files a kill left behind are removed when the run
starts again.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import fade
from fade.atomic import remove_orphaned_temp_files, write_json_atomic
from fade.geometry import rank1_share
from fade.mass import batch_diagnostics, carries_signal
from fade.progress import step_bar

from .checkpoint import JsonlLog, load_checkpoint, save_checkpoint
from .config import OPTIMIZERS, TrainConfig
from .evaluation import decode_completions, encode_prompt, evaluate
from .policy import load_policy, resolve_device, save_policy
from .runlog import CONFIG_FILE, EVAL_FILE, METRICS_FILE, SCHEDULE, bucket_key
from .sampling import greedy, sample, sequence_logprobs
from .tasks import Problem, Task, get_task

__all__ = ["OPTIMIZERS", "RESUME_MAY_CHANGE", "TrainConfig", "base_model_dir", "resume_changes", "token_covariance", "train"]

CHECKPOINT = "checkpoint.pt"
RUN_FILE, RESUMES_FILE = CONFIG_FILE, "resumes.jsonl"
#: Settings a resumed run may change, because the training trajectory does not depend on them:
#: where the run lives and how it reports (out, progress, checkpoint_every, eval_every: evaluation
#: draws from its own generator), the device (a different one continues the run but draws other
#: random numbers from then on, so not bit for bit), and steps (to extend a run, or end it early;
#: never below the checkpoint's step). Any other change (lr, seed, group size, estimator and its
#: arguments, task, model, data, optimizer, eval_prompts and eval_samples, which define what
#: eval.jsonl measures) is refused.
RESUME_MAY_CHANGE = ("out", "progress", "checkpoint_every", "eval_every", "device", "steps")
_EVAL_STREAM = 1_000_003  # keeps evaluation randomness apart from the training steps'


def base_model_dir(task: str) -> Path:
    """The base policy shipped for a built-in task (written by ``fade pretrain``)."""
    return Path(__file__).parent / "base" / task


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))  # tuples become lists, as in run.json


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def resume_changes(saved: dict[str, Any], config: TrainConfig, step: int, where: str | Path) -> dict[str, tuple[Any, Any]]:
    """The settings ``config`` changes from a checkpoint's ``saved`` config, as {key: (old, new)}.

    Raises ValueError naming every change outside :data:`RESUME_MAY_CHANGE`, and a ``steps``
    below the checkpoint's ``step``. A setting the checkpoint predates reads as its default.
    """
    now = _as_json(dataclasses.asdict(config))
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    defaults = {
        name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        for name, f in fields.items() if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }
    before = _as_json({k: saved.get(k, defaults.get(k)) for k in now})
    changed = {k: (before[k], now[k]) for k in now if before[k] != now[k]}
    refused = [k for k in changed if k not in RESUME_MAY_CHANGE]
    if refused:
        shown = ", ".join(f"{k}: {_show(changed[k][0])} -> {_show(changed[k][1])}" for k in refused)
        raise ValueError(
            f"--resume: {where} was trained with other settings ({shown}); resuming would splice two different "
            f"runs: rerun with the checkpoint's values or choose another --out (only {', '.join(RESUME_MAY_CHANGE)} "
            "may change on resume)"
        )
    if config.steps < step:
        raise ValueError(f"--resume: --steps {config.steps} is below the checkpoint's step {step} in {where}: "
                         f"pass --steps {step} or more")
    return changed


def _check_finite(state: dict[str, Any], where: Path) -> None:
    bad = [name for name, t in state["model"].items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise ValueError(
            f"{where}: the model saved at step {state['step']} holds NaN or inf (in {', '.join(bad[:3])}{more}): the "
            "run diverged before this checkpoint and cannot be resumed from it; start a new run (a lower --lr)"
        )


def _remove_orphans(out: Path) -> None:
    """Delete what a kill mid-write left in the run's folder: the atomic writer's temporary files
    of the run's own files, and save_policy's staging folders (``.policy.tmp-*``)."""
    remove_orphaned_temp_files(out, (CHECKPOINT, RUN_FILE, METRICS_FILE, EVAL_FILE))
    for entry in out.glob(".policy.tmp-*"):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def _check_learns(est: fade.Estimator, config: TrainConfig) -> None:
    """Refuse a setting under which every advantage of every batch is 0, so the run would learn nothing."""
    spec = fade.format_spec(est.name, config.estimator_args)
    if carries_signal(est, config.group_size):  # an estimator that cannot take groups this size raises here
        return
    if config.group_size == 1:
        raise ValueError(
            f"--group-size 1 gives every rollout of {spec} an advantage of 0 (one completion per prompt has no other "
            "to compare with): the run would train nothing; use --group-size 2 or more"
        )
    raise ValueError(
        f"{spec} gives every rollout an advantage of 0 at --group-size {config.group_size}, whatever the rewards: the "
        "run would train nothing; use a larger --group-size or other estimator parameters"
    )


def _seed_for(seed: int, stream: int) -> int:
    digest = hashlib.sha256(f"{seed}:{stream}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _generator(device: torch.device, seed: int, stream: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(_seed_for(seed, stream))


def _load_task(config: TrainConfig) -> Task:
    if config.data is not None:
        from .datasets import FileTask  # local: only --data runs need it

        return FileTask(config.data, verifier=config.verifier)
    return get_task(config.task)


def _head(model: torch.nn.Module) -> torch.Tensor:
    return model.get_output_embeddings().weight


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


def _optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":
        # A plain step, theta -= lr * grad (plus lr * weight_decay * theta when asked).
        return torch.optim.SGD(model.parameters(), lr=config.lr, momentum=0.0, dampening=0.0,
                               weight_decay=config.weight_decay, nesterov=False)
    return torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
        betas=(config.adam_beta1, config.adam_beta2), eps=config.adam_eps,
    )


def _policy_loss(
    new_lp: torch.Tensor,
    old_lp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float,
    denom: float,
    agg: str,
    ref_lp: torch.Tensor | None,
    kl_coef: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO-clip loss of the given rows, summed and divided by ``denom`` (tokens or sequences)."""
    ratio = torch.exp(new_lp - old_lp)
    a = adv.unsqueeze(1)
    per_token = -torch.minimum(ratio * a, ratio.clamp(1 - clip_eps, 1 + clip_eps) * a)
    kl = torch.zeros_like(per_token)
    if ref_lp is not None:
        # k3 estimator of KL(pi || pi_ref): non-negative, unbiased, low variance.
        log_r = ref_lp - new_lp
        kl = torch.exp(log_r) - log_r - 1
        per_token = per_token + kl_coef * kl
    m = mask.to(per_token.dtype)
    if agg == "token-mean":
        loss = (per_token * m).sum() / denom
    else:
        loss = ((per_token * m).sum(1) / m.sum(1).clamp_min(1)).sum() / denom
    clipped = ((ratio - 1).abs() > clip_eps).to(m.dtype)
    return loss, (clipped * m).sum(), (kl.detach() * m).sum()


def train(config: TrainConfig, *, resume: bool = False) -> Path:
    """Run (or resume) one RL training run; returns the output directory."""
    config.validate()
    out = Path(config.out)
    ckpt_path = out / CHECKPOINT
    if ckpt_path.exists() and not resume:
        raise ValueError(f"{out} already holds a run (found {CHECKPOINT}): pass --resume to continue it or choose another --out")
    if resume and not ckpt_path.exists():
        raise ValueError(f"--resume: no {CHECKPOINT} in {out} to resume from")
    # Everything that can be refused is checked before the folder is created or touched.
    est = fade.estimator(config.estimator, **config.estimator_args)
    _check_learns(est, config)
    device = resolve_device(config.device)
    task = _load_task(config)
    model_dir = Path(config.model) if config.model else base_model_dir(task.base or config.task)
    if config.model is None and not (model_dir / "config.json").is_file():
        raise ValueError(
            f"no base policy is shipped for task {config.task!r}: write one with "
            f"`fade pretrain --task {config.task} --out DIR` and pass --model DIR"
        )
    state, start, changes = None, 0, {}
    if resume:
        state = load_checkpoint(ckpt_path, map_location=device)
        start = int(state["step"])
        changes = resume_changes(state.get("config") or {}, config, start, out)
        _check_finite(state, ckpt_path)
    model, tokenizer = load_policy(model_dir, device=device)
    if tokenizer is None:
        raise ValueError(f"{model_dir} holds no tokenizer: the trainer needs one to encode prompts and decode answers")
    eos_id = tokenizer.eos_token_id
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id
    if config.max_new_tokens is not None:
        max_new = config.max_new_tokens
    else:
        max_new = task.max_answer_chars + 1 if config.model is None else max(task.max_answer_chars * 4, 16)
    optimizer = _optimizer(model, config)
    ref_model = copy.deepcopy(model).eval().requires_grad_(False) if config.kl_coef > 0 else None
    head0 = _head(model).detach().clone()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        est.load_state_dict(state["estimator"])
        head0 = state["head0"].to(device)
        _set_rng_states(state["rng"])
    out.mkdir(parents=True, exist_ok=True)
    _remove_orphans(out)
    metrics_log, eval_log = JsonlLog(out / METRICS_FILE), JsonlLog(out / EVAL_FILE)
    if resume:
        metrics_log.truncate_after(start)
        eval_log.truncate_after(start)
        changed = {k: list(v) for k, v in changes.items() if k != "progress"}
        JsonlLog(out / RESUMES_FILE).append({"step": start, "changed": changed})
    else:
        for log in (metrics_log, eval_log, JsonlLog(out / RESUMES_FILE)):
            log.path.unlink(missing_ok=True)
    write_json_atomic(out / RUN_FILE, dataclasses.asdict(config))

    test_set = task.problems("test", n=config.eval_prompts, seed=config.seed) if config.eval_prompts else []
    writer = _tensorboard(out / "tb")

    last_eval = ""

    def run_eval(step: int, note: Callable[[str], None]) -> None:
        nonlocal last_eval
        if not test_set:
            return

        def done(prompts: int) -> None:
            note(f"evaluating at step {step}: {prompts}/{len(test_set)} prompts x {config.eval_samples} samples")

        done(0)
        result = evaluate(
            model, tokenizer, task, test_set, samples=config.eval_samples, max_new_tokens=max_new,
            eos_id=eos_id, pad_id=pad_id, generator=_generator(device, config.seed, _EVAL_STREAM), on_prompts=done,
        )
        record = {"step": step, **result}
        eval_log.append(record)
        last_eval = f"  pass@1 {result['pass@1']:.3f} (step {step})"
        if writer is not None:
            for key, value in result.items():
                writer.add_scalar(f"eval/{key}", value, step)

    def checkpoint(step: int) -> None:
        save_checkpoint(ckpt_path, {
            "step": step,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "estimator": est.state_dict(),
            "head0": head0,
            "rng": _rng_states(),
            "config": dataclasses.asdict(config),
        })

    wants = {*est.spec.needs, *est.spec.uses}

    def extra_inputs(rollouts, problems: list[Problem], prompts: list[list[int]]) -> dict[str, torch.Tensor]:
        """Per-rollout inputs the estimator needs or uses: response lengths, ReMax's greedy baseline."""
        inputs: dict[str, torch.Tensor] = {}
        if "lengths" in wants:
            inputs["lengths"] = rollouts.lengths.to("cpu", torch.float32)
        if "baseline_rewards" in wants:
            ids, mask = greedy(model, prompts, max_new_tokens=max_new, eos_id=eos_id, pad_id=pad_id)
            texts = decode_completions(tokenizer, ids, mask, eos_id)
            per_prompt = torch.tensor([v.score for v in task.verify_many(problems, texts)], dtype=torch.float32)
            inputs["baseline_rewards"] = per_prompt[rollouts.prompt_index.cpu()]
        return inputs

    name = config.task if config.data is None else Path(config.data).name
    with step_bar(f"{config.estimator} on {name}", config.steps, start, config.progress) as advance:

        def note(text: str) -> None:  # the stats line during a pause, without counting a step
            advance(text, 0)

        if start == 0 and config.eval_every:
            run_eval(0, note)
        model.train()
        for step in range(start + 1, config.steps + 1):
            t0 = time.perf_counter()
            # 1. sample G completions of each drawn prompt
            problems = task.problems("train", n=config.prompts_per_step, seed=_seed_for(config.seed, step))
            gen = _generator(device, config.seed, step)
            model.eval()
            prompts = [encode_prompt(tokenizer, p.prompt) for p in problems]
            rollouts = sample(
                model, prompts, num_samples=config.group_size,
                max_new_tokens=max_new, eos_id=eos_id, pad_id=pad_id, temperature=config.temperature, generator=gen,
            )
            t1 = time.perf_counter()
            # 2. verify
            texts = decode_completions(tokenizer, rollouts.completion_ids, rollouts.completion_mask, eos_id)
            owner = rollouts.prompt_index.tolist()
            rewards = torch.tensor([v.score for v in task.verify_many([problems[i] for i in owner], texts)], dtype=torch.float32)
            difficulty = torch.tensor([problems[i].difficulty for i in owner])
            # 3. old log-probs and the policy's entropy on this batch
            p_ids, p_mask = rollouts.prompt_ids, rollouts.prompt_mask
            c_ids, c_mask = rollouts.completion_ids, rollouts.completion_mask
            with torch.no_grad():
                old_lp, tok_entropy = sequence_logprobs(model, p_ids, p_mask, c_ids, c_mask, temperature=config.temperature, with_entropy=True)
                ref_lp = None
                if ref_model is not None:
                    ref_lp, _ = sequence_logprobs(ref_model, p_ids, p_mask, c_ids, c_mask, temperature=config.temperature)
            tokens = int(c_mask.sum())
            entropy = float(tok_entropy.sum()) / max(tokens, 1)
            est.observe(entropy=entropy, step=step - 1)
            model.train()
            # 4. advantages
            t2 = time.perf_counter()
            prompt_ids = rollouts.prompt_index.cpu()
            adv = est(rewards, prompt_ids, **extra_inputs(rollouts, problems, prompts))
            t3 = time.perf_counter()
            # On the rewards as the estimator reads them, as verl and TRL log them.
            diagnostics = batch_diagnostics(est, adv, rewards, prompt_ids)
            # The first-order entropy formula's terms on this batch, before the update (docs/method.md, section 4).
            cov_adv_logp = token_covariance(adv, old_lp, c_mask)
            mass_entropy_term = (float(diagnostics["positive_mass"]) - float(diagnostics["negative_mass"])) * entropy
            adv_dev = adv.to(device=device, dtype=torch.float32)
            # 5. PPO-clip update
            rows = rewards.numel()
            clip_sum = kl_sum = 0.0
            grad_norms = []
            for _ in range(config.epochs):
                order = torch.randperm(rows, generator=torch.Generator().manual_seed(_seed_for(config.seed, -step)))
                for mb in order.chunk(config.minibatches):
                    mb = mb.to(device)
                    denom = float(c_mask[mb].sum()) if config.loss_agg == "token-mean" else float(mb.numel())
                    # Rows with zero advantage add nothing to the clipped loss: skip them unless KL needs them.
                    active = mb if ref_lp is not None else mb[adv_dev[mb] != 0]
                    optimizer.zero_grad(set_to_none=True)
                    if active.numel() > 0:
                        new_lp, _ = sequence_logprobs(model, p_ids[active], p_mask[active], c_ids[active], c_mask[active], temperature=config.temperature)
                        loss, clipped, kl = _policy_loss(
                            new_lp, old_lp[active], adv_dev[active], c_mask[active], config.clip_eps, max(denom, 1.0),
                            config.loss_agg, None if ref_lp is None else ref_lp[active], config.kl_coef,
                        )
                        loss.backward()
                        clip_sum += float(clipped)
                        kl_sum += float(kl)
                    grad_norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)))
                    optimizer.step()
            t4 = time.perf_counter()
            # 6. metrics
            share = rank1_share(_head(model).detach() - head0)
            est.observe(rank1_share=share)
            record: dict[str, Any] = {
                "step": step,
                "reward_mean": float(rewards.mean()),
                "solve_rate": float((rewards == 1).float().mean()),
            }
            for b in sorted(set(difficulty.tolist())):
                sel = difficulty == b
                record[bucket_key("reward_mean", b)] = float(rewards[sel].mean())
                record[bucket_key("solve_rate", b)] = float((rewards[sel] == 1).float().mean())
            record.update({
                "entropy": entropy,
                "param_norm": _norm(model.parameters()),
                "grad_norm": grad_norms[-1],
                "rank1_share": share,
                **diagnostics,
                "cov_adv_logp": cov_adv_logp,
                "mass_entropy_term": mass_entropy_term,
                "entropy_drive": 0.0 - (mass_entropy_term + cov_adv_logp),  # 0.0 -: never a -0.0
                "clip_fraction": clip_sum / max(tokens * config.epochs, 1),
                "kl": kl_sum / max(tokens * config.epochs, 1) if ref_lp is not None else None,
                "completion_tokens": tokens,
                "lr": config.lr,
            })
            for key in SCHEDULE:
                if key in est.last:
                    record[key] = est.last[key]
            record.update({
                "sample_seconds": t1 - t0,
                "advantage_seconds": t3 - t2,
                "update_seconds": t4 - t3,
                "step_seconds": time.perf_counter() - t0,
            })
            metrics_log.append(record)
            if writer is not None:
                for key, value in record.items():
                    if key != "step" and isinstance(value, (int, float)):
                        writer.add_scalar(f"train/{key}", value, step)
            if config.eval_every and (step % config.eval_every == 0 or step == config.steps):
                run_eval(step, note)
            if step % config.checkpoint_every == 0 or step == config.steps:
                checkpoint(step)
                if writer is not None:
                    writer.flush()
            stats = f"reward {record['reward_mean']:.3f}  entropy {record['entropy']:.3f}"
            if record.get("alpha") is not None:
                stats += f"  alpha {record['alpha']:.2f}  delta {record['delta']:.2f}"
            advance(stats + last_eval)
    if writer is not None:
        writer.close()
    save_policy(model, tokenizer, out / "policy")
    return out


def _rng_states() -> dict[str, Any]:
    """The global generators' states. Training draws from generators seeded by (seed, step), so
    these only matter to code outside the loop that uses the globals; they are kept anyway."""
    name, key, pos, has_gauss, cached = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": [name, torch.from_numpy(key.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_states(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    name, key, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, key.numpy().astype(np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _tensorboard(directory: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # the testbed extra brings tensorboard; without it, JSONL only
        return None
    return SummaryWriter(log_dir=str(directory))


