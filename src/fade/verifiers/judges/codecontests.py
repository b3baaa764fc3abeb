"""The ``codecontests`` profile: DeepMind's CodeContests tester (``execution/tester_sandboxer.cc``),
for problems with ``public_tests`` / ``private_tests`` / ``generated_tests``.

Rules C1-C5 of docs/verifiers.md: the program as it is, one process per test; outputs split on
the tester's five whitespace characters into ASCII-lowercased tokens and compared as text, or as
doubles within 1e-5 (an expected integer by fade's integer rule: exactly); a test passes on its
output however the program ended; 10 s and 288 MB.
"""

from __future__ import annotations

import re
from typing import Any

from ..run_options import RunOptions
from ..testcases import TestCase, TestSuite, integer_guard_ok, integer_text, is_ascii_int
from .base import Judge

__all__ = ["JUDGE", "codecontests_match"]

_DOUBLE = re.compile(r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf(?:inity)?|nan)\s*", re.ASCII)
# SplitAndLowercase: absl::ByAnyChar(" \n\t\r\v") with empty pieces skipped, absl::AsciiStrToLower.
_SEPARATORS = re.compile("[ \n\t\r\v]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _tokens(output: str) -> list[str]:
    return [t.translate(_ASCII_LOWER) for t in _SEPARATORS.split(output) if t]


def _double(token: str) -> float | None:
    try:
        return float(token) if _DOUBLE.fullmatch(token) else None
    except (ValueError, OverflowError):
        return None


def codecontests_match(got: str, expected: str) -> bool:
    """OutputsMatch: both outputs split on the tester's whitespace (space, \\n, \\t, \\r, \\v
    only) and lowercased in ASCII only; equal token lists, or as many tokens with each pair equal
    by ValuesMatch: a non-numeric token as text, numbers as doubles within an absolute 1e-5,
    strictly. An expected integer (any size) is matched only by an integer of the same value,
    compared exactly (fade's integer rule; the tester's doubles would take 10**18 + 1 for 10**18)."""
    a, b = _tokens(got), _tokens(expected)
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        if not integer_guard_ok(x, y):
            return False
        if is_ascii_int(y):
            if integer_text(x) != integer_text(y):
                return False
            continue
        dx, dy = _double(x), _double(y)
        if dx is None or dy is None or not abs(dx - dy) < 1e-5:
            return False
    return True


class CodeContests(Judge):
    name = "codecontests"
    benchmark = "CodeContests"
    fields = ("public_tests", "private_tests", "generated_tests")
    format_doc = "`public_tests` / `private_tests` / `generated_tests`"
    follows = "DeepMind's CodeContests tester, `execution/tester_sandboxer.cc`"
    time_seconds = 10.0
    memory_mb = 288

    def run_options(self, suite: TestSuite) -> RunOptions:
        return RunOptions(stop_on_failure=False)

    def call_test(self, case: TestCase) -> tuple[Any, Any]:
        raise ValueError(
            "CodeContests has input/output tests only: the codecontests judge cannot judge call-based tests"
        )

    def stdout_match(self, got: str, expected: str, tolerance: float) -> bool:
        return codecontests_match(got, expected)

    def passes_after(
        self, reason: str, record: dict[str, Any], expected: Any, suite: TestSuite, tolerance: float
    ) -> bool:
        # C3: the output decides, however the program ended.
        return reason in ("runtime_error", "time_limit", "memory_limit") and suite.call is None \
            and self.stdout_match(record.get("stdout", ""), expected, tolerance)


JUDGE = CodeContests()
