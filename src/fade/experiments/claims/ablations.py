"""Ablations of FADE against FADE's defaults, and its H* sensitivity: without delta (fade_alpha)
entropy collapses; without alpha (fade_delta) pass@k at large k drops; a fixed or entropy-only
schedule (fade_decay, fade_entropy_only) loses accuracy and diversity to the adaptive controller;
H* = half the initial entropy gives the highest pass@k mean.

Applies to a task where FADE's defaults ran with an ablation or with two H* levels.
:mod:`.ablations_engaged` measures the same ablations against a FADE whose sign knob acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fade.specs import parse_spec

from ..design import ABLATIONS, FADE, H_STAR_LEVELS
from ..runs import Runs
from ..stats import compare
from .base import Claim, Context, Judgement, Reads, StatTable, judge, stat_table

#: The scalars the ablation table shows for FADE and every variant.
COLUMNS = ("peak_pass1", "pass@16", "pass@64", "passk_mean", "entropy_final", "rank1_final", "alpha_mean", "delta_mean")
#: The scalars the H* table shows for every level.
LEVEL_COLUMNS = ("peak_pass1", "passk_mean", "entropy_final", "rank1_final", "delta_mean")
#: What a fixed or entropy-only schedule loses to the adaptive controller: (what, scalar, its name).
LOSSES = (("accuracy", "peak_pass1", "peak pass@1"), ("diversity", "passk_mean", "pass@k mean"))


@dataclass(frozen=True)
class Ablation:
    """One ablated variant against the FADE arm it is measured against, and its verdicts by what the
    variant drops (``kind``, its estimator's name): ``fade_alpha`` (delta fixed): lower final
    entropy; ``fade_delta`` (alpha fixed): lower pass@k on ``passk_keys``; any other: lower
    accuracy and lower diversity (``losses``, in the order of :data:`LOSSES`)."""

    variant: str
    reference: str
    kind: str
    passk_keys: tuple[str, ...] = ()
    entropy: Judgement | None = None
    passk: Judgement | None = None
    losses: tuple[Judgement, ...] = ()


def ablate(runs: Runs, variant: str, reference: str, passk_keys: Sequence[str]) -> Ablation:
    """The verdicts on ``variant`` against ``reference`` (:class:`Ablation`)."""
    stat = runs.stat
    kind = parse_spec(variant)[0]
    if kind == "fade_alpha":
        entropy = compare(stat(variant, "entropy_final"), stat(reference, "entropy_final"), greater=False)
        return Ablation(variant, reference, kind, entropy=judge([("entropy", entropy)]))
    if kind == "fade_delta":
        passk = judge(
            (key.replace("passk_mean", "pass@k mean"), compare(stat(variant, key), stat(reference, key), greater=False))
            for key in passk_keys
        )
        return Ablation(variant, reference, kind, passk_keys=tuple(passk_keys), passk=passk)
    losses = tuple(judge([(label, compare(stat(variant, key), stat(reference, key), greater=False))])
                   for _, key, label in LOSSES)
    return Ablation(variant, reference, kind, losses=losses)


@dataclass(frozen=True)
class Ablations:
    """FADE's defaults and the variants that ran, :data:`COLUMNS` of each over seeds, an
    :class:`Ablation` per variant against FADE; the H* levels that ran with :data:`LEVEL_COLUMNS`,
    and the verdict that H* = 0.5 has the highest pass@k mean (None without that level)."""

    task: str
    variants: tuple[str, ...]
    stats: StatTable
    ablations: tuple[Ablation, ...]
    levels: tuple[tuple[float, str], ...]
    level_stats: StatTable
    half_best: Judgement | None


def measure(task: str, context: Context) -> Ablations | None:
    runs = context.runs(task)
    variants = runs.present(ABLATIONS)
    levels = [(h, spec) for h, spec in H_STAR_LEVELS if runs.has(spec)]
    if not runs.has(FADE) or not (variants or len(levels) > 1):
        return None
    level_stats = stat_table(runs, [spec for _, spec in levels], LEVEL_COLUMNS) if len(levels) > 1 else {}
    middle = [spec for h, spec in levels if h == 0.5] if len(levels) > 1 else []
    half_best = None
    if middle:
        half_best = judge(
            (
                f"0.5 vs {h:g}",
                compare(level_stats[middle[0]]["passk_mean"], level_stats[spec]["passk_mean"], greater=True),
            )
            for h, spec in levels
            if spec != middle[0]
        )
    return Ablations(
        task=task, variants=tuple(variants), stats=stat_table(runs, [FADE, *variants], COLUMNS),
        ablations=tuple(ablate(runs, v, FADE, ("pass@16", "pass@64")) for v in variants),
        levels=tuple(levels) if len(levels) > 1 else (), level_stats=level_stats, half_best=half_best,
    )


CLAIM = Claim("ablations", Reads(), measure)
