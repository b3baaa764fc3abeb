"""A sweep's finished runs as the claims, figures and report read them: each run's summary with the
plan it ran, grouped by task, estimator and seed.

:func:`summarise` reads one finished run of a sweep into a :class:`SweepRun`: the testbed's
:class:`~fade.testbed.summary.RunSummary` (every number a run is summarised by, defined there
once) with the :class:`~fade.experiments.presets.RunSpec` it ran, its arm's identity, and its
timing (``done.json``). :class:`Runs` finds one task's runs by arm (an estimator spec, or an
:class:`~fade.experiments.design.Arm` with training settings of its own), matched by identity so
that ``asym_grpo`` and ``asym_grpo:delta=0.5`` are one estimator while dr_grpo with an entropy
bonus is another arm than dr_grpo, and gathers a metric over seeds into a
:class:`~fade.experiments.stats.Stat`.
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

from .design import Arm, RunSpec, as_arm
from .stats import Stat

__all__ = ["DONE_FILE", "Runs", "SweepRun", "copies", "summarise"]

DONE_FILE = "done.json"


@dataclass
class SweepRun(RunSummary):
    """One finished run of a sweep: its summary, the plan it ran, its arm's identity
    (:attr:`~fade.experiments.design.Arm.identity`) and its timing in seconds (``train_seconds``: the
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
    return SweepRun(**vars(summary), run=run, identity=run.arm.identity, timing=timing)


class Runs:
    """The summaries of one task's runs, found by arm (by identity) and seed.

    An arm is asked for by an estimator spec (the arm that sets nothing else), an
    :class:`~fade.experiments.design.Arm`, or the text of an arm these runs trained (``spec_of``'s
    values are those texts).
    """

    def __init__(self, summaries: Sequence[SweepRun]):
        self.by_identity: dict[tuple, list[SweepRun]] = defaultdict(list)
        self.spec_of: dict[tuple, str] = {}
        self._arms: dict[str, Arm] = {}
        for s in summaries:
            self.by_identity[s.identity].append(s)
            self.spec_of.setdefault(s.identity, s.run.arm.text)
            self._arms.setdefault(s.run.arm.text, s.run.arm)

    def _identity(self, arm: str | Arm) -> tuple:
        if isinstance(arm, str):
            arm = self._arms.get(arm) or as_arm(arm)
        return arm.identity

    def of(self, arm: str | Arm) -> list[SweepRun]:
        return sorted(self.by_identity.get(self._identity(arm), []), key=lambda s: s.seed)

    def has(self, arm: str | Arm) -> bool:
        return bool(self.of(arm))

    def stat(self, arm: str | Arm, key: str) -> Stat:
        """``arm``'s scalar ``key`` over its seeds, each value kept with its seed."""
        return Stat.by_seed((s.seed, s.scalars.get(key, math.nan)) for s in self.of(arm))

    def by_seed(self, arm: str | Arm) -> dict[int, SweepRun]:
        return {s.seed: s for s in self.of(arm)}

    def present(self, arms: Iterable[str | Arm]) -> list[str | Arm]:
        return [arm for arm in arms if self.has(arm)]


#: What two runs must agree on, exactly, to be copies of one another: every evaluation and the
#: per-step reward and entropy.
_COPY_CURVES = ("reward_mean", "entropy")


def _same_run(a: SweepRun, b: SweepRun) -> bool:
    if a.base != b.base or a.final != b.final or not np.array_equal(a.pass1, b.pass1, equal_nan=True):
        return False
    return all(np.array_equal(a.curves[k], b.curves[k], equal_nan=True) for k in _COPY_CURVES)


def copies(summaries: Sequence[SweepRun]) -> list[tuple[str, tuple[str, ...]]]:
    """(task, arm texts) of each group of arms whose runs are the same on every seed: the same seeds,
    and on each the same evaluations, rewards and entropies bit for bit. Such arms (``fade`` and
    ``fade_alpha`` when FADE's sign knob never acts) are one experiment under two names, so a claim
    that rests on one of them is evidence once, not twice."""
    groups: list[tuple[str, tuple[str, ...]]] = []
    for task in dict.fromkeys(s.task for s in summaries):
        runs = Runs([s for s in summaries if s.task == task])
        arms = {text: runs.by_seed(text) for text in runs.spec_of.values()}
        seen: set[str] = set()
        for text, by_seed in arms.items():
            if text in seen:
                continue
            same = [other for other, theirs in arms.items() if other != text and other not in seen
                    and set(theirs) == set(by_seed) and all(_same_run(by_seed[k], theirs[k]) for k in by_seed)]
            if same:
                seen.update(same)
                groups.append((task, (text, *same)))
    return groups
