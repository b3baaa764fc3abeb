"""Design check: FADE's sign knob acts, delta < 1 on more than :data:`SIGN_KNOB_SHARE` of the steps
of at least one FADE arm (seed mean), or the sign half of FADE was never tested (project issue 12).

Applies to a task where a FADE arm logged delta. delta = clip(1 + H_hat - H*, 0.3, 1) per step;
delta < 1 amplifies the failures' weight (docs/method.md, section 3). Its figure draws delta against
step for each FADE arm that logged it, whether or not the check is read.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .. import figures
from ..runs import SweepRun
from ..stats import Stat
from .base import Claim, Context, Drawing, Figures, Reads, Table, TaskFigures, VerdictLine, Words

#: The share of steps with delta < 1 an arm must exceed.
SIGN_KNOB_SHARE = 0.3
REQUIREMENT_MET, REQUIREMENT_NOT_MET = "requirement met", "requirement not met"


@dataclass(frozen=True)
class KnobArm:
    """One FADE arm: its runs, the share of steps with delta < 1 and the mean delta over seeds, the
    lowest delta of any of its steps."""

    spec: str
    runs: int
    share: Stat
    delta: Stat
    lowest: float


@dataclass(frozen=True)
class SignKnob:
    """Each arm, the arms above the share, the arm with the most, and the check's outcome."""

    task: str
    arms: tuple[KnobArm, ...]
    above: tuple[str, ...]
    best: KnobArm
    outcome: str


def measure(task: str, context: Context) -> SignKnob | None:
    by_arm: dict[str, list[SweepRun]] = defaultdict(list)
    for s in sorted(context.of(task), key=lambda s: s.seed):
        if s.run.stateful and np.isfinite(s.curves["delta"]).any():
            by_arm[s.run.estimator].append(s)
    if not by_arm:
        return None
    arms = tuple(
        KnobArm(spec, len(runs), Stat.by_seed((s.seed, s.scalars["delta_below1"]) for s in runs),
                Stat.by_seed((s.seed, s.scalars["delta_mean"]) for s in runs),
                min(float(np.nanmin(s.curves["delta"])) for s in runs))
        for spec, runs in by_arm.items())
    best = max(arms, key=lambda arm: arm.share.mean)
    above = tuple(arm.spec for arm in arms if arm.share.mean > SIGN_KNOB_SHARE)
    return SignKnob(task=task, arms=arms, above=above, best=best,
                    outcome=REQUIREMENT_MET if above else REQUIREMENT_NOT_MET)


def verdict(r: SignKnob) -> list[VerdictLine]:
    statement = (f"At least one FADE arm has delta < 1 on more than {SIGN_KNOB_SHARE:.0%} of its steps (seed mean), "
                 "so the sign half of FADE is exercised")
    detail = (f"arms above {SIGN_KNOB_SHARE:.0%}: {', '.join(r.above) or 'none'}; the most: {r.best.spec} at "
              f"{r.best.share.mean:.2f}")
    return [VerdictLine(statement, r.outcome, detail)]


def words(r: SignKnob) -> Words:
    table = Table(["FADE arm", "seeds", "steps with delta < 1: mean (per seed)", "mean delta", "lowest delta"],
                  caption="delta = clip(1 + H_hat - H*, 0.3, 1) as logged per step; delta < 1 amplifies the failures' "
                          "weight (docs/method.md, section 3)")
    for arm in r.arms:
        table.rows.append(
            [
                arm.spec,
                str(arm.runs),
                f"{arm.share.mean:.2f} ({', '.join(f'{v:.2f}' for v in arm.share.values)})",
                arm.delta.text(3),
                f"{arm.lowest:.3f}",
            ]
        )
    return Words("FADE's sign knob: how often delta < 1", [table])


def delta_figure(view: TaskFigures) -> list[Drawing]:
    """delta against step for each FADE arm that logged it, whether or not the check was measured."""
    arms = [(spec, view.runs[spec]) for spec in view.present if view.arms[spec].stateful
            and any(np.isfinite(r.curves["delta"]).any() for r in view.runs[spec])]
    if not arms:
        return []
    return [Drawing(f"{view.task}-delta.png", "FADE's sign knob: delta against step for each FADE arm",
                    lambda p: figures.draw_delta(arms, view.palette, p, title=view.task))]


CLAIM = Claim(
    "sign_knob",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(of_runs=delta_figure),
)
