"""Held-out evaluation of a policy: pass@k per difficulty bucket and the diversity of correct answers.

For each test problem the policy draws ``samples`` completions at temperature 1; the verifier
scores each, and the unbiased estimator (:func:`fade.pass_at_k`) turns the c correct out of n
into pass@k for every k up to n. The number of distinct correct answers per problem (by the
verifier's normal form) measures what pass@k at large k rewards: several ways to be right.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fade.passk import pass_at_k

from .sampling import greedy, sample
from .tasks import Problem, Task

__all__ = [
    "EVAL_KS",
    "decode_completions",
    "ks_text",
    "reported_ks",
    "encode_prompt",
    "held_out_passk",
    "pass_at_k_table",
    "solve_counts",
]

#: The k of pass@k the testbed reports: powers of two up to the 64 samples per prompt.
EVAL_KS = (1, 2, 4, 8, 16, 32, 64)


def reported_ks(samples: int) -> tuple[int, ...]:
    """The k of :data:`EVAL_KS` an evaluation with ``samples`` samples per prompt reports (k <= samples)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive int, got {samples!r}")
    return tuple(k for k in EVAL_KS if k <= samples)


def ks_text(samples: int) -> str:
    """The k an evaluation with ``samples`` samples reports, as a label: ``k = 1, 2, 4, ..., 32``."""
    ks = reported_ks(samples)
    if len(ks) <= 3:
        return "k = " + ", ".join(map(str, ks))
    return f"k = 1, 2, 4, ..., {ks[-1]}"


def encode_prompt(tokenizer: Any, text: str) -> list[int]:
    """Token ids of a prompt, starting with the tokenizer's bos token when it has one."""
    ids = list(tokenizer(text, add_special_tokens=True)["input_ids"])
    bos = tokenizer.bos_token_id
    if bos is not None and (not ids or ids[0] != bos):
        ids.insert(0, bos)
    return ids


def decode_completions(
    tokenizer: Any, completion_ids: torch.Tensor, completion_mask: torch.Tensor, eos_id: int
) -> list[str]:
    """The text of each row up to (not including) its eos."""
    out = []
    for ids, mask in zip(completion_ids.tolist(), completion_mask.tolist()):
        kept = [t for t, m in zip(ids, mask) if m and t != eos_id]
        out.append(tokenizer.decode(kept, skip_special_tokens=True))
    return out


def pass_at_k_table(n: int, correct: Sequence[int], ks: Sequence[int]) -> dict[int, float]:
    """Mean over problems of the unbiased pass@k, for each k <= n."""
    return {k: sum(pass_at_k(n, c, k) for c in correct) / len(correct) for k in ks if k <= n}


