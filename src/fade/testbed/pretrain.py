"""Supervised pretraining of the testbed's tiny base policy, stopped while it is still imperfect.

RL needs a policy that solves some prompts sometimes: easy ones often, hard ones rarely, and
that finds more answers when it samples more (pass@64 well above pass@1). A tiny Llama trained
by next-token prediction on (prompt, answer) pairs passes through that regime on the way to
solving the task, so ``pretrain`` trains it and stops at the first validation check where the
sampled pass@1 reaches ``target_pass1``. Validation problems come from the train split (the
test split stays unseen); the final report is on the test split. Everything is seeded: the same
seed writes the same weights.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fade.progress import step_bar

from .checkpoint import JsonlLog
from .evaluation import encode_prompt, evaluate
from .policy import build_policy, parameter_count, resolve_device, save_policy, tiny_llama_config
from .tasks import get_task
from .tokenizer import encode, task_tokenizer
from .trainer import _generator, _seed_for

__all__ = ["PretrainConfig", "pretrain"]

_VALIDATION_STREAM = 2_000_003
_TEST_STREAM = 3_000_017


@dataclass
class PretrainConfig:
    task: str
    out: str
    seed: int = 0
    max_steps: int = 2000
    batch_size: int = 256
    lr: float = 1e-3
    warmup: int = 20
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 512
    max_positions: int = 64
    eval_every: int = 50
    target_pass1: float = 0.3
    val_prompts: int = 200
    val_samples: int = 16
    test_prompts: int = 200
    test_samples: int = 64
    device: str = "auto"
    progress: bool = True


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


def pretrain(config: PretrainConfig) -> dict[str, Any]:
    """Train, stop in the imperfect regime, save the policy and its test report into ``out``."""
    if not 0 < config.target_pass1 < 1:
        raise ValueError(f"target_pass1 must be in (0, 1), got {config.target_pass1!r}")
    for key in ("max_steps", "batch_size", "eval_every", "val_prompts", "val_samples", "test_prompts", "test_samples"):
        value = getattr(config, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")
    device = resolve_device(config.device)
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
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    # save_policy replaces the whole folder at the end, so the log grows beside it and moves in after.
    log = JsonlLog(out.parent / f".{out.name}.pretrain.jsonl")
    log.path.unlink(missing_ok=True)
    max_new = task.max_answer_chars + 1
    validation = task.problems("train", n=config.val_prompts, seed=_seed_for(config.seed, _VALIDATION_STREAM))
    answer_rng = random.Random(config.seed)
    stopped_at, val = config.max_steps, {}
    t_start = time.perf_counter()
    val_text = ""
    with step_bar("pretrain", config.max_steps, 0, config.progress) as advance:
        for step in range(1, config.max_steps + 1):
            problems = task.problems("train", n=config.batch_size, seed=_seed_for(config.seed, step))
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
                val = evaluate(
                    model, tokenizer, task, validation, samples=config.val_samples, max_new_tokens=max_new,
                    eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id,
                    generator=_generator(device, config.seed, _VALIDATION_STREAM),
                )
                record.update({f"val_{k}": v for k, v in val.items() if k.startswith("pass@")})
            log.append(record)
            if "val_pass@1" in record:
                val_text = f"  val pass@1 {record['val_pass@1']:.3f} (stops at {config.target_pass1})"
            advance(f"loss {record['loss']:.3f}{val_text}")
            if val and record.get("val_pass@1", -1.0) >= config.target_pass1:
                stopped_at = step
                break
    seconds = time.perf_counter() - t_start
    test = task.problems("test", n=config.test_prompts, seed=_seed_for(config.seed, _TEST_STREAM))
    report = evaluate(
        model, tokenizer, task, test, samples=config.test_samples, max_new_tokens=max_new,
        eos_id=tokenizer.eos_token_id, pad_id=tokenizer.pad_token_id, generator=_generator(device, config.seed, _TEST_STREAM),
    )
    model.config.fade_pretrain = {"task": config.task, "seed": config.seed, "steps": stopped_at}
    save_policy(model.cpu(), tokenizer, out)
    os.replace(log.path, out / "pretrain.jsonl")
    summary = {
        "task": config.task,
        "seed": config.seed,
        "steps": stopped_at,
        "seconds": round(seconds, 1),
        "parameters": parameter_count(model),
        "config": dataclasses.asdict(config) | {"out": None, "device": None, "progress": None},
        "test": {k: (round(v, 4) if isinstance(v, float) and math.isfinite(v) else v) for k, v in report.items()},
    }
    (out / "base_eval.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
