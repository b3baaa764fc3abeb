"""What a claim is. Each claim of the report is one module of this package holding one
:class:`Claim` as ``CLAIM``: what it reads, what it measures, its verdict, its words and its
figures, each a field.

- ``reads`` (:class:`Reads`): the tasks it is measured on (every task with a finished run, unless
  it says otherwise) and whether its context holds the arms that set training of their own (a
  policy loss, an entropy term: :class:`~fade.experiments.design.Arm`; a claim about estimators
  does not, so it compares runs trained alike). The estimators it reads by role (the sign axis's
  success-biased ones, the Power(alpha) levels, ...) are constants of its module.
- ``measure(task, context)``: its typed result on that task's runs, or None where those runs do
  not cover it (the estimators it compares were not trained). The result is a frozen dataclass of
  the claim's own: the numbers it measured (each a :class:`~fade.experiments.stats.Stat` over
  seeds where it is one) and its judgements, each a :class:`Judgement` (named comparisons read
  by :func:`~fade.experiments.stats.compare`).
- ``verdict(result)``: its verdict lines, each a statement and the judgement that decides it
  (:func:`line`); a design check has one, its requirement and whether it is met.
- ``words(result)``: the rest of its section of the report (:class:`Words`): the title, tables of
  formatted cells and notes; for a design check, what its failure means for the claims beside it.
- ``figures`` (:class:`Figures`): its panel in the figures every task shows, and the figures it
  draws, from its result or from the task's runs, through :mod:`fade.experiments.figures`.

The :class:`Context` is what a claim may measure: the sweep's run summaries, grouped per task,
the preset and the tuned choice; :class:`TaskFigures` is what its figures may read. A measured
claim is a :class:`Finding`; :func:`section` puts its verdict and words together as the report
shows them (:class:`ClaimSection`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..design import FADE, Arm, Preset, as_arm
from ..runs import Runs, SweepRun
from ..stats import Stat, Verdict, combine

__all__ = [
    "Claim",
    "ClaimSection",
    "Context",
    "Drawing",
    "Figures",
    "Finding",
    "Judgement",
    "Reads",
    "StatTable",
    "Table",
    "TaskFigures",
    "VerdictLine",
    "Words",
    "difference",
    "fade_spec",
    "judge",
    "line",
    "reads_peaks",
    "section",
    "stat_table",
]

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
    """Every task with a finished run: where a claim is measured unless it says otherwise."""
    return context.tasks


# -- the report's structures ---------------------------------------------------------------------


@dataclass
class Table:
    """A markdown table: a header row and rows of cells (already formatted)."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""


@dataclass
class VerdictLine:
    """A verdict in words: the statement, its outcome, the numbers behind it, and its named parts."""

    statement: str
    outcome: str
    detail: str
    parts: list[tuple[str, Verdict]] = field(default_factory=list)


def line(statement: str, judgement: Judgement) -> VerdictLine:
    """The verdict line of ``judgement``: one part's detail as it is, several parts' joined."""
    parts = list(judgement.parts)
    if len(parts) == 1:
        return VerdictLine(statement, judgement.outcome, parts[0][1].detail, parts)
    detail = "; ".join(f"{name}: {v.outcome}, {v.detail}" for name, v in parts)
    return VerdictLine(statement, judgement.outcome, detail, parts)


def difference(verdict: Verdict | None, digits: int = 3) -> str:
    """``+0.031 [+0.012, +0.050]``: a comparison's paired difference and its 95% interval, or a dash
    without one."""
    iv = None if verdict is None else verdict.interval
    return "—" if iv is None else f"{iv.mean:+.{digits}f} [{iv.low:+.{digits}f}, {iv.high:+.{digits}f}]"


def reads_peaks(verdict: VerdictLine) -> bool:
    """Whether a claim compares peak pass@1 or the step of a peak (its statement or a part says so)."""
    return "peak" in verdict.statement or any("peak" in name for name, _ in verdict.parts)


@dataclass
class Words:
    """A claim on one task in words, beside its verdict lines: the section's ``title``, its
    ``tables`` and ``notes``. A design check's ``caveat``, where it failed, says what that means
    for the claims of its task: given their verdict lines, the line the report lists under "Where
    the claims do not reproduce". ``tally`` is a sentence the report's verdict count adds (the
    fixed comparisons read as one family)."""

    title: str
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    caveat: Callable[[Sequence[VerdictLine]], str] | None = None
    tally: str | None = None


