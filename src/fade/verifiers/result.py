"""What a verifier returns: a score, a reason from a fixed vocabulary, details, and a canonical form.

Every verifier in this package (math answers, programs run against tests) returns a
:class:`VerifierResult` and never raises on anything a model wrote: malformed text, a crash, a
hostile program all become a score of 0 with a reason. The reason says why in one word from
:data:`REASONS`; ``details`` holds what a person needs to look into one case (which test failed,
the exception, what isolation the sandbox had); ``canonical`` is the normal form of a correct
answer (the parsed value, the normalised program text) so that distinct correct solutions can
be counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["REASONS", "VerifierResult"]

#: Every reason a verifier may give, and what it means.
REASONS: dict[str, str] = {
    # both
    "correct": "the answer is right, or the program passed every test",
    "bad_reference": "the gold answer or the tests could not be read (a data problem, not the model's)",
    # math answers
    "wrong": "an answer was found and parsed, and it is not equivalent to the gold answer",
    "empty": "the completion is empty or only whitespace",
    "no_answer": "no answer could be extracted from the completion",
    "malformed": "an answer was extracted but is not a mathematical expression math-verify can read",
    "timeout": "parsing or comparing took longer than the per-call timeout",
    "error": "the checker failed on this input: math-verify, or a code sandbox that could not start or set up "
    "twice (an internal error, counted as wrong)",
    # programs
    "no_code": "the completion holds no program",
    "compile_error": "the program is not valid Python",
    "wrong_answer": "the program ran and printed or returned something else than expected",
    "runtime_error": "the program raised, exited with a non-zero status or died from a signal",
    "time_limit": "a test ran past its CPU or wall-clock time limit",
    "memory_limit": "the program (or the math check) ran out of its address-space limit",
    "output_limit": "the program wrote more than the output cap",
    "sandbox_violation": "the program tried something the sandbox forbids (network, writing outside its "
    "directory, more processes than allowed, signalling outside its sandbox) or broke its supervisor",
}


@dataclass(frozen=True)
class VerifierResult:
    """A verifier's judgement of one completion.

    ``score`` is 1.0 when ``reason`` is "correct" and 0.0 otherwise; ``canonical`` is set only
    for correct results.
    """

    score: float
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    canonical: str | None = None

    @property
    def correct(self) -> bool:
        return self.reason == "correct"

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "reason": self.reason, "canonical": self.canonical, "details": self.details}

    @classmethod
    def of(cls, reason: str, canonical: str | None = None, **details: Any) -> VerifierResult:
        """A result with the score that ``reason`` implies."""
        if reason not in REASONS:
            raise ValueError(f"unknown reason {reason!r}; expected one of {sorted(REASONS)}")
        correct = reason == "correct"
        return cls(1.0 if correct else 0.0, reason, details, canonical if correct else None)
