"""The first-order entropy formula, mass term only: dH ~ eta [(m_S - m_F) H - Cov(A, log pi)] read
on runs that did not log the covariance term (the formula as first written here; docs/method.md,
section 4, corrects its sign).

Applies to at least two runs of a task with :data:`~fade.testbed.summary.ENTROPY_BLOCK` x 2 finite
entropies and no logged drive; runs that logged both terms are read by
:mod:`.entropy_formula`. Two correlations per seed: over consecutive blocks of steps (all runs
of the seed pooled, :func:`~fade.testbed.summary.entropy_blocks`), and across runs over the early
steps. Centred estimators (m_S = m_F in every batch) predict no change; where every run is
centred there is nothing to correlate and no verdict. Its figure draws every block's predicted
against its observed change.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from fade.testbed.summary import ENTROPY_BLOCK, early_steps, entropy_blocks, mass_imbalance

from .. import figures
from ..runs import SweepRun
from ..stats import SUPPORTED, Stat, Verdict, compare, pearson
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


@dataclass(frozen=True)
class EntropyCheck:
    """Per seed, Pearson r over blocks (``block_r``) and across runs (``run_r``); every block's
    (spec, seed, predicted, observed) in ``points``; eta fitted through the origin; the centred
    runs' early entropy drop; the verdicts, None where there is nothing to correlate."""

    task: str
    early: int
    seeds: int
    runs: int
    block_r: tuple[float, ...]
    run_r: tuple[float, ...]
    points: tuple[tuple[str, int, float, float], ...]
    eta: float
    centred: int
    centred_drop: Stat
    blocks: Judgement | None
    across_runs: Judgement | None
    negative: Verdict | None

    @property
    def all_centred(self) -> bool:
        return self.centred == self.runs


def is_centred(summary: SweepRun) -> bool:
    """Whether m_S = m_F in every batch of the run, up to float rounding."""
    imbalance = mass_imbalance(summary.curves["positive_mass"], summary.curves["negative_mass"])
    return bool(np.all(imbalance[np.isfinite(imbalance)] == 0))


def logs_formula(summary: SweepRun) -> bool:
    """Whether the run logged the entropy formula's terms (runs from before the trainer did not)."""
    return bool(np.isfinite(summary.curves["entropy_drive"]).any())


def measure(task: str, context: Context) -> EntropyCheck | None:
    usable = [s for s in context.of(task)
              if np.isfinite(s.curves["entropy"]).sum() >= 2 * ENTROPY_BLOCK and not logs_formula(s)]
    if len(usable) < 2:
        return None
    by_seed: dict[int, list[SweepRun]] = defaultdict(list)
    for s in usable:
        by_seed[s.seed].append(s)
    block_r, run_r, points = [], [], []
    for seed, group in sorted(by_seed.items()):
        pred, obs = [], []
        for s in group:
            p, o = entropy_blocks(s.steps, s.curves["entropy"], s.curves["positive_mass"], s.curves["negative_mass"])
            pred.extend(p)
            obs.extend(o)
            points.extend((s.run.estimator, seed, a, b) for a, b in zip(p, o))
        block_r.append(pearson(np.array(pred), np.array(obs)))
        run_r.append(pearson(
            np.array([s.scalars["entropy_predicted_early"] for s in group]),
            np.array([s.scalars["entropy_observed_early"] for s in group]),
        ))
    pred_all = np.array([p[2] for p in points])
    obs_all = np.array([p[3] for p in points])
    eta = float((pred_all * obs_all).sum() / (pred_all**2).sum()) if points and (pred_all**2).sum() > 0 else math.nan
    centred = [s for s in usable if is_centred(s)]
    blocks = across = negative = None
    decidable = Stat.of(block_r).n or Stat.of(run_r).n
    if len(centred) < len(usable) and decidable:
        blocks = judge([("blocks", compare(Stat.of(block_r), 0.0, greater=True, digits=2))])
        across = judge([("runs", compare(Stat.of(run_r), 0.0, greater=True, digits=2))])
        negative = compare(Stat.of(block_r), 0.0, greater=False)
    return EntropyCheck(
        task=task, early=early_steps(context.steps(task)), seeds=len(by_seed), runs=len(usable),
        block_r=tuple(block_r), run_r=tuple(run_r), points=tuple(points), eta=eta, centred=len(centred),
        centred_drop=Stat.of(s.scalars["entropy_drop_rate"] for s in centred),
        blocks=blocks, across_runs=across, negative=negative,
    )