@dataclass
class ClaimSection:
    """One claim on one task as the report shows it: its :class:`Words` and verdict lines (a design
    check's one line is its ``check``), the typed ``result`` they word and the ``claim`` itself
    (whose figures read the result)."""

    key: str
    title: str
    task: str
    tables: list[Table] = field(default_factory=list)
    verdicts: list[VerdictLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    check: VerdictLine | None = None
    result: Any = None
    caveat: Callable[[Sequence[VerdictLine]], str] | None = None
    tally: str | None = None
    claim: Claim | None = None


# -- figures --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Drawing:
    """One figure of the report: its file name, its caption, and ``draw(path)``, which draws it
    there (ValueError or RuntimeError: it cannot be drawn, and the report goes on without it)."""

    name: str
    caption: str
    draw: Callable[[Path], object]


@dataclass
class TaskFigures:
    """What a claim's figures read on one task: the ``task``, its finished runs by arm text (each
    arm's runs in seed order, the arms as they first come: ``runs``), each arm (``arms``), the
    report's colour of each (``palette``), and the FADE spec that stands for FADE there
    (``fade_spec``: the tuned choice where the task takes it, else the defaults; :func:`fade_spec`)."""

    task: str
    runs: dict[str, list[SweepRun]]
    arms: dict[str, Arm]
    palette: dict
    fade_spec: str

    @property
    def present(self) -> list[str]:
        """Every arm that ran here, by text."""
        return list(self.runs)

    def pick(self, specs: Iterable[str | Arm]) -> list[str]:
        """The arms among ``specs`` (estimator specs or arms) that ran here, found by what they
        train whatever their spec leaves to defaults, each once, named as their runs name them."""
        by_identity = {arm.identity: text for text, arm in self.arms.items()}
        found = (as_arm(spec).identity for spec in specs)
        return list(dict.fromkeys(by_identity[i] for i in found if i in by_identity))


def no_arms(view: TaskFigures) -> Sequence[str]:
    return ()


def no_drawings(*_: Any) -> Sequence[Drawing]:
    return ()


@dataclass(frozen=True)
class Figures(Generic[R]):
    """A claim's figures on one task. ``group`` titles its panel in the figures every task shows
    (pass@1, the final pass@k, entropy) and ``arms(view)`` names the arms shown there (none: no
    panel of its own); ``of_result(result, view)`` draws from what it measured, ``of_runs(view)``
    from the task's runs whether or not it was measured. Per task the report draws the shared
    figures, then the figures of every measured claim's result in the report's order, then every
    claim's figures of runs."""

    group: str = ""
    arms: Callable[[TaskFigures], Sequence[str]] = no_arms
    of_result: Callable[[R, TaskFigures], Sequence[Drawing]] = no_drawings
    of_runs: Callable[[TaskFigures], Sequence[Drawing]] = no_drawings


# -- the claim ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reads:
    """Which runs a claim reads: the ``tasks`` it is measured on (every task with a finished run by
    default) and whether its context holds the runs of arms with training settings of their own
    (``overrides``; by default it sees only the arms that train as their plan says)."""

    tasks: Callable[[Context], Sequence[str]] = every_task
    overrides: bool = False


@dataclass(frozen=True)
class Claim(Generic[R]):
    """A claim of the report: its ``key`` (the section's in ``results.json``), what it ``reads``,
    ``measure(task, context)`` returning its result on ``task`` or None where the runs do not
    cover it, its ``verdict(result)`` lines, its ``words(result)`` and its ``figures``."""

    key: str
    reads: Reads
    measure: Callable[[str, Context], R | None]
    verdict: Callable[[R], Sequence[VerdictLine]]
    words: Callable[[R], Words]
    figures: Figures = Figures()


@dataclass(frozen=True)
class Finding(Generic[R]):
    """A claim measured on one task: the claim, the task and the typed result."""

    claim: Claim[R]
    task: str
    result: R

    @property
    def key(self) -> str:
        return self.claim.key


def section(finding: Finding, check: bool = False) -> ClaimSection:
    """The section of a measured claim: its words and its verdict lines (for a design check,
    ``check``, its one line is the section's ``check``)."""
    claim, result = finding.claim, finding.result
    words = claim.words(result)
    verdicts = list(claim.verdict(result))
    return ClaimSection(
        claim.key, words.title, finding.task, tables=words.tables, verdicts=[] if check else verdicts,
        notes=words.notes, check=verdicts[0] if check else None, result=result, caveat=words.caveat,
        tally=words.tally, claim=claim,
    )
