"""The report's structures (:class:`Table`, :class:`VerdictLine`, :class:`ClaimSection`) and the
registry of wording functions, one per claim result type (:func:`words`, :func:`section`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..claims import Finding, Judgement
from ..stats import Verdict

__all__ = ["ClaimSection", "Table", "VerdictLine", "line", "section", "words"]

R = TypeVar("R")


@dataclass
class Table:
    """A markdown table: a header row and rows of cells (already formatted)."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""


@dataclass
class VerdictLine:
    """A verdict in words: the statement, its outcome, the numbers behind it, and its named parts."""

    statement: str
    outcome: str
    detail: str
    parts: list[tuple[str, Verdict]] = field(default_factory=list)


@dataclass
class ClaimSection:
    """One claim on one task as the report shows it: tables, verdict lines, notes, a design check's
    own line (``check``), and the typed ``result`` it words (the figures read it)."""

    key: str
    title: str
    task: str
    tables: list[Table] = field(default_factory=list)
    verdicts: list[VerdictLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    check: VerdictLine | None = None
    result: Any = None


def line(statement: str, judgement: Judgement) -> VerdictLine:
    """The verdict line of ``judgement``: one part's detail as it is, several parts' joined."""
    parts = list(judgement.parts)
    if len(parts) == 1:
        return VerdictLine(statement, judgement.outcome, parts[0][1].detail, parts)
    detail = "; ".join(f"{name}: {v.outcome}, {v.detail}" for name, v in parts)
    return VerdictLine(statement, judgement.outcome, detail, parts)


_WORDS: dict[type, Callable[[str, Any], ClaimSection]] = {}


def words(result_type: type[R]) -> Callable[[Callable[[str, R], ClaimSection]], Callable[[str, R], ClaimSection]]:
    """Register the wording of ``result_type``: a function of (claim key, result) to its section."""

    def register(fn: Callable[[str, R], ClaimSection]) -> Callable[[str, R], ClaimSection]:
        _WORDS[result_type] = fn
        return fn

    return register


def section(finding: Finding) -> ClaimSection:
    """The section of a measured claim, worded by the function registered for its result's type."""
    try:
        word = _WORDS[type(finding.result)]
    except KeyError:
        raise TypeError(f"no wording registered for {type(finding.result).__name__} (claim {finding.key!r}); "
                        "register one with fade.experiments.sections.words") from None
    worded = word(finding.key, finding.result)
    worded.result = finding.result
    return worded
