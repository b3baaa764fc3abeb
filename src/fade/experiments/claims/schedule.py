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

Applies to a task where an arm of FADE's family logged alpha and delta. Its figure draws every
scheduled arm's knobs against step, beside the path a ``fade_fixed`` arm follows where one ran.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fade.adaptive import FIXED_PATHS, fixed_knobs
from fade.registry import spec as estimator_spec
from fade.specs import parse_spec

from .. import figures
from ..design import Arm
from ..runs import SweepRun
from ..stats import Stat
from .base import Claim, Context, Drawing, Figures, Reads, Table, TaskFigures, VerdictLine, Words
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


def verdict(r: Schedule) -> list[VerdictLine]:
    statement = (f"At least one FADE arm's schedule acts (alpha strictly between its bounds, or delta < 1) on more "
                 f"than {SCHEDULE_SHARE:.0%} of its steps (seed mean), so the results are about a schedule, not "
                 "only the static estimator it sits at")
    return [VerdictLine(statement, r.outcome, f"arms above {SCHEDULE_SHARE:.0%}: {', '.join(r.above) or 'none'}")]


def _per_seed(values, text) -> str:
    return ", ".join(text(v) for v in values)


def words(r: Schedule) -> Words:
    table = Table(["FADE arm", "seeds", "steps where the schedule acts: mean (per seed)",
                   "alpha at its cap / at 1 / between (seed means)", "delta < 1 (seed mean)",
                   "alpha leaves its cap at step (per seed)", "static from step to the end (per seed)"],
                  caption="a step is static where alpha sits at a bound (its cap or 1) and delta = 1: FADE's weighting "
                          "there is exactly power:alpha=<bound> (dr_grpo at 1), whatever the run does; it acts "
                          "elsewhere. '-': never")
    for arm in r.arms:
        runs = arm.runs
        mean = lambda key: float(np.mean([getattr(x, key) for x in runs]))  # noqa: E731
        table.rows.append([
            arm.spec, str(len(runs)),
            f"{arm.acts.mean:.2f} ({_per_seed(arm.acts.values, lambda v: f'{v:.2f}')})",
            f"{mean('at_cap'):.2f} / {mean('at_one'):.2f} / {mean('between'):.2f}",
            f"{mean('delta_below1'):.2f}",
            _per_seed(runs, lambda x: "-" if x.leaves_cap is None else str(x.leaves_cap)),
            _per_seed(runs, lambda x: "-" if x.tail is None else f"{x.tail} from {x.tail_from} "
                      f"({1 - (x.tail_from - 1) / x.steps:.0%})"),
        ])
    return Words("FADE's schedule: where it acts, and where a run is a static estimator", [table], notes=[
        "Where a FADE arm is static on most of its steps, a comparison of it is a comparison of the static estimator "
        "in its last column on those steps, and reads as one."])


def written_path(arms: Sequence[Arm]) -> tuple[str, np.ndarray, np.ndarray, np.ndarray] | None:
    """The path a ``fade_fixed`` arm among ``arms`` follows, as (its text, steps, alpha, delta) at
    every step of its knots' span; None without such an arm."""
    for arm in arms:
        name, params = parse_spec(arm.estimator)
        if name == "fade_fixed" and params.get("path") in FIXED_PATHS:
            steps = np.arange(1, FIXED_PATHS[params["path"]][-1][0] + 1)
            knobs = np.array([fixed_knobs(params["path"], int(s)) for s in steps])
            return arm.text, steps, knobs[:, 0], knobs[:, 1]
    return None


def schedule_figure(view: TaskFigures) -> list[Drawing]:
    """alpha, delta and p_hat against step for every arm of FADE's family that logged alpha, whether
    or not the check was measured."""
    scheduled = [(spec, view.runs[spec]) for spec in view.present if view.arms[spec].stateful
                 and any(np.isfinite(r.curves["alpha"]).any() for r in view.runs[spec])]
    if not scheduled:
        return []
    reference = written_path([view.arms[spec] for spec, _ in scheduled])
    return [Drawing(f"{view.task}-schedule.png",
                    "FADE's knobs alpha, delta and p_hat against step for every scheduled arm"
                    + (f", beside the path `{reference[0]}` written in advance" if reference else ""),
                    lambda p: figures.draw_schedule(scheduled, view.palette, p, title=view.task, reference=reference))]


CLAIM = Claim(
    "schedule",
    reads=Reads(overrides=True),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(of_runs=schedule_figure),
)
