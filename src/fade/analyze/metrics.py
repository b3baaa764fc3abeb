"""The side file of per-step scalars a run logged beside its dump (``--metrics``): verl's file
logger (``{"step", "data": {...}}``), TRL's ``trainer_state.json`` (its ``log_history``) or
prime-rl's ``metrics.jsonl`` (``{step, ...}``). It gives the entropy FADE is replayed with, the
engine's own per-step numbers the report sets beside fade's, and whether the run filtered groups.

A JSON-lines file is read once, as a dump's file is (:func:`~fade.analyze.columns.read_lines`: a
live run's unfinished last line is skipped with a warning). A step that is no int64 integer, and an
entropy that is not a finite number >= 0, stop the analysis naming the line (or the
``log_history`` entry): FADE would be replayed with it.
"""

from __future__ import annotations

import math
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fade import jsonl

from .columns import INT64_MAX, INT64_MIN, read_lines, shown
from .records import DumpError, RunRecords, dump_errors

__all__ = ["ENTROPY_KEYS", "check_metrics_file", "history_step", "read_metrics", "trainer_state"]

#: The keys of the mean token entropy, in the order they are looked for: verl's, then TRL's and prime-rl's.
ENTROPY_KEYS = ("actor/entropy", "entropy")
#: The engine's own per-step numbers the report sets beside fade's.
ENGINE_KEYS = ("frac_reward_zero_std", "reward_std")


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


def trainer_state(path: Path) -> dict:
    """TRL's ``trainer_state.json``, checked to hold a ``log_history`` list."""
    with dump_errors():
        state = jsonl.loads(path.read_bytes(), str(path), "TRL's trainer_state.json")
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise DumpError(f"{path}: no log_history list: expected TRL's trainer_state.json")
    return state


def history_step(where: str, value: Any) -> int:
    """A logged step: an integer within int64, or an error naming ``where`` it was logged."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DumpError(f"{where}: step {shown(value)}: expected an integer")
    if not INT64_MIN <= value <= INT64_MAX:
        raise DumpError(f"{where}: step {shown(value)}: expected an integer within int64")
    return value


def _rows(path: Path) -> Iterator[tuple[str, int, dict]]:
    """(where, step, the step's scalars) for each logged step of the file."""
    if path.suffix == ".json":
        for i, entry in enumerate(trainer_state(path)["log_history"]):
            if isinstance(entry, dict) and "step" in entry:
                where = f"{path}: log_history[{i}]"
                yield where, history_step(where, entry["step"]), entry
        return
    with dump_errors():
        for lineno, obj in read_lines(path, newest=True, stacklevel=5).records("one metrics object per line"):
            where = f"{path}:{lineno}"
            if "step" not in obj:
                raise DumpError(f"{where}: expected an object with an integer 'step'")
            yield where, history_step(where, obj["step"]), obj["data"] if isinstance(obj.get("data"), dict) else obj


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_metrics(run: RunRecords, path: Path) -> None:
    """Per-step scalars: verl's file logger ({"step", "data": {...}}), TRL's trainer_state.json
    (its log_history) or prime-rl's metrics.jsonl ({step, ...})."""
    for where, step, data in _rows(path):
        key = next((k for k in ENTROPY_KEYS if data.get(k) is not None), None)
        if key is not None:
            value = data[key]
            try:
                good = _number(value) and math.isfinite(value) and value >= 0
            except OverflowError:  # an integer past the largest float
                good = False
            if not good:
                raise DumpError(f"{where}: {key!r} is {shown(value)}: expected a mean token entropy, a finite number "
                                ">= 0 (FADE is replayed with it)")
            run.entropy[step] = float(value)
        for name in ENGINE_KEYS:
            if _number(data.get(name)):
                try:
                    run.engine_metrics.setdefault(step, {})[name] = float(data[name])
                except OverflowError:
                    raise DumpError(f"{where}: {name!r} is {shown(data[name])}: expected a number within the float "
                                    "range") from None
        evicted = [k for k, v in data.items() if "filter_groups" in k and _number(v) and v > 0]
        if evicted and run.filtered is None:
            run.filtered = (f"the run filtered groups ({evicted[0]} > 0 at step {step}): the groups it dropped are "
                            "not in the dump, so the zero-spread share is a lower bound")
