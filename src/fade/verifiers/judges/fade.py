"""The ``fade`` profile: fade's own rules (docs/verifiers.md, "Judging"), for the ``tests`` field
and whenever it is asked for: output tokens, integers exact, other numbers within the verifier's
``float_tolerance``, an expected one-element list also accepting its element.
"""

from __future__ import annotations

from typing import Any

from ..testcases import outputs_match, values_match
from .base import Judge

__all__ = ["JUDGE"]


class FadeRules(Judge):
    name = "fade"
    benchmark = "fade's own rules"
    fields = ("tests",)
    format_doc = "`tests`"
    follows = "fade's rules above"
    fallback = True

    def stdout_match(self, got: str, expected: str, tolerance: float) -> bool:
        return outputs_match(got, expected, tolerance)

    def value_match(self, got: Any, expected: Any, tolerance: float) -> bool:
        return values_match(got, expected, tolerance)


JUDGE = FadeRules()
