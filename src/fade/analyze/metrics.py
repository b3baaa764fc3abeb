"""The side file of per-step scalars a run logged beside its dump (``--metrics``): verl's file
logger (``{"step", "data": {...}}``), TRL's ``trainer_state.json`` (its ``log_history``) or
prime-rl's ``metrics.jsonl`` (``{step, ...}``). It gives the entropy FADE is replayed with, the
engine's own per-step numbers the report sets beside fade's, and whether the run filtered groups.
"""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

from .records import DumpError, RunRecords

__all__ = ["check_metrics_file", "read_metrics"]


def check_metrics_file(path: Path) -> None:
    """Refuse a --metrics that is not a regular file before it is opened: reading a FIFO would wait
    for a writer forever, and a folder or a device is no file of metrics."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DumpError(f"--metrics {path}: no such file: expected a file of per-step metrics") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise DumpError(f"--metrics {path} is {kind}: expected a regular file of per-step metrics")


def read_metrics(run: RunRecords, path: Path) -> None:
    """Per-step scalars: verl's file logger ({"step", "data": {...}}), TRL's trainer_state.json
    (its log_history) or prime-rl's metrics.jsonl ({step, ...})."""
    rows: list[tuple[int, dict]] = []
    if path.suffix == ".json":
        try:
            history = json.loads(path.read_text(encoding="utf-8")).get("log_history")
        except (ValueError, AttributeError):
            history = None
        if not isinstance(history, list):
            raise DumpError(f"{path}: no log_history list: expected TRL's trainer_state.json")
        rows = [(int(h["step"]), h) for h in history if isinstance(h, dict) and "step" in h]
    else:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    raise DumpError(f"{path}:{lineno}: not valid JSON: expected one metrics object per line") from None
                if not isinstance(obj, dict) or not isinstance(obj.get("step"), int):
                    raise DumpError(f"{path}:{lineno}: expected an object with an integer 'step'")
                rows.append((obj["step"], obj["data"] if isinstance(obj.get("data"), dict) else obj))
    for step, data in rows:
        for key in ("actor/entropy", "entropy"):
            if isinstance(data.get(key), (int, float)) and math.isfinite(data[key]):
                run.entropy[step] = float(data[key])
                break
        for key in ("frac_reward_zero_std", "reward_std"):
            if isinstance(data.get(key), (int, float)):
                run.engine_metrics.setdefault(step, {})[key] = float(data[key])
        evicted = [k for k, v in data.items() if "filter_groups" in k and isinstance(v, (int, float)) and v > 0]
        if evicted and run.filtered is None:
            run.filtered = (f"the run filtered groups ({evicted[0]} > 0 at step {step}): the groups it dropped are "
                            "not in the dump, so the zero-spread share is a lower bound")