def _fmt(x: float, digits: int = 3) -> str:
    return "—" if not math.isfinite(x) else f"{x:.{digits}f}"


def _correlated(r: EntropyCheck) -> bool:
    """Whether there is something to correlate: a run that is not centred, and correlations."""
    return not r.all_centred and r.blocks is not None and r.across_runs is not None and r.negative is not None


def verdict(r: EntropyCheck) -> list[VerdictLine]:
    if not _correlated(r):
        return []
    return [
        line("The first-order term (m_S - m_F) H predicts the observed entropy change (positive correlation, block "
             "level)", r.blocks),
        line("The first-order term predicts which runs lose entropy early (positive correlation across runs)",
             r.across_runs),
    ]


def words(r: EntropyCheck) -> Words:
    seeds = max(r.seeds, 1)
    table = Table(["level", "pairs per seed", "Pearson r per seed", "r: mean ± std over seeds"])
    table.rows.append([
        f"blocks of {ENTROPY_BLOCK} steps, all runs of a seed pooled",
        f"{len(r.points) / seeds:.0f}", ", ".join(_fmt(x, 2) for x in r.block_r), Stat.of(r.block_r).text(2)])
    table.rows.append([
        f"runs: first {r.early} steps, one pair per run",
        f"{r.runs / seeds:.0f}", ", ".join(_fmt(x, 2) for x in r.run_r), Stat.of(r.run_r).text(2)])
    said = Words("First-order entropy formula: dH ~ eta [(m_S - m_F) H - Cov(A, log pi)]", [table])
    said.notes.append(
        "What the check uses: per step, the logged positive_mass (m_S) and negative_mass (m_F) of the batch's "
        "advantages and the policy's mean token entropy H before the update. Predicted change over a span: the sum "
        "of (m_S - m_F) H over its updates. Observed: the change of the block-mean entropy. Cov(A, log pi) is not "
        "logged by the trainer, so the second term is left out, and eta is fitted (Adam's step is not the "
        f"learning rate): least-squares eta through the origin = {r.eta:.3g}. The correlation is scale-free."
    )
    if r.centred:
        said.notes.append(
            f"Centred estimators give m_S = m_F in every batch, so the first term predicts no change for them; their "
            f"entropy still falls by {r.centred_drop.text(2, scale=1e3)} x1e-3 per step over the first {r.early} "
            f"steps ({r.centred} runs): that is what the omitted covariance term does on its own."
        )
    if r.all_centred:
        said.notes.append(
            "Every run here is of a centred estimator (m_S = m_F in every batch, up to float rounding), so the "
            "first term predicts no change anywhere and there is nothing to correlate: the check needs sign-biased "
            "runs (psr, nsr, asym_grpo, w_reinforce, FADE once delta < 1).")
    elif not _correlated(r):
        said.notes.append(
            f"Too few steps or runs for a correlation (blocks of {ENTROPY_BLOCK} steps, >= 3 pairs per seed)."
        )
    elif r.negative.outcome == SUPPORTED:
        margin = "with its 95% interval over seeds below 0" if r.negative.interval else "beyond the spread over seeds"
        said.notes.append(
            f"The observed change correlates *negatively* with (m_S - m_F) H {margin}: the "
            "mass-imbalance term acts with the sign of the prose claim (more success mass, lower entropy), the "
            "opposite of the formula as first written here (docs/method.md, section 4, corrects its sign)."
        )
    return said


def check_figure(r: EntropyCheck, view: TaskFigures) -> list[Drawing]:
    """Every block's predicted against its observed entropy change, with the fitted eta."""
    if not r.points:
        return []
    return [Drawing(f"{view.task}-entropy-check.png", "first-order entropy check: predicted against observed change",
                    lambda p: figures.draw_entropy_check(r.points, r.eta, view.palette, p, title=view.task))]


CLAIM = Claim(
    "entropy_check",
    reads=Reads(),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(of_result=check_figure),
)
