"""A sweep's finished runs as the claims, figures and report read them: each run's summary with the
plan it ran, grouped by task, estimator and seed.

:func:`summarise` reads one finished run of a sweep into a :class:`SweepRun`: the testbed's
:class:`~fade.testbed.summary.RunSummary` (every number a run is summarised by, defined there
once) with the :class:`~fade.experiments.presets.RunSpec` it ran, its estimator's identity, and
its timing (``done.json``). :class:`Runs` finds one task's runs by estimator spec, matched by
identity so that ``asym_grpo`` and ``asym_grpo:delta=0.5`` are one estimator, and gathers a
metric over seeds into a :class:`~fade.experiments.stats.Stat`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fade.testbed.runlog import load_run, read_json_object
from fade.testbed.summary import RunSummary
from fade.testbed.summary import summarise as summarise_run

from .presets import RunSpec, identity
from .stats import Stat

__all__ = ["DONE_FILE", "Runs", "SweepRun", "summarise"]

DONE_FILE = "done.json"


@dataclass
class SweepRun(RunSummary):
    """One finished run of a sweep: its summary, the plan it ran, its estimator's identity
    (:func:`~fade.experiments.presets.identity`) and its timing in seconds (``train_seconds``: the
    logged step times; ``cpu_seconds``, ``wall_seconds``, ``resumed`` from ``done.json``)."""

    run: RunSpec = field(kw_only=True)
    identity: tuple = field(kw_only=True)
    timing: dict[str, float] = field(kw_only=True)

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def task(self) -> str:
        return self.run.task


def summarise(run: RunSpec, out: str | Path) -> SweepRun:
    """Read the finished run ``run`` of the sweep in ``out`` into a :class:`SweepRun`."""
    directory = run.directory(out)
    summary = summarise_run(load_run(directory), steps=run.steps)
    timing: dict[str, float] = {"train_seconds": float(np.nansum(summary.curves["step_seconds"]))}
    done_path = directory / DONE_FILE
    if done_path.is_file():
        done = read_json_object(done_path)
        for key in ("cpu_seconds", "wall_seconds"):
            if isinstance(done.get(key), (int, float)):
                timing[key] = float(done[key])
        timing["resumed"] = float(bool(done.get("resumed")))
    return SweepRun(**vars(summary), run=run, identity=identity(run.estimator), timing=timing)


class Runs:
    """The summaries of one task's runs, found by estimator spec (by identity) and seed."""

    def __init__(self, summaries: Sequence[SweepRun]):
        self.by_identity: dict[tuple, list[SweepRun]] = defaultdict(list)
        self.spec_of: dict[tuple, str] = {}
        for s in summaries:
            self.by_identity[s.identity].append(s)
            self.spec_of.setdefault(s.identity, s.run.estimator)

    def of(self, spec: str) -> list[SweepRun]:
        return sorted(self.by_identity.get(identity(spec), []), key=lambda s: s.seed)

    def has(self, spec: str) -> bool:
        return bool(self.of(spec))

    def stat(self, spec: str, key: str) -> Stat:
        """``spec``'s scalar ``key`` over its seeds, each value kept with its seed."""
        return Stat.by_seed((s.seed, s.scalars.get(key, math.nan)) for s in self.of(spec))

    def by_seed(self, spec: str) -> dict[int, SweepRun]:
        return {s.seed: s for s in self.of(spec)}

    def present(self, specs: Iterable[str]) -> list[str]:
        return [spec for spec in specs if self.has(spec)]