@torch.no_grad()
def held_out_passk(
    model: torch.nn.Module,
    tokenizer: Any,
    task: Task,
    problems: Sequence[Problem],
    *,
    samples: int = 64,
    max_new_tokens: int,
    eos_id: int,
    pad_id: int,
    generator: torch.Generator | None = None,
    max_rows: int = 4096,
    on_prompts: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """pass@k (k in :data:`EVAL_KS`, k <= samples) overall and per bucket, and distinct correct answers.

    Returns a flat dict: ``pass@k``, ``pass@k/d{b}``, ``distinct_correct`` (mean per problem),
    ``distinct_correct/d{b}``, ``greedy`` (greedy pass@1), ``entropy`` (mean token entropy of the samples),
    ``n_prompts``,
    ``n_samples``. Prompts decode ``max_rows // samples`` at a time; ``on_prompts(n)`` hears after
    each such chunk how many prompts are done (for a progress display).
    """
    if not problems:
        raise ValueError("held_out_passk needs at least one problem")
    scored = _sample_and_verify(
        model, tokenizer, task, problems, samples=samples, max_new_tokens=max_new_tokens, eos_id=eos_id,
        pad_id=pad_id, generator=generator, max_rows=max_rows, with_greedy=True, on_prompts=on_prompts,
    )
    correct, distinct = scored.correct, scored.distinct

    result: dict[str, float] = {}
    for k, value in pass_at_k_table(samples, correct, EVAL_KS).items():
        result[f"pass@{k}"] = value
    by_bucket: dict[int, list[int]] = defaultdict(list)
    for i, problem in enumerate(problems):
        by_bucket[problem.difficulty].append(i)
    for b, rows in sorted(by_bucket.items()):
        for k, value in pass_at_k_table(samples, [correct[i] for i in rows], EVAL_KS).items():
            result[f"pass@{k}/d{b}"] = value
        result[f"distinct_correct/d{b}"] = sum(distinct[i] for i in rows) / len(rows)
    result["distinct_correct"] = sum(distinct) / len(distinct)
    result["greedy"] = scored.greedy_correct / len(problems)
    result["entropy"] = scored.entropy_sum / max(scored.tokens, 1)
    result["n_prompts"] = len(problems)
    result["n_samples"] = samples
    return result


@dataclass
class _Scored:
    correct: list[int] = field(default_factory=list)  # correct samples per problem
    distinct: list[int] = field(default_factory=list)  # distinct correct answers per problem
    greedy_correct: int = 0
    entropy_sum: float = 0.0
    tokens: int = 0


def _sample_and_verify(
    model: torch.nn.Module, tokenizer: Any, task: Task, problems: Sequence[Problem], *, samples: int,
    max_new_tokens: int, eos_id: int, pad_id: int, generator: torch.Generator | None, max_rows: int, with_greedy: bool,
    on_prompts: Callable[[int], None] | None = None,
) -> _Scored:
    """Sample ``samples`` completions of each problem (``max_rows // samples`` prompts at a time) and verify them."""
    was_training = model.training
    model.eval()
    per_chunk = max(1, max_rows // samples)
    out = _Scored()
    try:
        for start in range(0, len(problems), per_chunk):
            chunk = list(problems[start : start + per_chunk])
            prompts = [encode_prompt(tokenizer, p.prompt) for p in chunk]
            if with_greedy:
                g_ids, g_mask = greedy(model, prompts, max_new_tokens=max_new_tokens, eos_id=eos_id, pad_id=pad_id)
                greedy_texts = decode_completions(tokenizer, g_ids, g_mask, eos_id)
                out.greedy_correct += sum(v.score == 1.0 for v in task.verify_many(chunk, greedy_texts))
            rollouts = sample(
                model, prompts, num_samples=samples, max_new_tokens=max_new_tokens, eos_id=eos_id, pad_id=pad_id,
                generator=generator,
            )
            texts = decode_completions(tokenizer, rollouts.completion_ids, rollouts.completion_mask, eos_id)
            out.entropy_sum += float(rollouts.entropy.sum())
            out.tokens += int(rollouts.completion_mask.sum())
            every = task.verify_many([p for p in chunk for _ in range(samples)], texts)
            for i in range(len(chunk)):
                verdicts = every[i * samples : (i + 1) * samples]
                out.correct.append(sum(v.score == 1.0 for v in verdicts))
                out.distinct.append(len({v.canonical for v in verdicts if v.score == 1.0}))
            if on_prompts is not None:
                on_prompts(len(out.correct))
    finally:
        model.train(was_training)
    return out


@torch.no_grad()
def solve_counts(
    model: torch.nn.Module, tokenizer: Any, task: Task, problems: Sequence[Problem], *, samples: int = 64,
    max_new_tokens: int, eos_id: int, pad_id: int, generator: torch.Generator | None = None, max_rows: int = 4096,
    on_prompts: Callable[[int], None] | None = None,
) -> list[int]:
    """How many of ``samples`` completions of each problem are correct: a per-prompt solve rate is
    ``count / samples``. The calibration of an experiment's regime reads these; ``on_prompts`` as
    for :func:`held_out_passk`."""
    if not problems:
        raise ValueError("solve_counts needs at least one problem")
    return _sample_and_verify(
        model, tokenizer, task, problems, samples=samples, max_new_tokens=max_new_tokens, eos_id=eos_id,
        pad_id=pad_id, generator=generator, max_rows=max_rows, with_greedy=False, on_prompts=on_prompts,
    ).correct
