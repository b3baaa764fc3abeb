"""Supervised pretraining of the testbed's tiny base policy, stopped while it is still imperfect.

RL needs a policy that solves some prompts sometimes: easy ones often, hard ones rarely, and
that finds more answers when it samples more (pass@64 well above pass@1). A tiny Llama trained
by next-token prediction on (prompt, answer) pairs passes through that regime on the way to
solving the task, so ``pretrain`` trains it and stops at the first validation check where the
sampled pass@1 reaches ``target_pass1``. Validation problems come from the train split (the
test split stays unseen); the final report is on the test split. Everything is seeded: the same
seed writes the same weights.

While it trains, ``out`` holds ``pretrain.jsonl`` (one record per step) and, after each
validation check that does not stop it, ``pretrain-checkpoint.pt`` (model, optimizer, schedule,
the answer sampler's state, the step). A killed run continues from that checkpoint with
``resume=True`` (``fade pretrain ... --resume``) and writes the same weights as one that was
never stopped. At the end the policy, ``pretrain.jsonl`` and ``base_eval.json`` replace the
folder in one rename, which also removes the checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import torch

from fade.progress import step_bar

from .checkpoint import JsonlLog, load_checkpoint, save_checkpoint
from .config import PretrainConfig
from .evaluation import encode_prompt, held_out_passk
from .policy import build_policy, parameter_count, resolve_device, save_policy, tiny_llama_config
from .session import generator, seed_for
from .tasks import get_task
from .tokenizer import encode, task_tokenizer

__all__ = ["CHECKPOINT", "LOG", "PretrainConfig", "pretrain"]

CHECKPOINT, LOG = "pretrain-checkpoint.pt", "pretrain.jsonl"
#: Settings a resumed pretraining may change: where it lives, how it reports, and the device.
RESUME_MAY_CHANGE = ("out", "device", "progress")

_VALIDATION_STREAM = 2_000_003
_TEST_STREAM = 3_000_017


def _batch(task, tokenizer, problems, rng: random.Random, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded [bos] prompt answer [eos] rows; the loss covers the answer and eos only."""
    rows, starts = [], []
    for p in problems:
        prompt = encode_prompt(tokenizer, p.prompt)
        answer = encode(tokenizer, task.sft_answer(p, rng))
        rows.append(prompt + answer + [tokenizer.eos_token_id])
        starts.append(len(prompt))
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (row, s) in enumerate(zip(rows, starts)):
        ids[i, : len(row)] = torch.tensor(row)
        labels[i, s : len(row)] = torch.tensor(row[s:])
        mask[i, : len(row)] = 1
    return ids.to(device), mask.to(device), labels.to(device)


def _resume_state(config: PretrainConfig, path: Path, resume: bool, device: torch.device) -> dict[str, Any] | None:
    """The checkpoint to continue from, or None to start; refuses what cannot be continued."""
    if not path.is_file():
        if resume:
            raise ValueError(f"--resume: no {CHECKPOINT} in {path.parent} to resume from (the pretraining finished "
                             "or never reached its first validation check): run it again without --resume")
        return None
    if not resume:
        raise ValueError(f"{path.parent} holds an unfinished pretraining ({CHECKPOINT}): pass --resume to continue it, "
                         "or remove the folder to start over")
    state = load_checkpoint(path, map_location=device)
    saved = state.get("config") or {}
    now = dataclasses.asdict(config)
    changed = {k: (saved.get(k), v) for k, v in now.items() if k not in RESUME_MAY_CHANGE and saved.get(k) != v}
    if changed:
        shown = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
        raise ValueError(f"--resume: {path.parent} was pretrained with other settings ({shown}): rerun with the "
                         f"checkpoint's values or remove the folder to start over")
    return state


