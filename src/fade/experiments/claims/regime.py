"""Design check: the balanced baselines peak before the end of the run, so the runs are long enough
for the decline FADE claims to prevent.

Applies to a task where a balanced baseline (grpo, dr_grpo) logged pass@1. A run passes when its
smoothed peak (:func:`~fade.testbed.summary.smoothed_peak`, the first evaluation at the highest
:data:`~fade.testbed.summary.PEAK_WINDOW`-evaluation moving average among the full windows) falls
at or before :data:`REGIME_PEAK_FRACTION` of the run. A run whose smoothed pass@1 never rises above
its base evaluation has no peak to decline from (it diverged or learnt nothing): it fails too.
Where the check fails, the report says so beside every claim of the task that reads a peak.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fade.testbed.summary import PEAK_WINDOW, RISE_SHARE, smoothed_peak

from ..design import BALANCED
from ..runs import SweepRun
from ..stats import NOT_MEASURED
from .base import Claim, Context, Figures, Reads, Table, VerdictLine, Words, reads_peaks

#: A balanced baseline whose pass@1 peaks later than this fraction of its run is still climbing,
#: and a regime where it does has no decline for FADE to prevent.
REGIME_PEAK_FRACTION = 0.8
REGIME_CALIBRATED, REGIME_NOT_CALIBRATED = "regime calibrated", "regime not calibrated"


@dataclass(frozen=True)
class SeedPeak:
    """One run's peaks: the smoothed peak's step and fraction of the run, the step with
    :data:`~fade.testbed.summary.RISE_SHARE` of its gain (nan: no gain), the single evaluation's peak."""

    seed: int
    step: float
    fraction: float
    rise: float
    rise_fraction: float
    raw_step: float
    raw_fraction: float

    @property
    def gained(self) -> bool:
        return math.isfinite(self.rise)

    @property
    def on_time(self) -> bool:
        return self.gained and self.fraction <= REGIME_PEAK_FRACTION + 1e-12


@dataclass(frozen=True)
class SeedMeanPeak:
    """Where a spec's seed-mean pass@1 curve (smoothed the same way) peaks and makes its gain."""

    spec: str
    seeds: int
    step: float
    rise: float
    total: int


@dataclass(frozen=True)
class Regime:
    """Per balanced baseline that logged pass@1, each measured run's :class:`SeedPeak`; the runs
    still climbing late (spec, seed, fraction) and those that never rose (spec, seed); the
    baselines that did not run; the seed-mean curves; the check's outcome."""

    task: str
    peaks: dict[str, tuple[SeedPeak, ...]]
    late: tuple[tuple[str, int, float], ...]
    stalled: tuple[tuple[str, int], ...]
    missing: tuple[str, ...]
    seed_means: tuple[SeedMeanPeak, ...]
    outcome: str

    @property
    def measured(self) -> int:
        return sum(map(len, self.peaks.values()))


def seed_mean_peak(spec: str, runs: Sequence[SweepRun]) -> SeedMeanPeak | None:
    """The peak of ``spec``'s seed-mean pass@1; None unless at least two seeds share their
    evaluation steps."""
    curves = [s for s in runs if s.pass1.size and np.isfinite(s.pass1).all()]
    if len(curves) < 2 or any(not np.array_equal(s.eval_steps, curves[0].eval_steps) for s in curves):
        return None
    peak, _, rise = smoothed_peak(curves[0].eval_steps, np.mean([s.pass1 for s in curves], axis=0))
    return SeedMeanPeak(spec, len(curves), peak, rise, curves[0].run.steps)


def _seed_peak(s: SweepRun) -> SeedPeak:
    sc = s.scalars
    rise = sc["rise_step"]
    rise_fraction = rise / s.run.steps if math.isfinite(rise) and s.run.steps else math.nan
    return SeedPeak(s.seed, sc["smoothed_peak_step"], sc["smoothed_peak_fraction"], rise, rise_fraction,
                    sc["peak_step"], sc["peak_fraction"])


