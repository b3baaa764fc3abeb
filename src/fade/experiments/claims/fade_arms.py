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
from .base import Claim, Context, Judgement, Reads, StatTable, judge, stat_table

#: The axes of the verdicts: (scalar, the name of a comparison on it).
AXES = (("peak_pass1", "peak"), ("passk_mean", "pass@k mean"), ("entropy_final", "entropy"))
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


CLAIM = Claim("fade_arms", Reads(), measure)
