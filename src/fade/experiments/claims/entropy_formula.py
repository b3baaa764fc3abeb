"""The entropy formula with both terms: dH ~ -eta [(m_S - m_F) H + Cov(A, log pi)] (docs/method.md,
section 4), read on the runs that logged its drive.

Applies to every run of a task with a logged ``entropy_drive`` and at least
:data:`~fade.testbed.summary.ENTROPY_BLOCK` x 2 finite entropies. Two readings, each for all runs
and per side of the sign axis (:func:`~fade.testbed.summary.sign_class`): (a) across runs, per
seed, the correlation of the early entropy change with the early mean drive; (b) within a run,
the correlation over blocks of the observed change with the block-mean drive (the run's
``drive_r_blocks``), and each with either term alone. Its figure draws the observed change against
the drive and each term, block by block.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fade.series import finite_mean
from fade.testbed.summary import (
    ENTROPY_BLOCK,
    SIGN_CLASSES,
    block_spans,
    early_steps,
    formula_terms,
    sign_class,
)

from .. import figures
from ..runs import SweepRun
from ..stats import SUPPORTED, Stat, compare, pearson
from .base import (
    Claim,
    Context,
    Drawing,
    Figures,
    Judgement,
    Reads,
    Table,
    TaskFigures,
    VerdictLine,
    Words,
    judge,
    line,
)
from .entropy_check import logs_formula

#: A block pair of one run: (sign group, spec, block-mean drive, its mass term, its covariance term,
#: observed entropy change per step).
Point = tuple[str, str, float, float, float, float]


@dataclass(frozen=True)
class FormulaGroup:
    """One group of runs (all, or one side of the sign axis): (a) across runs and (b) within runs,
    with the drive and with each term alone, and eta fitted over its blocks."""

    name: str
    runs: int
    across: Stat
    within: Stat
    within_mass: Stat
    within_cov: Stat
    across_mass: Stat
    across_cov: Stat
    eta: float


@dataclass(frozen=True)
class EntropyFormula:
    """The groups, every block pair (``points``), each run's sign class by run key, and the verdicts:
    the drive predicts the early change across runs, and the change within a run; ``negative``:
    the change correlates negatively with the drive within runs (a contradiction of the formula)."""

    task: str
    early: int
    groups: tuple[FormulaGroup, ...]
    points: tuple[Point, ...]
    classes: dict[str, str]
    across: Judgement
    within: Judgement
    negative: bool


def formula_points(summary: SweepRun, group: str) -> list[Point]:
    """Each block pair of the run with a finite drive (:func:`~fade.testbed.summary.drive_blocks`'
    pairing), with the block-mean of each term."""
    terms = formula_terms(summary.curves)
    entropy = summary.curves["entropy"]
    points = []
    for this, nxt, span in block_spans(len(entropy), ENTROPY_BLOCK):
        obs = (finite_mean(entropy[nxt]) - finite_mean(entropy[this])) / ENTROPY_BLOCK
        drive, mass, cov = (finite_mean(terms[name][span]) for name in ("drive", "mass", "cov"))
        if math.isfinite(obs) and math.isfinite(drive):
            points.append((group, summary.run.estimator, drive, mass, cov, obs))
    return points


def across_runs(runs: Sequence[SweepRun], key: str) -> Stat:
    """Per seed, the correlation over that seed's runs of the early entropy change with ``key``."""
    by_seed: dict[int, list[SweepRun]] = defaultdict(list)
    for s in runs:
        by_seed[s.seed].append(s)
    return Stat.by_seed(
        (
            seed,
            pearson(
                np.array([s.scalars[key] for s in group]), np.array([s.scalars["entropy_change_early"] for s in group])
            ),
        )
        for seed, group in sorted(by_seed.items())
    )


def _group(name: str, runs: list[SweepRun], points: list[Point]) -> FormulaGroup:
    member = {s.run.estimator for s in runs}
    group_points = [pt for pt in points if (name == "all runs" or pt[0] == name) and pt[1] in member]
    x = np.array([pt[2] for pt in group_points])
    y = np.array([pt[5] for pt in group_points])
    eta = float((x * y).sum() / (x * x).sum()) if x.size and (x * x).sum() > 0 else math.nan
    return FormulaGroup(
        name=name, runs=len(runs), across=across_runs(runs, "drive_early"),
        within=Stat.of(s.scalars["drive_r_blocks"] for s in runs),
        within_mass=Stat.of(s.scalars["drive_mass_r_blocks"] for s in runs),
        within_cov=Stat.of(s.scalars["drive_cov_r_blocks"] for s in runs),
        across_mass=across_runs(runs, "drive_mass_early"), across_cov=across_runs(runs, "drive_cov_early"), eta=eta,
    )


