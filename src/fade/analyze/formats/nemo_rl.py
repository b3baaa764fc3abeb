"""NeMo-RL's training data files (``train_data_step{N}.jsonl``).

Each line is one rollout with ``content`` (its messages), ``rewards`` and per-token
``advantages`` under ``token_loss_mask``. There is no group id: the batch is built by repeating
each prompt ``num_generations_per_prompt`` times in a row, so a group is a consecutive block of
one prompt (all messages but the last), and a rollout's advantage is the mean of its per-token
ones over the loss mask.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..columns import read_jsonl, shown
from ..records import DumpError, RunRecords, StepBatch
from .base import Format, ReadOptions, blocks, numbered_files, step_files

__all__ = ["FORMAT"]

_NEMO_FILE = re.compile(r"^train_data_step(\d+)\.jsonl$")


def _read_nemo(where: Path, options: ReadOptions, progress) -> RunRecords:
    numbered = [(-1, where)] if where.is_file() else numbered_files(where, _NEMO_FILE)

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {"rewards": "float"}, required=("rewards",), newest=newest,
                          raw_keys=("content", "advantages", "token_loss_mask"), lines=True)
        keys = [_prompt_key(f"{p}:{line}", c) for line, c in zip(cols["__line__"].tolist(), cols["content"])]
        groups, size = blocks(keys, str(p), options.group_size)
        adv = _token_advantages(p, cols["advantages"], cols["token_loss_mask"], cols["__line__"].tolist())
        return StepBatch(n, cols["rewards"], groups, advantages=adv,
                         prompt_keys=[keys[i] for i in range(0, len(keys), size)], source=str(p))

    run = RunRecords("nemo-rl", str(where), step_files(numbered, read, progress))
    run.notes.append("NeMo-RL groups are consecutive rows of one prompt (all messages but the last)")
    return run


def _prompt_key(where: str, content) -> str:
    """A rollout's prompt: its messages but the last (the response), as JSON."""
    if not isinstance(content, list):
        raise DumpError(f"{where}: {'no content' if content is None else f'content is {shown(content)}'}: "
                        "expected the rollout's messages, a list (the prompt's, then the response)")
    try:
        return json.dumps(content[:-1], sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise DumpError(f"{where}: content that is no JSON value ({exc}): expected the rollout's messages") from None


def _numbers(value) -> bool:
    return isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)


def _token_advantages(p: Path, advantages: list, masks: list, lines: list[int]) -> np.ndarray | None:
    """A sequence's advantage from its per-token ones: their mean over the loss mask, one 0/1 entry
    per token (a single number is the sequence's own)."""
    if all(a is None for a in advantages):
        return None
    out = np.empty(len(advantages))
    for i, (a, m) in enumerate(zip(advantages, masks)):
        where = f"{p}:{lines[i]}"
        if a is None:
            raise DumpError(f"{where}: no advantages while other lines have them: expected them on every line or none")
        scalar = isinstance(a, (int, float)) and not isinstance(a, bool)
        if not scalar and not _numbers(a):
            raise DumpError(f"{where}: advantages is {shown(a)}: expected a list of numbers, one per token")
        try:
            values = np.asarray([a] if scalar else a, dtype=np.float64)
        except OverflowError:  # an integer past the largest float
            values = np.array([np.inf])
        if not np.isfinite(values).all():
            bad = a if scalar else a[int(np.flatnonzero(~np.isfinite(values))[0])]
            raise DumpError(f"{where}: an advantage of {shown(bad)}: expected finite numbers")
        if scalar:
            out[i] = values[0]
            continue
        if m is None:
            mask = np.ones_like(values)
        elif not isinstance(m, list) or not all(isinstance(x, (int, float)) and x in (0, 1) for x in m):
            raise DumpError(f"{where}: token_loss_mask is {shown(m)}: expected a list of 0 and 1, one per token")
        elif len(m) != len(a):
            raise DumpError(f"{where}: {len(a)} advantages and {len(m)} token_loss_mask entries: expected one mask "
                            "entry per token")
        else:
            mask = np.asarray(m, dtype=np.float64)
        if mask.sum() == 0:
            raise DumpError(f"{where}: no advantage under the loss mask: expected per-token advantages")
        out[i] = float((values * mask).sum() / mask.sum())
    return out


FORMAT = Format(
    name="nemo-rl",
    engine="NeMo-RL 7ea279a",
    writer=("nemo_rl/utils/logger.py:1071-1100 (log_batched_dict_as_jsonl)",
            "nemo_rl/algorithms/grpo.py:3632-3653 (the fields), 2846-2852 (repeat_interleave: the groups)"),
    layout="NeMo-RL's train_data_stepN.jsonl",
    keys="NeMo-RL's content/rewards",
    find=lambda folder: folder if numbered_files(folder, _NEMO_FILE) else None,
    claims=lambda path, keys: path.suffix.lower() in (".jsonl", ".json") and {"content", "rewards"} <= keys,
    read=_read_nemo,
)
