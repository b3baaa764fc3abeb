"""The comparisons a preset fixed before its runs (:attr:`~fade.experiments.design.Preset.comparisons`),
each judged on the paired per-seed differences of one run scalar.

Nothing here chooses what to compare: the preset's list is the claim, recorded in the sweep folder
when the sweep started (:func:`~fade.experiments.sweep.fix_design`), so the report cannot add a
comparison that looked good afterwards. Applies to a task whose plan trained both arms of at least
one of the preset's comparisons; a comparison whose arms did not both run stays in the result as
not measured, so the count of what was planned stays visible.

Beside each comparison's own interval, the family: each comparison's two-sided paired t-test
p-value and Holm's correction over all of the task's fixed comparisons (:func:`~..stats.holm`,
family-wise error 5%), so the report can say which survive the multiplicity of the list.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..design import Comparison
from ..stats import MIN_PAIRED_SEEDS, Stat, Verdict, compare, holm, paired_differences, paired_seeds, paired_t_pvalue
from .base import Claim, Context, Judgement, Reads, judge


@dataclass(frozen=True)
class Compared:
    """One fixed comparison on one task: the two sides over seeds, the verdict, the paired t-test's
    two-sided p-value (NaN where fewer than 5 seeds pair), Holm's adjusted p-value over the task's
    fixed comparisons, and whether it survives the correction."""

    comparison: Comparison
    arm: Stat
    against: Stat
    verdict: Verdict
    p_value: float = math.nan
    holm_p: float = math.nan
    survives_holm: bool = False


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
        rows.append(Compared(c, a, b, compare(a, b, greater=c.greater), _p_value(a, b)))
    adjusted, survives = holm([row.p_value for row in rows])
    rows = [dataclasses.replace(row, holm_p=q, survives_holm=ok) for row, q, ok in zip(rows, adjusted, survives)]
    return Comparisons(task=task, rows=tuple(rows))


def _p_value(a: Stat, b: Stat) -> float:
    """The paired t-test's two-sided p-value, where the paired rule judges (5 or more shared seeds)."""
    if a.n == 0 or b.n == 0:
        return math.nan
    pairs = paired_seeds(a, b)
    if pairs is None:
        return math.nan
    diffs = paired_differences(*pairs)
    return paired_t_pvalue(diffs) if diffs.size >= MIN_PAIRED_SEEDS else math.nan


CLAIM = Claim("comparisons", Reads(overrides=True), measure)
