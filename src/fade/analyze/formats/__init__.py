"""The dumps ``fade analyze`` reads, one module per engine, as judging profiles are one module per
benchmark.

Each module holds its :class:`~.base.Format` as ``FORMAT``: its name, how it recognises a folder
or a single file, how it reads a run, and the engine version and the writer (``path:line``) its
rules were read from. :data:`NAMES` lists the modules in the order ``--format`` offers them and a
file is matched against them (``generic`` last: it takes any CSV or parquet file). A new engine is
its module and its name here; docs/analyze.md, "Adding a format", says what it must be tested on.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import numpy as np

from ..metrics import check_metrics_file, read_metrics
from ..records import DumpError, RunRecords
from .base import Format, Progress, ReadOptions, probe

__all__ = ["FORMATS", "NAMES", "Format", "ReadOptions", "detect", "read_run"]

#: The formats, by the name ``--format`` takes, in the order a file is matched against them.
NAMES = ("verl", "trl", "nemo-rl", "prime-rl", "roll", "areal", "slime", "fade-eval", "generic")

#: Every format by name.
FORMATS: dict[str, Format] = {name: import_module(f"{__name__}.{name.replace('-', '_')}").FORMAT for name in NAMES}

_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet", ".pt")


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def detect(path: str | Path) -> tuple[str, Path]:
    """The format of the dump at ``path`` and the file or folder its reader takes."""
    path = Path(path)
    if not path.exists():
        raise DumpError(f"{path}: no such file or folder: expected a run's rollout dump")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix not in _SUFFIXES:
            raise DumpError(f"{path}: an unknown file type {suffix or '(none)'}: expected "
                            f"{_listing(['.jsonl', '.csv', '.parquet', '.pt'])}")
        keys = probe(path)
        for fmt in FORMATS.values():
            if fmt.claims(path, keys):
                return fmt.name, path
        expected = [f.keys for f in FORMATS.values() if f.keys]
        raise DumpError(f"{path}:1: an unknown layout (keys {', '.join(sorted(keys)) or 'none'}): expected "
                        f"{', '.join(expected[:-1])}, or {expected[-1]} (docs/analyze.md)")
    if not path.is_dir():
        raise DumpError(f"{path}: neither a regular file nor a folder: expected a run's rollout dump")
    kinds = {name: where for name, fmt in FORMATS.items() if (where := fmt.find(path)) is not None}
    if not kinds:
        raise DumpError(f"{path}: no rollout dump found: expected "
                        f"{_listing([f.layout for f in FORMATS.values() if f.layout])}")
    if len(kinds) > 1:
        raise DumpError(f"{path}: a folder mixing {' and '.join(sorted(kinds))} dumps: expected one run's files")
    (kind, where), = kinds.items()
    return kind, where


def read_run(path: str | Path, options: ReadOptions | None = None, *, fmt: str | None = None,
             progress: Progress | None = None) -> RunRecords:
    """Read the run at ``path`` (format detected unless ``fmt`` names one of :data:`FORMATS`).

    ``progress(done, total)`` is called after each file is read.
    """
    options = options or ReadOptions()
    if options.metrics is not None:
        check_metrics_file(options.metrics)
    if fmt is not None and fmt not in FORMATS:
        raise DumpError(f"format {fmt!r} is unknown: expected one of {', '.join(FORMATS)}")
    kind, where = detect(path)
    if fmt is not None and fmt != kind:
        raise DumpError(f"{path}: reads as a {kind} dump, not {fmt}: expected --format {kind} (or leave it out)")
    run = FORMATS[kind].read(where, options, progress or (lambda done, total: None))
    if not run.steps:
        raise DumpError(f"{path}: no steps read: expected at least one step of rollouts")
    run.steps.sort(key=lambda b: b.step)  # a stateful estimator is replayed in this order
    for a, b in zip(run.steps, run.steps[1:]):
        if a.step == b.step:
            raise DumpError(f"{b.source}: step {b.step} again (also in {a.source}): expected each step once")
    set_success(run, options)
    if options.metrics is not None:
        read_metrics(run, options.metrics)
    return run


def set_success(run: RunRecords, options: ReadOptions) -> None:
    binary = all(np.isin(b.rewards, (0.0, 1.0)).all() for b in run.steps)
    if options.success_threshold is not None:
        t = float(options.success_threshold)
        if binary and not 0.0 < t <= 1.0:
            raise ValueError(f"--success-threshold {t:g}: the rewards of {run.path} are all 0 or 1, so it makes "
                             f"{'no' if t > 1.0 else 'every'} rollout a success: expected a threshold in (0, 1]")
        highest = max(float(b.rewards.max()) for b in run.steps)
        lowest = min(float(b.rewards.min()) for b in run.steps)
        if t > highest or t <= lowest:
            run.notes.append(f"--success-threshold {t:g} makes {'no' if t > highest else 'every'} rollout a success "
                             f"(rewards from {lowest:g} to {highest:g})")
        run.success = (">=", t)
        return
    if run.success is not None:
        return
    if binary:
        run.success = (">=", 1.0)
    else:
        run.notes.append("rewards are not all 0 or 1 and no --success-threshold was given: no solve rates or pass@k")


