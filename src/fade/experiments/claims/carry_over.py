"""FADE's defaults carry over: on each task of a plan that takes the choice made on the tuning task
(:mod:`.defaults`) without retuning, FADE's rank there among the static baselines, and the
verdict that its pass@k mean beats the best static baseline's.

Applies to each task of a plan that takes the choice, once a candidate was chosen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..design import STATIC_BASELINES
from ..stats import Stat, compare
from .base import Claim, Context, Figures, Judgement, Reads, Table, VerdictLine, Words, judge, line
from .defaults import choose_tuned

#: The scalars the confirmation ranks FADE by, with their names in words.
RANKED = {"peak_pass1": "peak pass@1", "passk_mean": "pass@k mean"}


@dataclass(frozen=True)
class Rank:
    """FADE's place among ``order`` (the specs by seed-mean ``key``, highest first) and the values."""

    key: str
    order: tuple[str, ...]
    fade: Stat
    first: Stat


@dataclass(frozen=True)
class Confirm:
    """The choice on a task that takes it without retuning: its ranks among the static baselines and
    the verdict against the best of them (``ranks`` empty and ``carries`` None when the choice or
    every baseline did not run there)."""

    task: str
    tuning_task: str
    chosen: str
    ranks: tuple[Rank, ...]
    best: str | None
    carries: Judgement | None


def _confirm_tasks(context: Context) -> Sequence[str]:
    preset = context.preset
    if preset is None or preset.tuning is None or choose_tuned(preset.tuning, context.summaries)[0] is None:
        return []
    return [plan.task for plan in preset.plans if plan.tuned and plan.task in context.tasks]


def _mean_or(stat: Stat, missing: float) -> float:
    return stat.mean if stat.n else missing


def measure(task: str, context: Context) -> Confirm:
    tuning = context.preset.tuning
    chosen = choose_tuned(tuning, context.summaries)[0]
    runs = context.runs(task)
    specs = runs.present([*STATIC_BASELINES, chosen])
    if not runs.has(chosen) or len(specs) < 2:
        return Confirm(task=task, tuning_task=tuning.task, chosen=chosen, ranks=(), best=None, carries=None)
    ranks = []
    for key in RANKED:
        order = sorted(specs, key=lambda s: -_mean_or(runs.stat(s, key), -math.inf))
        ranks.append(Rank(key, tuple(order), runs.stat(chosen, key), runs.stat(order[0], key)))
    best = max(runs.present(STATIC_BASELINES), key=lambda s: _mean_or(runs.stat(s, "passk_mean"), -math.inf))
    carries = judge(
        [("pass@k mean", compare(runs.stat(chosen, "passk_mean"), runs.stat(best, "passk_mean"), greater=True))]
    )
    return Confirm(task=task, tuning_task=tuning.task, chosen=chosen, ranks=tuple(ranks), best=best, carries=carries)


def verdict(r: Confirm) -> list[VerdictLine]:
    if r.carries is None:
        return []
    return [line(f"The defaults chosen on {r.tuning_task} carry over: FADE's pass@k mean on {r.task} beats the best "
                 f"static baseline's ({r.best})", r.carries)]


def words(r: Confirm) -> Words:
    said = Words(f"FADE with the {r.tuning_task} defaults ({r.chosen}) on {r.task}")
    if r.carries is None:
        said.notes.append(f"No finished run of {r.chosen} with baselines on {r.task}.")
        return said
    rank = Table(["by", "FADE's rank", "first", "FADE", "first's value"])
    for rk in r.ranks:
        rank.rows.append([RANKED[rk.key], f"{rk.order.index(r.chosen) + 1} of {len(rk.order)}", rk.order[0],
                          rk.fade.text(), rk.first.text()])
    said.tables.append(rank)
    return said


CLAIM = Claim(
    "confirm",
    reads=Reads(tasks=_confirm_tasks),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
