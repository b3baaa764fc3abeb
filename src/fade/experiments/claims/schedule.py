"""Design check: where FADE's schedule acts, and where a FADE run is a static estimator.

FADE weighs a batch with the focal advantage at its two knobs (docs/method.md, section 3). At a
step where alpha sits at one of its bounds (its cap ``alpha_max`` or 1) and delta at 1, that
weighting is exactly ``power:alpha=<bound>`` (``dr_grpo`` at 1): nothing the schedule reads moves
it there. A FADE result counts as one about the schedule only where the schedule acts, so for every
FADE arm that logged its knobs this reads, per run, the share of steps where alpha sits at its cap,
at 1, and in between, the share with delta < 1, the first step alpha leaves its cap after reaching
it, and the share of steps at a static point; and the static estimator the run settles into: the
one it weighs with on every step from some step to the end, with the share of the run that tail
covers. The check is met when at least one FADE arm acts (is not at a static point) on more than
:data:`SCHEDULE_SHARE` of its steps (seed mean).

Applies to a task where an arm of FADE's family logged alpha and delta.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from fade.registry import spec as estimator_spec

from ..runs import SweepRun
from ..stats import Stat
from .base import Claim, Context
from .sign_knob import REQUIREMENT_MET, REQUIREMENT_NOT_MET

#: The share of steps at which an arm's schedule must act (not sit at a static point).
SCHEDULE_SHARE = 0.3


@dataclass(frozen=True)
class RunSchedule:
    """One run's knobs: the shares of its logged steps with alpha at its cap, at 1 and in between,
    with delta < 1, and at a static point (alpha at a bound and delta = 1); the first step alpha
    leaves its cap after reaching it (None: it never reaches or never leaves it); and the static
    tail: the estimator it weighs with from ``tail_from`` to its last step (None: its last step is
    not static)."""

    seed: int
    steps: int
    at_cap: float
    at_one: float
    between: float
    delta_below1: float
    static: float
    leaves_cap: int | None
    tail: str | None
    tail_from: int | None


@dataclass(frozen=True)
class ArmSchedule:
    """One FADE arm: its alpha cap, its runs, and the share of steps where its schedule acts (1 minus
    the static share) over seeds."""

    spec: str
    alpha_max: float
    runs: tuple[RunSchedule, ...]
    acts: Stat


@dataclass(frozen=True)
class Schedule:
    """Each FADE arm, the arms above the share, and the check's outcome."""

    task: str
    arms: tuple[ArmSchedule, ...]
    above: tuple[str, ...]
    outcome: str


def static_name(alpha: float) -> str:
    """The static estimator FADE's weighting equals at knobs (alpha, delta = 1)."""
    return "dr_grpo" if alpha == 1 else f"power:alpha={alpha:g}"


def run_schedule(run: SweepRun, alpha_max: float) -> RunSchedule:
    """The knobs of one run, read from its logged alpha and delta (steps where either is missing are
    left out of every share)."""
    alpha = np.asarray(run.curves["alpha"], dtype=float)
    delta = np.asarray(run.curves["delta"], dtype=float)
    steps = np.asarray(run.steps)
    keep = np.isfinite(alpha) & np.isfinite(delta)
    alpha, delta, steps = alpha[keep], delta[keep], steps[keep]
    n = int(alpha.size)
    cap, one = alpha == alpha_max, alpha == 1
    static = (cap | one) & (delta == 1)
    capped = np.flatnonzero(cap)
    after = np.flatnonzero(~cap[capped[0]:]) if capped.size else np.array([], dtype=int)
    leaves = int(steps[capped[0] + after[0]]) if after.size else None
    tail = tail_from = None
    if n and static[-1]:
        last = alpha[-1]
        same = static & (alpha == last)
        start = n - int(np.argmin(same[::-1])) if not same.all() else 0
        tail, tail_from = static_name(float(last)), int(steps[start])
    share = (lambda mask: float(mask.mean())) if n else (lambda mask: float("nan"))
    return RunSchedule(seed=run.seed, steps=n, at_cap=share(cap), at_one=share(one), between=share(~cap & ~one),
                       delta_below1=share(delta < 1), static=share(static), leaves_cap=leaves, tail=tail,
                       tail_from=tail_from)


def measure(task: str, context: Context) -> Schedule | None:
    by_arm: dict[str, list[SweepRun]] = defaultdict(list)
    for s in sorted(context.of(task), key=lambda s: s.seed):
        if (estimator_spec(s.run.name).schedule is not None and np.isfinite(s.curves["alpha"]).any()
                and np.isfinite(s.curves["delta"]).any()):
            by_arm[s.run.arm.text].append(s)
    if not by_arm:
        return None
    arms = []
    for text, runs in by_arm.items():
        name = runs[0].run.name
        alpha_max = float({**estimator_spec(name).defaults, **dict(runs[0].run.params)}["alpha_max"])
        per_run = tuple(run_schedule(s, alpha_max) for s in runs)
        arms.append(ArmSchedule(text, alpha_max, per_run, Stat.by_seed((r.seed, 1 - r.static) for r in per_run)))
    above = tuple(arm.spec for arm in arms if arm.acts.mean > SCHEDULE_SHARE)
    return Schedule(task=task, arms=tuple(arms), above=above, outcome=REQUIREMENT_MET if above else REQUIREMENT_NOT_MET)


CLAIM = Claim("schedule", measure, reads_overrides=True)