def pretrain(config: PretrainConfig, *, resume: bool = False) -> dict[str, Any]:
    """Train, stop in the imperfect regime, save the policy and its test report into ``out``.

    With ``resume`` it continues from the checkpoint a stopped run left in ``out``; without it,
    such a checkpoint is refused rather than overwritten.
    """
    if not 0 < config.target_pass1 < 1:
        raise ValueError(f"target_pass1 must be in (0, 1), got {config.target_pass1!r}")
    for key in ("max_steps", "batch_size", "eval_every", "val_prompts", "val_samples", "test_prompts", "test_samples"):
        value = getattr(config, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")
    device = resolve_device(config.device)
    out = Path(config.out)
    ckpt_path = out / CHECKPOINT
    state = _resume_state(config, ckpt_path, resume, device)
    task = get_task(config.task)
    tokenizer = task_tokenizer(task)
    model_config = tiny_llama_config(
        len(tokenizer), hidden_size=config.hidden_size, num_layers=config.num_layers, num_heads=config.num_heads,
        intermediate_size=config.intermediate_size, max_positions=config.max_positions,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = build_policy(model_config, seed=config.seed).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / config.warmup))
    answer_rng = random.Random(config.seed)
    start, seconds_before = 0, 0.0
    out.mkdir(parents=True, exist_ok=True)
    log = JsonlLog(out / LOG)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        answer_rng.setstate(_python_rng_state(state["answer_rng"]))
        start, seconds_before = int(state["step"]), float(state["seconds"])
        log.truncate_after(start)
    else:
        log.path.unlink(missing_ok=True)
    max_new = task.max_answer_chars + 1
    validation = task.problems("train", n=config.val_prompts, seed=seed_for(config.seed, _VALIDATION_STREAM))
    stopped_at, val = config.max_steps, {}
    t_start = time.perf_counter()
    val_text = ""
    with step_bar("pretrain", config.max_steps, start, config.progress) as advance:
        for step in range(start + 1, config.max_steps + 1):
            problems = task.problems("train", n=config.batch_size, seed=seed_for(config.seed, step))
            ids, mask, labels = _batch(task, tokenizer, problems, answer_rng, device)
            model.train()
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            record: dict[str, Any] = {"step": step, "loss": float(loss.detach())}
            if step % config.eval_every == 0:
                advance(f"loss {record['loss']:.3f}  validating on {config.val_prompts} prompts", 0)
                val = held_out_passk(
                    model, tokenizer, task, validation, samples=config.val_samples, max_new_tokens=max_new,
                    eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id,
                    generator=generator(device, config.seed, _VALIDATION_STREAM),
                )
                record.update({f"val_{k}": v for k, v in val.items() if k.startswith("pass@")})
            log.append(record)
            if "val_pass@1" in record:
                val_text = f"  val pass@1 {record['val_pass@1']:.3f} (stops at {config.target_pass1})"
            advance(f"loss {record['loss']:.3f}{val_text}")
            if val and record.get("val_pass@1", -1.0) >= config.target_pass1:
                stopped_at = step
                break
            if "val_pass@1" in record and step < config.max_steps:
                save_checkpoint(ckpt_path, {
                    "step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(), "answer_rng": _python_rng_tensors(answer_rng),
                    "seconds": seconds_before + time.perf_counter() - t_start, "config": dataclasses.asdict(config),
                })
        seconds = seconds_before + time.perf_counter() - t_start
        test = task.problems("test", n=config.test_prompts, seed=seed_for(config.seed, _TEST_STREAM))

        def tested(prompts: int) -> None:
            advance(
                f"testing the policy of step {stopped_at}: {prompts}/{len(test)} prompts x "
                f"{config.test_samples} samples",
                0,
            )

        tested(0)
        report = held_out_passk(
            model, tokenizer, task, test, samples=config.test_samples, max_new_tokens=max_new,
            eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id,
            generator=generator(device, config.seed, _TEST_STREAM), on_prompts=tested,
        )
    model.config.fade_pretrain = {"task": config.task, "seed": config.seed, "steps": stopped_at}
    summary = {
        "task": config.task,
        "seed": config.seed,
        "steps": stopped_at,
        "seconds": round(seconds, 1),
        "parameters": parameter_count(model),
        "config": dataclasses.asdict(config) | {"out": None, "device": None, "progress": None},
        "test": {k: (round(v, 4) if isinstance(v, float) and math.isfinite(v) else v) for k, v in report.items()},
    }
    # One swap puts the policy, its log and its report in place and retires the checkpoint.
    save_policy(model.cpu(), tokenizer, out, extra_files={
        LOG: log.path.read_text(encoding="utf-8"), "base_eval.json": json.dumps(summary, indent=2) + "\n",
    })
    return summary


def _python_rng_tensors(rng: random.Random) -> dict[str, Any]:
    """A ``random.Random`` state as plain data a weights-only checkpoint can hold."""
    version, internal, gauss = rng.getstate()
    return {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss}


def _python_rng_state(saved: dict[str, Any]) -> tuple:
    return saved["version"], tuple(int(x) for x in saved["internal"].tolist()), saved["gauss"]
