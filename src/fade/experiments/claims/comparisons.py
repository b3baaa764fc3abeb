"""The comparisons a preset fixed before its runs (:attr:`~fade.experiments.design.Preset.comparisons`),
each judged on the paired per-seed differences of one run scalar.

Nothing here chooses what to compare: the preset's list is the claim, recorded in the sweep folder
when the sweep started (:func:`~fade.experiments.sweep.fix_design`), so the report cannot add a
comparison that looked good afterwards. Applies to a task whose plan trained both arms of at least
one of the preset's comparisons; a comparison whose arms did not both run stays in the result as
not measured, so the count of what was planned stays visible.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..design import Comparison
from ..stats import Stat, Verdict, compare
from .base import Claim, Context, Judgement, judge


@dataclass(frozen=True)
class Compared:
    """One fixed comparison on one task: the two sides over seeds and the verdict."""

    comparison: Comparison
    arm: Stat
    against: Stat
    verdict: Verdict


@dataclass(frozen=True)
class Comparisons:
    """Every comparison the preset fixed that applies to ``task``, in the preset's order, each
    with its :class:`Compared`; ``verdicts`` by the same index, as one-part judgements."""

    task: str
    rows: tuple[Compared, ...]

    @property
    def judgements(self) -> tuple[Judgement, ...]:
        return tuple(judge([(_name(r.comparison), r.verdict)]) for r in self.rows)


def _name(c: Comparison) -> str:
    return f"{c.measure}: {c.arm.text} vs {c.against.text}"


def measure(task: str, context: Context) -> Comparisons | None:
    preset = context.preset
    if preset is None or not preset.comparisons:
        return None
    plan_arms = {arm for plan in preset.plans if plan.task == task for arm in plan.arms}
    fixed = [c for c in preset.comparisons if c.arm in plan_arms and c.against in plan_arms]
    runs = context.runs(task)
    if not any(runs.has(c.arm) and runs.has(c.against) for c in fixed):
        return None
    rows = []
    for c in fixed:
        a, b = runs.stat(c.arm, c.measure), runs.stat(c.against, c.measure)
        rows.append(Compared(c, a, b, compare(a, b, greater=c.greater)))
    return Comparisons(task=task, rows=tuple(rows))


CLAIM = Claim("comparisons", measure, reads_overrides=True)
