"""The shape every claim takes.

A claim is a :class:`Claim`: a key, the tasks it reads (every task the runs cover, unless it says
otherwise), whether it reads the arms that set training of their own (a policy loss, an entropy
term: :class:`~fade.experiments.design.Arm`; a claim about estimators does not, so it compares
runs trained alike), and ``measure(task, context)``, which returns the claim's typed result on that task's
runs, or None where those runs do not cover it (the estimators it compares were not trained).
The result is a frozen dataclass of the claim's own: the numbers it measured (each a
:class:`~fade.experiments.stats.Stat` over seeds where it is one) and its verdicts, each a
:class:`Judgement` (named comparisons read by :func:`~fade.experiments.stats.compare`). No
wording lives here: :mod:`fade.experiments.sections` turns results into the report's tables and
sentences. The :class:`Context` is what a claim may read: the sweep's run summaries, grouped per
task, the preset and the tuned choice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Generic, TypeVar

from ..design import FADE, Preset
from ..runs import Runs, SweepRun
from ..stats import Stat, Verdict, combine

__all__ = ["Claim", "Context", "Finding", "Judgement", "StatTable", "fade_spec", "judge", "stat_table"]

R = TypeVar("R")

#: Per estimator spec, per scalar key of its runs' summaries, the value over seeds.
StatTable = dict[str, dict[str, Stat]]


@dataclass(frozen=True)
class Judgement:
    """One verdict of a claim: its comparisons, each named (``psr vs grpo``); its outcome
    combines theirs (:func:`~fade.experiments.stats.combine`)."""

    parts: tuple[tuple[str, Verdict], ...]

    @property
    def outcome(self) -> str:
        return combine([v for _, v in self.parts])


def judge(parts: Iterable[tuple[str, Verdict]]) -> Judgement:
    """A :class:`Judgement` of the named comparisons ``parts``."""
    return Judgement(tuple(parts))


def stat_table(runs: Runs, specs: Iterable[str], keys: Iterable[str]) -> StatTable:
    """``keys`` of each of ``specs`` over its seeds (:meth:`Runs.stat`)."""
    keys = tuple(keys)
    return {spec: {key: runs.stat(spec, key) for key in keys} for spec in specs}


def fade_spec(preset: Preset | None, task: str, choice: str | None) -> str:
    """The FADE configuration that represents FADE on ``task``: the tuned choice where there is
    one (on the tuning task and on tasks that take it without retuning), else the defaults."""
    if preset is not None and preset.tuning is not None and choice is not None:
        tuned_tasks = {preset.tuning.task} | {plan.task for plan in preset.plans if plan.tuned}
        if task in tuned_tasks:
            return choice
    return FADE


@dataclass
class Context:
    """What a claim reads: every finished run's summary, the preset (None: claims that need one are
    skipped) and the FADE configuration chosen by tuning, if any."""

    summaries: Sequence[SweepRun]
    preset: Preset | None = None
    choice: str | None = None
    _runs: dict[str, Runs] = field(default_factory=dict, init=False, compare=False, repr=False)

    @cached_property
    def tasks(self) -> list[str]:
        """The tasks with a finished run, in the order the runs come."""
        return list(dict.fromkeys(s.task for s in self.summaries))

    def of(self, task: str) -> list[SweepRun]:
        """The finished runs of ``task``."""
        return [s for s in self.summaries if s.task == task]

    def runs(self, task: str) -> Runs:
        """The finished runs of ``task``, found by estimator and seed."""
        if task not in self._runs:
            self._runs[task] = Runs(self.of(task))
        return self._runs[task]

    def steps(self, task: str) -> int:
        """The longest planned run of ``task``."""
        return max(s.run.steps for s in self.of(task))

    def fade_spec(self, task: str) -> str:
        """:func:`fade_spec` for this sweep."""
        return fade_spec(self.preset, task, self.choice)


def every_task(context: Context) -> Sequence[str]:
    return context.tasks


@dataclass(frozen=True)
class Claim(Generic[R]):
    """A claim of the report: its ``key`` (the section's in ``results.json``), ``measure(task,
    context)`` returning its result on ``task`` or None where the runs do not cover it, the
    ``tasks`` it is measured on (every task with a finished run by default), and whether its
    context holds the runs of arms with training settings of their own (``reads_overrides``; by
    default it sees only the arms that train as their plan says)."""

    key: str
    measure: Callable[[str, Context], R | None]
    tasks: Callable[[Context], Sequence[str]] = every_task
    reads_overrides: bool = False


@dataclass(frozen=True)
class Finding(Generic[R]):
    """A claim measured on one task: the claim's key, the task and the typed result."""

    key: str
    task: str
    result: R
