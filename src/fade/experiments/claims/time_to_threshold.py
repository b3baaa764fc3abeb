"""How soon each arm makes most of the gain a good static arm makes: the testbed's reading of "peak
pass@1 earlier", with the threshold and the counting fixed before the runs.

The best static arm is the static baseline (one of :data:`BASELINE_POOL`, without a schedule and
trained as its plan says; any static arm when none of them ran) with the highest seed-mean smoothed gain
(``smoothed_gain``: the smoothed peak pass@1 minus the
base's). On each seed an arm's threshold is its own base pass@1 plus
:data:`~fade.testbed.summary.THRESHOLD_SHARE` of that mean gain (:func:`~fade.testbed.summary.threshold`),
and its time to threshold is the first evaluation step where its smoothed pass@1 reaches it, a seed
that never does counted one evaluation past the run's end (:func:`~fade.testbed.summary.threshold_step`).
Every arm is compared with the best static arm on that step (lower is earlier) and on the area
under its pass@1 curve (``pass1_area``), paired by seed; the arms with a schedule (FADE's family)
carry the claim's verdicts, the others are shown beside them. Applies to a task with a static arm
and at least one other arm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fade.registry import spec as estimator_spec
from fade.specs import parse_spec
from fade.testbed.summary import THRESHOLD_SHARE, threshold, threshold_step

from ..design import STATIC_BASELINES, canonical_spec
from ..runs import Runs, SweepRun
from ..stats import Stat, Verdict, compare
from .base import Claim, Context, Figures, Judgement, Reads, Table, VerdictLine, Words, difference, judge, line

#: The static arms the threshold's best arm is chosen from: the static baselines and FADE's static
#: twin power:alpha=3. The sign-axis probes (psr, nsr, asym_grpo:delta=2) are not baselines: a
#: collapsing or success-only arm must not set the bar.
BASELINE_POOL: tuple[str, ...] = (*STATIC_BASELINES, "power:alpha=3")


@dataclass(frozen=True)
class ArmTiming:
    """One arm: its time to threshold per seed (``steps``; a seed that never crossed counted one
    evaluation past the run's end), how many of its ``seeds`` ``never`` crossed, its pass@1 area
    per seed, and, for an arm other than the best static one, the comparisons with it."""

    arm: str
    scheduled: bool
    steps: Stat
    never: int
    seeds: int
    area: Stat
    earlier: Verdict | None = None
    larger_area: Verdict | None = None


@dataclass(frozen=True)
class TimeToThreshold:
    """The best static arm, its seed-mean smoothed gain, the threshold share, each arm's timing
    (the best first), and the verdicts of the scheduled arms by arm text."""

    task: str
    best: str
    gain: Stat
    share: float
    threshold: Stat
    arms: tuple[ArmTiming, ...]
    verdicts: dict[str, dict[str, Judgement]]


def scheduled(arm_estimator: str) -> bool:
    """Whether an estimator spec schedules its parameters from training signals (FADE's family)."""
    return estimator_spec(parse_spec(arm_estimator)[0]).schedule is not None


def _timing(runs: list[SweepRun], gain: float, scheduled_arm: bool, text: str) -> ArmTiming:
    steps, areas, never = [], [], 0
    for s in runs:
        level = threshold(s.scalars["base_pass1"], gain)
        step, crossed = (threshold_step(s.eval_steps, s.pass1, level, steps=s.run.steps, eval_every=s.run.eval_every)
                         if math.isfinite(level) else (math.nan, False))
        never += int(math.isfinite(step) and not crossed)
        steps.append((s.seed, step))
        areas.append((s.seed, s.scalars["pass1_area"]))
    return ArmTiming(text, scheduled_arm, Stat.by_seed(steps), never, len(runs), Stat.by_seed(areas))


def measure(task: str, context: Context) -> TimeToThreshold | None:
    runs: Runs = context.runs(task)
    arms = {text: runs.of(text) for text in runs.spec_of.values()}
    arms = {text: of for text, of in arms.items() if of and any(np.isfinite(s.pass1).any() for s in of)}
    static = [text for text, of in arms.items() if not of[0].run.overrides and not scheduled(of[0].run.estimator)]
    if not static or len(arms) < 2:
        return None
    pool = {canonical_spec(spec) for spec in BASELINE_POOL}
    candidates = [text for text in static if canonical_spec(arms[text][0].run.estimator) in pool] or static
    gains = {text: runs.stat(text, "smoothed_gain") for text in candidates}
    best = max(candidates, key=lambda text: gains[text].mean if gains[text].n else -math.inf)
    gain = gains[best]
    if not gain.n:
        return None
    timings = {text: _timing(of, gain.mean, scheduled(of[0].run.estimator), text) for text, of in arms.items()}
    reference = timings[best]
    compared, verdicts = [], {}
    for text in [best, *(t for t in arms if t != best)]:
        timing = timings[text]
        if text != best:
            earlier = compare(timing.steps, reference.steps, greater=False, digits=0)
            larger_area = compare(timing.area, reference.area, greater=True)
            timing = ArmTiming(**{**vars(timing), "earlier": earlier, "larger_area": larger_area})
            if timing.scheduled:
                verdicts[text] = {"earlier": judge([(f"time to threshold vs {best}", timing.earlier)]),
                                  "area": judge([(f"pass@1 area vs {best}", timing.larger_area)])}
        compared.append(timing)
    levels = Stat.by_seed((s.seed, threshold(s.scalars["base_pass1"], gain.mean)) for s in runs.of(best))
    return TimeToThreshold(task=task, best=best, gain=gain, share=THRESHOLD_SHARE, threshold=levels,
                           arms=tuple(compared), verdicts=verdicts)


def verdict(r: TimeToThreshold) -> list[VerdictLine]:
    verdicts = []
    for arm in r.arms:
        judgements = r.verdicts.get(arm.arm)
        if judgements:
            verdicts.append(line(f"{arm.arm} reaches the threshold earlier than {r.best}", judgements["earlier"]))
            verdicts.append(line(f"{arm.arm} has a larger area under its pass@1 curve than {r.best}",
                                 judgements["area"]))
    return verdicts


def words(r: TimeToThreshold) -> Words:
    best = r.best
    table = Table(["arm", "time to threshold (steps)", "seeds that never crossed", "pass@1 area",
                   f"steps: arm − {best}", f"area: arm − {best}"],
                  caption="mean ± std over seeds; a seed that never crossed counts one evaluation past the run's end; "
                          "differences are paired by seed, with their 95% bootstrap interval (lower steps: earlier)")
    for arm in r.arms:
        name = f"**{arm.arm}**" if arm.scheduled else f"`{arm.arm}`" + (" (best static)" if arm.arm == best else "")
        table.rows.append([name, arm.steps.text(0), f"{arm.never} of {arm.seeds}", arm.area.text(),
                           difference(arm.earlier, 0) if arm.earlier is not None and arm.earlier.interval else "—",
                           difference(arm.larger_area)])
    never = sum(arm.never for arm in r.arms)
    runs = sum(arm.seeds for arm in r.arms)
    return Words(f"Time to threshold: {r.share:.0%} of the best static arm's gain", [table], notes=[
        f"The best static arm is the static baseline (grpo, dr_grpo, rloo, maxrl, w_reinforce, passk, power; no "
        f"schedule, no sign-axis probe) whose seed-mean smoothed gain (smoothed peak pass@1 minus the base's) is "
        f"highest: {best}, {r.gain.text()}. On each seed an arm's threshold is its base pass@1 plus "
        f"{r.share:.0%} of that gain ({r.threshold.text()} over {best}'s seeds); its time to threshold is the first "
        f"evaluation step where its pass@1, averaged over 3 consecutive evaluations, reaches it. "
        f"{never} of {runs} runs "
        "never crossed and are counted one evaluation interval past the run's end. The pass@1 area is the trapezoid "
        "area under the pass@1 curve over the evaluated steps, per step: the mean pass@1 over training."])


CLAIM = Claim(
    "time_to_threshold",
    reads=Reads(overrides=True),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
