"""The report's structures (:class:`Table`, :class:`VerdictLine`, :class:`ClaimSection`) and the
registry of wording functions, one per claim result type (:func:`words`, :func:`section`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..claims.base import ClaimSection, Finding, Table, VerdictLine, line

__all__ = ["ClaimSection", "Table", "VerdictLine", "line", "section", "words"]

R = TypeVar("R")


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
    worded.claim = finding.claim
    return worded
