"""The claims whose comparisons are fixed before the runs, in words: a preset's own list of
comparisons, and every arm's time to threshold against the best static arm."""

from __future__ import annotations

from ..claims.comparisons import Comparisons
from ..claims.time_to_threshold import TimeToThreshold
from ..stats import Verdict
from .base import ClaimSection, Table, line, words

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


def measure_words(key: str) -> str:
    return MEASURE_WORDS.get(key, key)


def difference(verdict: Verdict | None, digits: int = 3) -> str:
    """``+0.031 [+0.012, +0.050]``: the paired difference and its interval, or a dash without one."""
    iv = None if verdict is None else verdict.interval
    return "—" if iv is None else f"{iv.mean:+.{digits}f} [{iv.low:+.{digits}f}, {iv.high:+.{digits}f}]"


@words(Comparisons)
def fixed_comparisons(key: str, r: Comparisons) -> ClaimSection:
    section = ClaimSection(key, "The comparisons fixed before the runs", r.task)
    measures = list(dict.fromkeys(row.comparison.measure for row in r.rows))
    means = Table(["arm", *[measure_words(m) for m in measures]], caption="mean ± std over seeds")
    stats: dict[str, dict[str, str]] = {}
    for row in r.rows:
        c = row.comparison
        for arm, stat in ((c.arm.text, row.arm), (c.against.text, row.against)):
            stats.setdefault(arm, {})[c.measure] = stat.text(2 if c.measure == "entropy_final" else 3)
    for arm, cells in stats.items():
        means.rows.append([f"`{arm}`", *[cells.get(m, "—") for m in measures]])
    section.tables.append(means)
    pairs = list(dict.fromkeys((row.comparison.arm.text, row.comparison.against.text) for row in r.rows))
    by_pair = {(row.comparison.arm.text, row.comparison.against.text, row.comparison.measure): row for row in r.rows}
    differences = Table(["arm − against", *[measure_words(m) for m in measures]],
                        caption="mean paired difference over the seeds both share and its 95% bootstrap interval (a "
                                "dash: not compared, or fewer than 5 shared seeds)")
    for arm, against in pairs:
        differences.rows.append([f"`{arm}` − `{against}`",
                                 *[difference(row.verdict) if (row := by_pair.get((arm, against, m))) else "—"
                                   for m in measures]])
    section.tables.append(differences)
    family = Table(["arm − against", *[measure_words(m) for m in measures]],
                   caption="Holm's adjusted p-value of each fixed comparison (two-sided paired t-test, Holm's "
                           f"step-down correction over all {len(r.rows)}); **bold**: different from 0 at a "
                           "family-wise error of 5%; a dash: no p-value (fewer than 5 shared seeds)")
    for arm, against in pairs:
        family.rows.append([f"`{arm}` − `{against}`",
                            *[_adjusted(row) if (row := by_pair.get((arm, against, m))) else "—" for m in measures]])
    section.tables.append(family)
    for row, judgement in zip(r.rows, r.judgements):
        c = row.comparison
        side = "higher" if c.greater else "lower"
        section.verdicts.append(line(f"{c.arm.text} has a {side} {measure_words(c.measure)} than {c.against.text}",
                                     judgement))
    section.notes.append(holm_note(r))
    section.notes.append(f"These {len(r.rows)} comparisons are the preset's, recorded in the sweep folder's "
                         "design.json when the sweep started; a sweep whose preset lists other comparisons is refused "
                         "there, so none was added or dropped after the runs.")
    return section


def _adjusted(row) -> str:
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


@words(TimeToThreshold)
def time_to_threshold(key: str, r: TimeToThreshold) -> ClaimSection:
    best = r.best
    section = ClaimSection(key, f"Time to threshold: {r.share:.0%} of the best static arm's gain", r.task)
    table = Table(["arm", "time to threshold (steps)", "seeds that never crossed", "pass@1 area",
                   f"steps: arm − {best}", f"area: arm − {best}"],
                  caption="mean ± std over seeds; a seed that never crossed counts one evaluation past the run's end; "
                          "differences are paired by seed, with their 95% bootstrap interval (lower steps: earlier)")
    for arm in r.arms:
        name = f"**{arm.arm}**" if arm.scheduled else f"`{arm.arm}`" + (" (best static)" if arm.arm == best else "")
        table.rows.append([name, arm.steps.text(0), f"{arm.never} of {arm.seeds}", arm.area.text(),
                           difference(arm.earlier, 0) if arm.earlier is not None and arm.earlier.interval else "—",
                           difference(arm.larger_area)])
    section.tables.append(table)
    for arm in r.arms:
        verdicts = r.verdicts.get(arm.arm)
        if verdicts:
            section.verdicts.append(line(f"{arm.arm} reaches the threshold earlier than {best}", verdicts["earlier"]))
            section.verdicts.append(line(f"{arm.arm} has a larger area under its pass@1 curve than {best}",
                                         verdicts["area"]))
    never = sum(arm.never for arm in r.arms)
    runs = sum(arm.seeds for arm in r.arms)
    section.notes.append(
        f"The best static arm is the static baseline (grpo, dr_grpo, rloo, maxrl, w_reinforce, passk, power; no "
        f"schedule, no sign-axis probe) whose seed-mean smoothed gain (smoothed peak pass@1 minus the base's) is "
        f"highest: {best}, {r.gain.text()}. On each seed an arm's threshold is its base pass@1 plus "
        f"{r.share:.0%} of that gain ({r.threshold.text()} over {best}'s seeds); its time to threshold is the first "
        f"evaluation step where its pass@1, averaged over 3 consecutive evaluations, reaches it. "
        f"{never} of {runs} runs "
        "never crossed and are counted one evaluation interval past the run's end. The pass@1 area is the trapezoid "
        "area under the pass@1 curve over the evaluated steps, per step: the mean pass@1 over training."
    )
    return section
