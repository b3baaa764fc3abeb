"""FADE's defaults: the candidate chosen on the tuning task (:mod:`.carry_over` asks whether the
choice carries over to the tasks that take it without retuning).

Applies to the preset's tuning task, once the preset tunes: it lists every candidate's score and
the one :func:`choose_tuned` picks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fade.specs import parse_spec

from ..design import Tuning, canonical_spec
from ..runs import Runs, SweepRun
from ..stats import Stat
from .base import Claim, Context, Figures, Reads, Table, VerdictLine, Words


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


def verdict(r: Defaults) -> list[VerdictLine]:
    return []  # a choice, not a claim: the candidates' scores are its table


def words(r: Defaults) -> Words:
    tuning = r.tuning
    table = Table(["candidate", f"{tuning.score} (selection score)", "peak pass@1", "chosen"],
                  caption=f"rule: the highest seed-mean {tuning.score} on {tuning.task}; ties to the earlier candidate")
    for row in r.rows:
        table.rows.append([row.candidate, row.score.text(), row.peak_pass1.text(),
                           "**yes**" if row.candidate == r.chosen else ""])
    said = Words(f"FADE's defaults: chosen on {tuning.task}, confirmed without retuning", [table])
    if r.chosen is None:
        said.notes.append("No candidate finished: nothing was chosen.")
    return said


CLAIM = Claim(
    "defaults",
    reads=Reads(tasks=_tuning_task),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
