"""Ablations of FADE against FADE's defaults, and its H* sensitivity: without delta (fade_alpha)
entropy collapses; without alpha (fade_delta) pass@k at large k drops; a fixed or entropy-only
schedule (fade_decay, fade_entropy_only) loses accuracy and diversity to the adaptive controller;
H* = half the initial entropy gives the highest pass@k mean.

Applies to a task where FADE's defaults ran with an ablation (:data:`ABLATIONS`) or with two H*
levels (:data:`H_STAR_LEVELS`). :mod:`.ablations_engaged` measures the same ablations against a
FADE whose sign knob acts. The figures every task shows have a panel of FADE, its ablations and its
H* levels, and a task where two arms of FADE's family ran draws them side by side on one seed
whether or not the claim is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fade.specs import parse_spec

from .. import figures
from ..design import FADE
from ..runs import Runs
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

#: FADE's ablations (docs/method.md, section 3): fixed delta = 1 (fade_alpha), fixed alpha = 1
#: (fade_delta), both knobs from the entropy, a fixed log-decay schedule.
ABLATIONS: tuple[str, ...] = ("fade_alpha", "fade_delta", "fade_entropy_only", "fade_decay")
#: H* sensitivity: the target entropy as a fraction of the first observed entropy (0.5: FADE's default).
H_STAR_LEVELS: tuple[tuple[float, str], ...] = (
    (0.3, "fade:h_star_ratio=0.3"), (0.5, FADE), (0.7, "fade:h_star_ratio=0.7"),
)

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


def losses(a: Ablation) -> list[VerdictLine]:
    """A fixed or entropy-only schedule against the adaptive controller: accuracy and diversity as two claims."""
    return [line(f"{a.variant} loses {what} to the adaptive controller: lower {label} than {a.reference}", judgement)
            for (what, _, label), judgement in zip(LOSSES, a.losses)]


def verdict(r: Ablations) -> list[VerdictLine]:
    verdicts = []
    for a in r.ablations:
        if a.entropy is not None:
            verdicts.append(line(f"Without delta ({a.variant}) entropy collapses: lower final entropy than FADE",
                                 a.entropy))
        elif a.passk is not None:
            verdicts.append(line(f"Without alpha ({a.variant}) pass@k at large k drops: lower final pass@16 and "
                                 "pass@64 than FADE", a.passk))
        else:
            verdicts.extend(losses(a))
    if r.half_best is not None:
        verdicts.append(line("H* = half the initial entropy works best (highest pass@k mean)", r.half_best))
    return verdicts


def words(r: Ablations) -> Words:
    header = ["variant", "peak pass@1", "final pass@16", "final pass@64", "pass@k mean", "final entropy",
              "final rank1_share", "mean alpha", "mean delta"]
    table = Table(
        header,
        caption="fade: both knobs adaptive; fade_alpha: delta fixed at 1; fade_delta: alpha fixed at 1; "
        "fade_entropy_only: both from entropy; fade_decay: fixed log-decay schedule",
    )
    for spec in [FADE, *r.variants]:
        table.rows.append(
            [spec, *[r.stats[spec][c].text(2 if c in ("alpha_mean", "delta_mean") else 3) for c in COLUMNS]]
        )
    said = Words("Ablations of FADE and H* sensitivity", [table])
    if r.levels:
        hs = Table(
            ["h_star_ratio", "spec", "peak pass@1", "pass@k mean", "final entropy", "final rank1_share", "mean delta"]
        )
        for h, spec in r.levels:
            hs.rows.append([f"{h:g}", spec, *[r.level_stats[spec][c].text() for c in LEVEL_COLUMNS]])
        said.tables.append(hs)
    return said


def arms(view: TaskFigures) -> list[str]:
    return view.pick([FADE, *ABLATIONS, *(spec for _, spec in H_STAR_LEVELS)])


def family_figure(view: TaskFigures) -> list[Drawing]:
    """FADE and every variant of its family that ran, side by side on their first seed."""
    family = [spec for spec in view.present if view.arms[spec].stateful]
    if len(family) < 2:
        return []
    seed = min(s.seed for spec in family for s in view.runs[spec])
    dirs = [s.directory for spec in family for s in view.runs[spec] if s.seed == seed]
    return [Drawing(f"{view.task}-fade-family-seed{seed}.png",
                    f"FADE and its variants on seed {seed} (fade.testbed.report.compare_runs)",
                    lambda p: figures.draw_side_by_side(dirs, p))]


CLAIM = Claim(
    "ablations",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures("FADE ablations and H*", arms, of_runs=family_figure),
)
