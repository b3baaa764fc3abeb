"""The design checks in words: the regime check, FADE's sign knob, where FADE's schedule acts, and
the collapse check."""

from __future__ import annotations

import math

import numpy as np

from ...testbed.summary import PEAK_WINDOW, RISE_SHARE
from ..claims.collapse import COLLAPSE_FRACTION, Collapse
from ..claims.regime import REGIME_CALIBRATED, REGIME_NOT_CALIBRATED, REGIME_PEAK_FRACTION, Regime, SeedMeanPeak
from ..claims.schedule import SCHEDULE_SHARE, Schedule
from ..claims.sign_knob import SIGN_KNOB_SHARE, SignKnob
from ..stats import NOT_MEASURED
from .base import ClaimSection, Table, VerdictLine, words


def _seed_mean_text(m: SeedMeanPeak) -> str:
    if math.isnan(m.rise):
        return f"{m.spec} ({m.seeds} seeds) never rises above its base"
    return (
        f"{m.spec} ({m.seeds} seeds) peaks at {m.step:.0f} ({m.step / m.total:.0%}) with {RISE_SHARE:.0%} of its gain "
        f"by {m.rise:.0f} ({m.rise / m.total:.0%})"
    )


@words(Regime)
def regime(key: str, r: Regime) -> ClaimSection:
    limit = REGIME_PEAK_FRACTION
    section = ClaimSection(key, "Regime check: the balanced baselines peak before the end", r.task)
    table = Table(["estimator", "step of the smoothed peak per seed (fraction of the run)",
                   f"step with {RISE_SHARE:.0%} of the smoothed gain per seed",
                   "step of the single-evaluation peak per seed", f"seeds peaking at or before {limit:.0%}"],
                  caption=f"smoothed peak: the first evaluation at the highest {PEAK_WINDOW}-evaluation centred moving "
                          "average of pass@1 among those whose window is full, which the verdict reads (from one "
                          "evaluation to the next pass@1 moves by more than its evaluation noise, so one evaluation's "
                          "maximum is a noisy peak, and a window shrunk at an end is noisier still); single-evaluation "
                          f"peak: the first evaluation at the highest pass@1, as the claims' peak pass@1 uses it; "
                          f"{RISE_SHARE:.0%} of the gain: the first full-window evaluation whose moving average has "
                          f"made {RISE_SHARE:.0%} of its rise from the base evaluation to the smoothed peak (on a "
                          "wandering plateau the peak can fall anywhere; this step says when the gain stopped)")
    for spec, peaks in r.peaks.items():
        cells = [f"seed {p.seed}: **no gain**" if not p.gained else
                 f"seed {p.seed}: {p.step:.0f} ({p.fraction:.0%})" + ("" if p.on_time else " **late**") for p in peaks]
        rises = [f"{p.rise:.0f} ({p.rise_fraction:.0%})" if math.isfinite(p.rise_fraction) else "—" for p in peaks]
        raw = [f"{p.raw_step:.0f} ({p.raw_fraction:.0%})" for p in peaks]
        table.rows.append([spec, ", ".join(cells) or "—", ", ".join(rises) or "—", ", ".join(raw) or "—",
                           f"{sum(p.on_time for p in peaks)} of {len(cells)}"])
    section.tables.append(table)
    present = list(r.peaks)
    statement = (
        f"Every seed of the balanced baselines ({', '.join(present)}) peaks in pass@1 ({PEAK_WINDOW}-evaluation "
        f"moving average) at or before {limit:.0%} of the run, so the runs are long enough for the decline FADE "
        "claims to prevent"
    )
    if r.outcome == REGIME_NOT_CALIBRATED:
        late = [f"{spec} seed {seed} ({fraction:.0%})" for spec, seed, fraction in r.late]
        stalled = [f"{spec} seed {seed}" for spec, seed in r.stalled]
        reasons = ([f"peaking later: {', '.join(late)}"] if late else []) + (
            [f"never above the base evaluation (diverged or no gain): {', '.join(stalled)}"] if stalled else [])
        detail = "; ".join(reasons)
    elif r.outcome == NOT_MEASURED:
        detail = "no finite pass@1"
    else:
        assert r.outcome == REGIME_CALIBRATED
        detail = f"{r.measured} runs, all at or before {limit:.0%}"
    if r.missing:
        detail += f"; not trained on this plan: {', '.join(r.missing)}"
    section.check = VerdictLine(statement, r.outcome, detail)
    if r.seed_means:
        section.notes.append(
            "The seed-mean curve (pass@1 averaged over the seeds at each evaluation, then smoothed the same way), "
            "which the verdict does not read: " + "; ".join(map(_seed_mean_text, r.seed_means)) + ". One seed's late "
            "peak on a wandering plateau is a draw; the mean over n seeds wanders about sqrt(n) times less.")
    return section


