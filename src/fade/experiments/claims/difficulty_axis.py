"""Difficulty axis: under Power(alpha) the effective sample fraction falls as alpha grows, and a
harder focus moves the pass@1 gains to the hard prompts.

Applies to a task with at least two of the Power(alpha) levels (alpha = 1 is dr_grpo exactly).
Gains are final minus base pass@1 per difficulty bucket (d1 easiest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..design import POWER_LEVELS
from ..stats import compare
from .base import Claim, Context, Judgement, Reads, StatTable, judge, stat_table


@dataclass(frozen=True)
class DifficultyAxis:
    """The levels (alpha, spec) that ran, the buckets evaluated, per spec the effective sample
    fraction, difficulty, peak pass@1 and gain per bucket over seeds; the verdicts, and per level
    the bucket with the largest mean gain (None where no gain is finite)."""

    task: str
    levels: tuple[tuple[float, str], ...]
    buckets: tuple[int, ...]
    stats: StatTable
    esf_falls: Judgement
    hard_gains: Judgement | None
    top_bucket: tuple[tuple[float, int, float] | None, ...]

    @property
    def hardest(self) -> int:
        return self.buckets[-1]


def measure(task: str, context: Context) -> DifficultyAxis | None:
    runs = context.runs(task)
    levels = [(alpha, spec) for alpha, spec in POWER_LEVELS if runs.has(spec)]
    if len(levels) < 2:
        return None
    buckets = sorted({b for _, spec in levels for s in runs.of(spec) for b in s.buckets()})
    gains = [f"gain/d{b}" for b in buckets]
    stats = stat_table(runs, [spec for _, spec in levels], ("esf_mean", "difficulty_mean", "peak_pass1", *gains))
    esf = judge((f"alpha={a2} vs alpha={a1}", compare(stats[s2]["esf_mean"], stats[s1]["esf_mean"], greater=False))
                for (a1, s1), (a2, s2) in zip(levels, levels[1:]))
    hard_gains, top = None, []
    if buckets:
        hard = f"gain/d{buckets[-1]}"
        (_, s_lo), (_, s_hi) = levels[0], levels[-1]
        hard_gains = judge([(f"d{buckets[-1]}", compare(stats[s_hi][hard], stats[s_lo][hard], greater=True))])
        for alpha, spec in levels:
            finite = {
                b: stats[spec][f"gain/d{b}"].mean for b in buckets if math.isfinite(stats[spec][f"gain/d{b}"].mean)
            }
            best = max(finite, key=finite.get) if finite else None
            top.append((alpha, best, finite[best]) if best is not None else None)
    return DifficultyAxis(task=task, levels=tuple(levels), buckets=tuple(buckets), stats=stats, esf_falls=esf,
                          hard_gains=hard_gains, top_bucket=tuple(top))


CLAIM = Claim("difficulty", Reads(), measure)
