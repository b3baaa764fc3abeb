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

from ..columns import read_jsonl
from ..records import DumpError, RunRecords, StepBatch
from .base import Format, ReadOptions, blocks, numbered_files, step_files

__all__ = ["FORMAT"]

_NEMO_FILE = re.compile(r"^train_data_step(\d+)\.jsonl$")


def _read_nemo(where: Path, options: ReadOptions, progress) -> RunRecords:
    numbered = [(-1, where)] if where.is_file() else numbered_files(where, _NEMO_FILE)

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {"rewards": "float"}, required=("rewards",), newest=newest,
                          raw_keys=("content", "advantages", "token_loss_mask"))
        keys = [json.dumps(c[:-1] if isinstance(c, list) else c, sort_keys=True) for c in cols["content"]]
        groups, size = blocks(keys, str(p), options.group_size)
        adv = _token_advantages(p, cols["advantages"], cols["token_loss_mask"])
        return StepBatch(n, cols["rewards"], groups, advantages=adv,
                         prompt_keys=[keys[i] for i in range(0, len(keys), size)], source=str(p))

    run = RunRecords("nemo-rl", str(where), step_files(numbered, read, progress))
    run.notes.append("NeMo-RL groups are consecutive rows of one prompt (all messages but the last)")
    return run


def _token_advantages(p: Path, advantages: list, masks: list) -> np.ndarray | None:
    """A sequence's advantage from its per-token ones: their mean over the loss mask."""
    if all(a is None for a in advantages):
        return None
    out = np.empty(len(advantages))
    for i, (a, m) in enumerate(zip(advantages, masks)):
        a = np.asarray(a if isinstance(a, list) else [a], dtype=np.float64).ravel()
        m = np.ones_like(a) if m is None else np.asarray(m, dtype=np.float64).ravel()[: a.size]
        if a.size == 0 or m.sum() == 0:
            raise DumpError(f"{p}: row {i + 1}: no advantage under the loss mask: expected per-token advantages")
        out[i] = float((a * m).sum() / m.sum())
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
