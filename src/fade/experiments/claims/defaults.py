"""FADE's defaults: the candidate chosen on the tuning task, and (:data:`CONFIRM`) whether the
choice carries over to the tasks that take it without retuning.

:data:`CLAIM` applies to the preset's tuning task, once the preset tunes: it lists every
candidate's score and the one :func:`choose_tuned` picks. :data:`CONFIRM` applies to each task of
a plan that takes the choice, once a candidate was chosen: FADE's rank there among the static
baselines, and the verdict that its pass@k mean beats the best static baseline's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fade.specs import parse_spec

from ..design import STATIC_BASELINES, Tuning, canonical_spec
from ..runs import Runs, SweepRun
from ..stats import Stat, compare
from .base import Claim, Context, Judgement, judge

#: The scalars the confirmation ranks FADE by.
RANKED = ("peak_pass1", "passk_mean")


@dataclass(frozen=True)
class Candidate:
    """A tuning candidate (canonical spec) with its selection score and peak pass@1 over seeds."""

    candidate: str
    score: Stat
    peak_pass1: Stat


def choose_tuned(tuning: Tuning, summaries: Sequence[SweepRun]) -> tuple[str | None, list[Candidate]]:
    """The candidate with the highest seed-mean score on the tuning task, and every candidate's row.

    Candidates without a finished run are listed with n = 0 and cannot be chosen. A tie goes to
    the candidate with the fewest parameters set (the estimator's defaults): when a knob changes
    nothing in these runs (an entropy target the entropy never reaches gives bit-identical runs),
    the defaults are kept rather than reported as tuned.
    """
    runs = Runs([s for s in summaries if s.task == tuning.task])
    rows = []
    best, best_key = None, (-math.inf, -math.inf)
    for candidate in tuning.candidates:
        score = runs.stat(candidate, tuning.score)
        rows.append(Candidate(canonical_spec(candidate), score, runs.stat(candidate, "peak_pass1")))
        key = (score.mean, -len(parse_spec(candidate)[1]))
        if score.n and key > best_key:
            best, best_key = canonical_spec(candidate), key
    return best, rows


@dataclass(frozen=True)
class Defaults:
    """The tuning (task, candidates, score), every :class:`Candidate` and the choice (None when no
    candidate finished)."""

    task: str
    tuning: Tuning
    rows: tuple[Candidate, ...]
    chosen: str | None


def _tuning_task(context: Context) -> Sequence[str]:
    preset = context.preset
    return [preset.tuning.task] if preset is not None and preset.tuning is not None else []


def measure(task: str, context: Context) -> Defaults:
    tuning = context.preset.tuning
    chosen, rows = choose_tuned(tuning, context.summaries)
    return Defaults(task=task, tuning=tuning, rows=tuple(rows), chosen=chosen)


CLAIM = Claim("defaults", measure, tasks=_tuning_task)


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


def confirm(task: str, context: Context) -> Confirm:
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


CONFIRM = Claim("confirm", confirm, tasks=_confirm_tasks)
