"""Design check: the balanced baselines peak before the end of the run, so the runs are long enough
for the decline FADE claims to prevent.

Applies to a task where a balanced baseline (grpo, dr_grpo) logged pass@1. A run passes when its
smoothed peak (:func:`~fade.testbed.summary.smoothed_peak`, the first evaluation at the highest
:data:`~fade.testbed.summary.PEAK_WINDOW`-evaluation moving average among the full windows) falls
at or before :data:`REGIME_PEAK_FRACTION` of the run. A run whose smoothed pass@1 never rises above
its base evaluation has no peak to decline from (it diverged or learnt nothing): it fails too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fade.testbed.summary import smoothed_peak

from ..design import BALANCED
from ..runs import SweepRun
from ..stats import NOT_MEASURED
from .base import Claim, Context

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


CLAIM = Claim("regime", measure)
