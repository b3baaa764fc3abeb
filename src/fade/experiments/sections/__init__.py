"""The claims in words: each measured claim (:mod:`fade.experiments.claims`) becomes a section of
the report, with its tables, verdict lines and notes.

A claim's result type has one wording function, registered with :func:`words`: it turns the
result into a :class:`~.base.ClaimSection` (a title, tables of formatted cells, a verdict line per
verdict, notes, and for a design check its ``check`` line). The themed modules hold them:
:mod:`.controls`, :mod:`.fixed`. :func:`evaluate` and
:func:`design_checks` measure and word in one call, for :mod:`~fade.experiments.results_report`
and the tests.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import claims
from ..claims import base as claim_base
from ..design import Preset
from ..runs import SweepRun
from . import controls, fixed  # noqa: F401  (each registers its wording on import)
from .base import ClaimSection, Table, VerdictLine, line, section, words

__all__ = ["ClaimSection", "Table", "VerdictLine", "design_checks", "evaluate", "line", "section", "words"]


def evaluate(
    summaries: Sequence[SweepRun], preset: Preset | None = None, choice: str | None = None
) -> list[ClaimSection]:
    """Every claim the runs can answer, per task, in the report's order, in words (the design
    checks that come before them: :func:`design_checks`)."""
    return [claim_base.section(f) if f.claim.words else section(f) for f in claims.measure(summaries, preset, choice)]


def design_checks(summaries: Sequence[SweepRun]) -> list[ClaimSection]:
    """What must hold before the claims can be read, per task: the regime check on every task first,
    then FADE's sign knob, then the collapse check, each with its ``check`` line whose outcome is
    one of its module's outcome words or ``not measured``; a section is absent where nothing it
    needs ran."""
    return [claim_base.section(f, check=True) if f.claim.words else section(f)
            for f in claims.measure_checks(summaries)]
