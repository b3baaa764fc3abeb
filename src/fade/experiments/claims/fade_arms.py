"""FADE's arms (its H* settings, the EMA reading) against the balanced baselines, paired by seed:
each arm raises accuracy, raises diversity, keeps more entropy.

Applies to a task with at least two FADE arms and a balanced baseline. Accuracy, diversity and
entropy are separate verdicts: one for all three would hide an answer on one axis behind an open
question on another.
"""

from __future__ import annotations

from dataclasses import dataclass

from fade.specs import parse_spec

from ..design import BALANCED, FADE
from ..stats import compare
from .base import (
    Claim,
    Context,
    Figures,
    Judgement,
    Reads,
    StatTable,
    Table,
    VerdictLine,
    Words,
    judge,
    line,
    stat_table,
)

#: The axes of the verdicts: (scalar, the name of a comparison on it).
AXES = (("peak_pass1", "peak"), ("passk_mean", "pass@k mean"), ("entropy_final", "entropy"))
#: What each axis claims, by scalar: (the claim's verb, the scalar's name).
AXIS_WORDS = {"peak_pass1": ("raises accuracy over", "peak pass@1"),
              "passk_mean": ("raises diversity over", "final pass@k mean"),
              "entropy_final": ("keeps more entropy than", "final entropy")}
#: The scalars the claim's table shows for every estimator.
COLUMNS = ("peak_pass1", "peak_step", "passk_mean", "entropy_final", "delta_mean", "delta_below1")


@dataclass(frozen=True)
class FadeArms:
    """The arms (FADE's defaults first) and the balanced baselines, :data:`COLUMNS` of each over
    seeds, per arm one verdict per axis of :data:`AXES` (keyed by arm, then scalar), and the arm
    with the highest seed-mean pass@k mean (None when no arm has one)."""

    task: str
    arms: tuple[str, ...]
    balanced: tuple[str, ...]
    stats: StatTable
    verdicts: dict[str, dict[str, Judgement]]
    best: str | None


def measure(task: str, context: Context) -> FadeArms | None:
    runs = context.runs(task)
    arms = sorted(
        (spec for spec in runs.spec_of.values() if parse_spec(spec)[0] == FADE), key=lambda spec: spec != FADE
    )
    balanced = runs.present(BALANCED)
    if len(arms) < 2 or not balanced:
        return None
    stats = stat_table(runs, [*arms, *balanced], COLUMNS)
    verdicts = {arm: {key: judge((f"{short} vs {b}", compare(stats[arm][key], stats[b][key], greater=True))
                                 for b in balanced) for key, short in AXES} for arm in arms}
    scored = [arm for arm in arms if stats[arm]["passk_mean"].n]
    best = max(scored, key=lambda arm: stats[arm]["passk_mean"].mean) if scored else None
    return FadeArms(task=task, arms=tuple(arms), balanced=tuple(balanced), stats=stats, verdicts=verdicts, best=best)


def verdict(r: FadeArms) -> list[VerdictLine]:
    against = ", ".join(r.balanced)
    verdicts = []
    for arm, judgements in r.verdicts.items():
        for scalar, judgement in judgements.items():
            claim, label = AXIS_WORDS[scalar]
            verdicts.append(line(f"{arm} {claim} the balanced baselines: higher {label} than {against}", judgement))
    return verdicts


def words(r: FadeArms) -> Words:
    table = Table(["estimator", "peak pass@1", "step of peak", "pass@k mean", "final entropy", "mean delta",
                   "steps with delta < 1"],
                  caption="mean ± std over seeds; pass@k mean: the final pass@k averaged over the logged k")
    for spec in [*r.arms, *r.balanced]:
        st = r.stats[spec]
        table.rows.append([
            f"**{spec}**" if spec in r.arms else spec, st["peak_pass1"].text(), st["peak_step"].text(0),
            st["passk_mean"].text(), st["entropy_final"].text(2), st["delta_mean"].text(2), st["delta_below1"].text(2),
        ])
    said = Words("FADE's arms (H* sensitivity) against the balanced baselines", [table])
    if r.best is not None:
        said.notes.append(
            f"The arm with the highest seed-mean pass@k mean: {r.best} ({r.stats[r.best]['passk_mean'].text()}).")
    return said


CLAIM = Claim(
    "fade_arms",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
