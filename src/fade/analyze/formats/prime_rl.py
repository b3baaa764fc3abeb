"""prime-rl's rollout traces (its file monitor): ``rollouts/step_N/train/{effective,all}/traces.jsonl``.

Each line is one episode (``verifiers``' ``Episode.to_record()``): ``group.id`` is its group,
``task.key`` names the prompt across steps, ``run.work.step`` the step, and the reward is the final
trace's sum of score x weight over its reward functions.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..columns import encode_keys, read_jsonl
from ..records import DumpError, RunRecords, StepBatch
from .base import Format, ReadOptions, one_per_step, step_files

__all__ = ["FORMAT"]

_PRIME_DIR = re.compile(r"^step_(\d+)$")


def _read_prime(where: Path, options: ReadOptions, progress) -> RunRecords:
    split = options.prime_split
    numbered = one_per_step(sorted(
        (int(m.group(1)), d / "train" / split / "traces.jsonl")
        for d in where.iterdir() if d.is_dir() and (m := _PRIME_DIR.match(d.name))
        and (d / "train" / split / "traces.jsonl").is_file()
    ), where)

    def read(n: int, p: Path, newest: bool) -> StepBatch:
        cols = read_jsonl(p, {}, newest=newest, raw_keys=("group", "task", "traces", "run"))
        rewards, gkeys, tkeys = [], [], []
        for row, (group, task, traces, run) in enumerate(zip(cols["group"], cols["task"], cols["traces"], cols["run"])):
            where_row = f"{p}: row {row + 1}"
            if not isinstance(group, dict) or "id" not in group:
                raise DumpError(f"{where_row}: no group.id: expected prime-rl's episode record")
            step = ((run or {}).get("work") or {}).get("step")
            if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step != n):
                raise DumpError(f"{where_row}: run.work.step {step}: expected {n}, as the folder step_{n} names it")
            if not traces:
                raise DumpError(f"{where_row}: no traces: expected at least one trace with rewards")
            total = 0.0
            for name, r in (traces[-1].get("rewards") or {}).items():
                if not isinstance(r, dict) or not isinstance(r.get("score"), (int, float)):
                    raise DumpError(f"{where_row}: reward {name!r} is {r!r}: expected {{score, weight}}")
                total += float(r["score"]) * float(r.get("weight", 1.0))
            if not math.isfinite(total):
                raise DumpError(f"{where_row}: reward {total!r}: expected a finite number")
            rewards.append(total)
            gkeys.append(str(group["id"]))
            tkeys.append(str((task or {}).get("key", group["id"])))
        groups, _ = encode_keys(gkeys)
        first: dict[int, str] = {}
        for g, t in zip(groups.tolist(), tkeys):
            first.setdefault(g, t)
        return StepBatch(n, np.asarray(rewards, dtype=np.float64), groups,
                         prompt_keys=[first[g] for g in range(len(first))], source=str(p))

    if not numbered:
        raise DumpError(f"{where}: no step_N/train/{split}/traces.jsonl: expected prime-rl's rollouts folder")
    return RunRecords("prime-rl", str(where), step_files(numbered, read, progress))




def _find(folder: Path) -> Path | None:
    where = folder / "rollouts" if (folder / "rollouts").is_dir() else folder
    return where if any(p.is_dir() and _PRIME_DIR.match(p.name) for p in where.iterdir()) else None


FORMAT = Format(
    name="prime-rl",
    engine="prime-rl 559b447 (verifiers a60a606)",
    writer=("src/prime_rl/monitors/file.py:43-57 (the files)",
            "verifiers/v1/episode.py:85-155 (Episode.to_record: the line)",
            "verifiers/v1/trace.py:135-141, 413 (the reward: score x weight)"),
    layout="prime-rl's rollouts/step_N/",
    keys="prime-rl's group/task/traces",
    find=_find,
    claims=lambda path, keys: path.suffix.lower() in (".jsonl", ".json") and {"group", "task", "traces"} <= keys,
    read=_read_prime,
)