def measure(task: str, context: Context) -> EntropyFormula | None:
    usable = [
        s for s in context.of(task) if logs_formula(s) and np.isfinite(s.curves["entropy"]).sum() >= 2 * ENTROPY_BLOCK
    ]
    if not usable:
        return None
    classes = {s.run.key: sign_class(s) for s in usable}
    named = [("all runs", usable), *((c, [s for s in usable if classes[s.run.key] == c]) for c in SIGN_CLASSES)]
    points = [p for s in usable for p in formula_points(s, classes[s.run.key])]
    groups = tuple(_group(name, runs, points) for name, runs in named if runs)
    return EntropyFormula(
        task=task, early=early_steps(context.steps(task)), groups=groups, points=tuple(points), classes=classes,
        across=judge((g.name, compare(g.across, 0.0, greater=True, digits=2)) for g in groups),
        within=judge((g.name, compare(g.within, 0.0, greater=True, digits=2)) for g in groups),
        negative=compare(groups[0].within, 0.0, greater=False).outcome == SUPPORTED,
    )


def verdict(r: EntropyFormula) -> list[VerdictLine]:
    return [
        line(f"The drive predicts which runs lose entropy early: positive correlation across runs of the entropy "
             f"change over the first {r.early} steps with the mean drive -[(m_S - m_F) H + Cov(A, log pi)] there",
             r.across),
        line(f"The drive predicts the entropy change within a run: positive correlation over blocks of "
             f"{ENTROPY_BLOCK} steps of the observed change with the block-mean drive", r.within),
    ]


def words(r: EntropyFormula) -> Words:
    table = Table(
        [
            "runs",
            "n",
            "(a) across runs: r per seed",
            "(b) within a run: r over blocks",
            "(b) with -(m_S - m_F) H alone",
            "(b) with -Cov(A, log pi) alone",
            "(a) with -(m_S - m_F) H alone",
            "(a) with -Cov(A, log pi) alone",
            "eta fitted (observed / drive)",
        ],
        caption=(
            f"(a): per seed, Pearson r over its runs of the entropy change per step over the first {r.early} steps "
            "(least-squares slope) with the mean drive there; mean ± std over seeds. (b): per run, Pearson r over "
            f"consecutive blocks of {ENTROPY_BLOCK} steps of the block-to-block entropy change per step with the mean "
            "drive over the same updates; mean ± std over runs. Runs are grouped by the sign of their mean m_S - m_F; "
            "eta: least squares through the origin over every block of the group."
        ),
    )
    for g in r.groups:
        table.rows.append([
            g.name, str(g.runs), g.across.text(2), g.within.text(2), g.within_mass.text(2), g.within_cov.text(2),
            g.across_mass.text(2), g.across_cov.text(2), f"{g.eta:.3g}" if math.isfinite(g.eta) else "—",
        ])
    said = Words("Entropy formula with both terms: dH ~ -eta [(m_S - m_F) H + Cov(A, log pi)]", [table], notes=[
        "What the check uses: per step, the logged entropy_drive = -[(m_S - m_F) H + Cov(A, log pi)] (the bracket of "
        "the corrected formula, docs/method.md section 4), its two terms, and the mean token entropy H before the "
        "update. The correlations are scale-free, so eta (Adam's effective step is not the learning rate) does not "
        "enter them. A sign group of one run per seed has no across-run correlation (not measured); centred runs "
        "have no mass term, so their drive is the covariance term alone."])
    if r.negative:
        said.notes.append(
            "The observed change correlates *negatively* with the drive within runs, beyond the rule's margin: the "
            "formula's sign, or its first-order reading at these step sizes, does not hold here.")
    return said


def formula_figure(r: EntropyFormula, view: TaskFigures) -> list[Drawing]:
    """The observed entropy change per step against the block-mean drive and each of its terms."""
    if not r.points:
        return []
    return [Drawing(f"{view.task}-entropy-formula.png",
                    "entropy formula with both terms: observed entropy change per step against the block-mean drive "
                    "and each term, coloured by the run's sign of m_S - m_F",
                    lambda p: figures.draw_entropy_formula(r.points, p, title=view.task))]


CLAIM = Claim(
    "entropy_formula",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(of_result=formula_figure),
)