@words(SignKnob)
def sign_knob(key: str, r: SignKnob) -> ClaimSection:
    section = ClaimSection(key, "FADE's sign knob: how often delta < 1", r.task)
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
    section.tables.append(table)
    statement = (f"At least one FADE arm has delta < 1 on more than {SIGN_KNOB_SHARE:.0%} of its steps (seed mean), "
                 "so the sign half of FADE is exercised")
    detail = (f"arms above {SIGN_KNOB_SHARE:.0%}: {', '.join(r.above) or 'none'}; the most: {r.best.spec} at "
              f"{r.best.share.mean:.2f}")
    section.check = VerdictLine(statement, r.outcome, detail)
    return section


def _per_seed(values, text) -> str:
    return ", ".join(text(v) for v in values)


@words(Schedule)
def schedule(key: str, r: Schedule) -> ClaimSection:
    section = ClaimSection(key, "FADE's schedule: where it acts, and where a run is a static estimator", r.task)
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
    section.tables.append(table)
    statement = (f"At least one FADE arm's schedule acts (alpha strictly between its bounds, or delta < 1) on more "
                 f"than {SCHEDULE_SHARE:.0%} of its steps (seed mean), so the results are about a schedule, not "
                 "only the static estimator it sits at")
    detail = f"arms above {SCHEDULE_SHARE:.0%}: {', '.join(r.above) or 'none'}"
    section.check = VerdictLine(statement, r.outcome, detail)
    section.notes.append(
        "Where a FADE arm is static on most of its steps, a comparison of it is a comparison of the static estimator "
        "in its last column on those steps, and reads as one.")
    return section


@words(Collapse)
def collapse(key: str, r: Collapse) -> ClaimSection:
    section = ClaimSection(key, "Collapse check: no run ends far below its base", r.task)
    if r.collapsed:
        table = Table(
            ["estimator", "collapsed seeds", "pass@1 base -> last evaluation per collapsed seed"],
            caption=f"collapsed: the last evaluation's pass@1 below {COLLAPSE_FRACTION:g} x the base evaluation's",
        )
        for spec, runs in r.collapsed.items():
            table.rows.append([spec, f"{len(runs)} of {r.totals[spec]}", ", ".join(
                f"seed {c.seed}: {c.base:.3f} -> {c.final:.3f}" for c in runs)])
        section.tables.append(table)
    statement = (f"Every run ends with pass@1 at least {COLLAPSE_FRACTION:g} x its base evaluation's, so no claim "
                 "compares a collapsed run")
    if r.collapsed:
        names = "; ".join(f"{spec} seeds {', '.join(str(c.seed) for c in runs)}" for spec, runs in r.collapsed.items())
        detail = (f"{sum(map(len, r.collapsed.values()))} of {r.measured} runs collapsed ({names}); claims that "
                  "involve them measure the collapse, not the estimator")
    else:
        detail = f"{r.measured} runs, none collapsed"
    section.check = VerdictLine(statement, r.outcome, detail)
    return section
