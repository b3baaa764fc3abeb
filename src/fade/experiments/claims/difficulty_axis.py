"""Difficulty axis: under Power(alpha) the effective sample fraction falls as alpha grows, and a
harder focus moves the pass@1 gains to the hard prompts.

Applies to a task with at least two of the Power(alpha) levels (:data:`POWER_LEVELS`; alpha = 1 is
dr_grpo exactly). Gains are final minus base pass@1 per difficulty bucket (d1 easiest). The figures
every task shows have a panel of the levels, and a task where two levels ran draws their gains per
bucket whether or not the claim is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import figures
from ..stats import compare
from .base import (
    Claim,
    Context,
    Drawing,
    Figures,
    Judgement,
    Reads,
    StatTable,
    Table,
    TaskFigures,
    VerdictLine,
    Words,
    judge,
    line,
    stat_table,
)

#: Power(alpha) at three levels, m_S = m_F = p q^alpha. alpha = 1 is exactly dr_grpo (the same
#: advantages bit for bit), so the dr_grpo runs stand in for it instead of training it twice.
POWER_LEVELS: tuple[tuple[int, str], ...] = ((1, "dr_grpo"), (2, "power:alpha=2"), (3, "power:alpha=3"))


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


def verdict(r: DifficultyAxis) -> list[VerdictLine]:
    verdicts = [line("The effective sample fraction falls as alpha grows", r.esf_falls)]
    if r.hard_gains is not None:
        (a_lo, _), (a_hi, _) = r.levels[0], r.levels[-1]
        verdicts.append(line(
            f"Harder focus moves the gains to hard prompts: the hardest bucket (d{r.hardest}) gains more under "
            f"alpha={a_hi} than under alpha={a_lo}", r.hard_gains))
    return verdicts


def words(r: DifficultyAxis) -> Words:
    table = Table(
        ["alpha", "runs of", "effective_sample_fraction", "difficulty (mass-weighted solve rate)", "peak pass@1",
         *[f"pass@1 gain d{b}" for b in r.buckets]],
        caption="gains: final minus base pass@1 per difficulty bucket (d1 easiest); alpha = 1 is dr_grpo exactly",
    )
    for alpha, spec in r.levels:
        st = r.stats[spec]
        table.rows.append(
            [
                str(alpha),
                spec,
                st["esf_mean"].text(),
                st["difficulty_mean"].text(),
                st["peak_pass1"].text(),
                *[st[f"gain/d{b}"].text() for b in r.buckets],
            ]
        )
    said = Words("Difficulty axis: Power(alpha), effective sample size and where the gains land", [table])
    if r.hard_gains is not None:
        for top in r.top_bucket:
            if top is not None:
                alpha, bucket, gain = top
                said.notes.append(f"alpha={alpha}: the largest mean gain is in d{bucket} ({gain:+.3f}).")
    return said


def arms(view: TaskFigures) -> list[str]:
    return view.pick([spec for _, spec in POWER_LEVELS])


def bucket_figure(view: TaskFigures) -> list[Drawing]:
    """The pass@1 gain per difficulty bucket under each Power(alpha) level that ran (by its spec's text)."""
    levels = [(f"alpha={a} ({spec})", view.runs.get(spec, [])) for a, spec in POWER_LEVELS]
    levels = [(label, runs) for label, runs in levels if runs]
    if len(levels) < 2 or not any(r.buckets() for _, runs in levels for r in runs):
        return []
    return [Drawing(f"{view.task}-buckets.png", "pass@1 gain per difficulty bucket under Power(alpha)",
                    lambda p: figures.draw_bucket_gains(levels, p, title=view.task))]


CLAIM = Claim(
    "difficulty",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures("difficulty axis: Power(alpha)", arms, of_runs=bucket_figure),
)
