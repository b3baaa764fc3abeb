"""The comparisons a preset fixed before its runs (:attr:`~fade.experiments.design.Preset.comparisons`),
each judged on the paired per-seed differences of one run scalar.

Nothing here chooses what to compare: the preset's list is the claim, recorded in the sweep folder
when the sweep started (:func:`~fade.experiments.sweep.fix_design`), so the report cannot add a
comparison that looked good afterwards. Applies to a task whose plan trained both arms of at least
one of the preset's comparisons; a comparison whose arms did not both run stays in the result as
not measured, so the count of what was planned stays visible.

Beside each comparison's own interval, the family: each comparison's two-sided paired t-test
p-value and Holm's correction over all of the task's fixed comparisons (:func:`~..stats.holm`,
family-wise error 5%), so the report can say which survive the multiplicity of the list, and its
count of verdicts says how many did.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..design import Comparison
from ..stats import MIN_PAIRED_SEEDS, Stat, Verdict, compare, holm, paired_differences, paired_seeds, paired_t_pvalue
from .base import Claim, Context, Figures, Judgement, Reads, Table, VerdictLine, Words, difference, judge, line

#: The run scalars a preset may compare, in words (a scalar not listed is named by its key).
MEASURE_WORDS = {
    "passk_mean": "final pass@k mean",
    "smoothed_peak_pass1": "peak pass@1 (smoothed over 3 evaluations)",
    "peak_pass1": "peak pass@1 (one evaluation's maximum)",
    "entropy_final": "final entropy",
    "distinct_correct_final": "distinct correct answers per problem",
    "final_pass1": "final pass@1",
    "pass1_area": "area under the pass@1 curve",
}


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


def measure_words(key: str) -> str:
    return MEASURE_WORDS.get(key, key)


def verdict(r: Comparisons) -> list[VerdictLine]:
    verdicts = []
    for row, judgement in zip(r.rows, r.judgements):
        c = row.comparison
        side = "higher" if c.greater else "lower"
        verdicts.append(line(f"{c.arm.text} has a {side} {measure_words(c.measure)} than {c.against.text}", judgement))
    return verdicts


def _adjusted(row: Compared) -> str:
    if row.holm_p != row.holm_p:  # NaN: no p-value
        return "—"
    text = f"{row.holm_p:.2g}"
    return f"**{text}**" if row.survives_holm else text


def holm_note(r: Comparisons) -> str:
    """Which of the fixed comparisons survive Holm's correction over all of them, in words."""
    tested = [row for row in r.rows if row.p_value == row.p_value]
    kept = [row for row in r.rows if row.survives_holm]
    listed = "; ".join(
        f"{row.comparison.arm.text} vs {row.comparison.against.text} on {measure_words(row.comparison.measure)} "
        f"({difference(row.verdict)}, adjusted p = {row.holm_p:.3g})" for row in kept
    )
    return (f"The list as a family: under Holm's correction over all {len(r.rows)} fixed comparisons ({len(tested)} "
            "with a paired t-test p-value; a comparison without one counts in the family and is never kept), at a "
            f"family-wise error of 5%, {len(kept)} of {len(r.rows)} differences stay different from 0"
            + (f": {listed}." if kept else ".")
            + " The per-comparison verdicts above read each 95% interval on its own.")


def words(r: Comparisons) -> Words:
    measures = list(dict.fromkeys(row.comparison.measure for row in r.rows))
    means = Table(["arm", *[measure_words(m) for m in measures]], caption="mean ± std over seeds")
    stats: dict[str, dict[str, str]] = {}
    for row in r.rows:
        c = row.comparison
        for arm, stat in ((c.arm.text, row.arm), (c.against.text, row.against)):
            stats.setdefault(arm, {})[c.measure] = stat.text(2 if c.measure == "entropy_final" else 3)
    for arm, cells in stats.items():
        means.rows.append([f"`{arm}`", *[cells.get(m, "—") for m in measures]])
    pairs = list(dict.fromkeys((row.comparison.arm.text, row.comparison.against.text) for row in r.rows))
    by_pair = {(row.comparison.arm.text, row.comparison.against.text, row.comparison.measure): row for row in r.rows}
    differences = Table(["arm − against", *[measure_words(m) for m in measures]],
                        caption="mean paired difference over the seeds both share and its 95% bootstrap interval (a "
                                "dash: not compared, or fewer than 5 shared seeds)")
    for arm, against in pairs:
        differences.rows.append([f"`{arm}` − `{against}`",
                                 *[difference(row.verdict) if (row := by_pair.get((arm, against, m))) else "—"
                                   for m in measures]])
    family = Table(["arm − against", *[measure_words(m) for m in measures]],
                   caption="Holm's adjusted p-value of each fixed comparison (two-sided paired t-test, Holm's "
                           f"step-down correction over all {len(r.rows)}); **bold**: different from 0 at a "
                           "family-wise error of 5%; a dash: no p-value (fewer than 5 shared seeds)")
    for arm, against in pairs:
        family.rows.append([f"`{arm}` − `{against}`",
                            *[_adjusted(row) if (row := by_pair.get((arm, against, m))) else "—" for m in measures]])
    tally = (f" The {len(r.rows)} comparisons fixed before the runs ({r.task}) are also read as one family under "
             f"Holm's correction: {sum(row.survives_holm for row in r.rows)} of them survive it (see that section)."
             if r.rows else None)
    return Words("The comparisons fixed before the runs", [means, differences, family], notes=[
        holm_note(r),
        f"These {len(r.rows)} comparisons are the preset's, recorded in the sweep folder's design.json when the sweep "
        "started; a sweep whose preset lists other comparisons is refused there, so none was added or dropped after "
        "the runs."], tally=tally)


CLAIM = Claim(
    "comparisons",
    reads=Reads(overrides=True),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