def measure(task: str, context: Context) -> Regime | None:
    runs = context.runs(task)
    present = [spec for spec in BALANCED if any(s.pass1.size for s in runs.of(spec))]
    if not present:
        return None
    peaks = {spec: tuple(_seed_peak(s) for s in runs.of(spec) if math.isfinite(s.scalars["smoothed_peak_fraction"]))
             for spec in present}
    late = tuple((spec, p.seed, p.fraction) for spec in present for p in peaks[spec] if p.gained and not p.on_time)
    stalled = tuple((spec, p.seed) for spec in present for p in peaks[spec] if not p.gained)
    measured = sum(map(len, peaks.values()))
    outcome = REGIME_NOT_CALIBRATED if late or stalled else NOT_MEASURED if not measured else REGIME_CALIBRATED
    seed_means = tuple(m for spec in present if (m := seed_mean_peak(spec, runs.of(spec))))
    return Regime(
        task=task,
        peaks=peaks,
        late=late,
        stalled=stalled,
        missing=tuple(spec for spec in BALANCED if spec not in present),
        seed_means=seed_means,
        outcome=outcome,
    )


def _detail(r: Regime) -> str:
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
        detail = f"{r.measured} runs, all at or before {REGIME_PEAK_FRACTION:.0%}"
    if r.missing:
        detail += f"; not trained on this plan: {', '.join(r.missing)}"
    return detail


def verdict(r: Regime) -> list[VerdictLine]:
    statement = (
        f"Every seed of the balanced baselines ({', '.join(r.peaks)}) peaks in pass@1 ({PEAK_WINDOW}-evaluation "
        f"moving average) at or before {REGIME_PEAK_FRACTION:.0%} of the run, so the runs are long enough for the "
        "decline FADE claims to prevent"
    )
    return [VerdictLine(statement, r.outcome, _detail(r))]


def _seed_mean_text(m: SeedMeanPeak) -> str:
    if math.isnan(m.rise):
        return f"{m.spec} ({m.seeds} seeds) never rises above its base"
    return (
        f"{m.spec} ({m.seeds} seeds) peaks at {m.step:.0f} ({m.step / m.total:.0%}) with {RISE_SHARE:.0%} of its gain "
        f"by {m.rise:.0f} ({m.rise / m.total:.0%})"
    )


#: Why the check failed, as the report's list of claims that do not reproduce says it.
LATE = "a balanced baseline was still climbing late in the run"
STALLED = "a balanced baseline never rose above its base evaluation (it diverged or learnt nothing)"


def _caveat(r: Regime):
    """What a failed check means for the task's claims: those that read a peak read it where there is
    little decline to prevent."""

    def caveat(verdicts) -> str:
        why = " and ".join(([LATE] if r.late else []) + ([STALLED] if r.stalled else []))
        consequence = ("so claims about peaks, declines and reaching a peak earlier are read where there is little "
                       "decline to prevent" if any(map(reads_peaks, verdicts)) else
                       "but no claim of this plan reads a peak")
        return f"the regime check failed (**{REGIME_NOT_CALIBRATED}**): {why}, {consequence}. <sub>{_detail(r)}</sub>"

    return caveat


def words(r: Regime) -> Words:
    limit = REGIME_PEAK_FRACTION
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
    said = Words("Regime check: the balanced baselines peak before the end", [table],
                 caveat=_caveat(r) if r.outcome == REGIME_NOT_CALIBRATED else None)
    if r.seed_means:
        said.notes.append(
            "The seed-mean curve (pass@1 averaged over the seeds at each evaluation, then smoothed the same way), "
            "which the verdict does not read: " + "; ".join(map(_seed_mean_text, r.seed_means)) + ". One seed's late "
            "peak on a wandering plateau is a draw; the mean over n seeds wanders about sqrt(n) times less.")
    return said


CLAIM = Claim(
    "regime",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
