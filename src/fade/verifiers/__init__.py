"""Verifiable rewards for real tasks, and pass@k evaluation of generated samples.

- :mod:`fade.verifiers.math_answer`: final answers checked with Hugging Face's math-verify (the
  ``math`` extra), in worker processes with a hard per-call timeout.
- :mod:`fade.verifiers.code_exec`: programs run against test cases (LiveCodeBench, CodeContests,
  TACO/APPS formats, read by :mod:`fade.verifiers.testcases`) inside the sandbox of
  :mod:`fade.verifiers.sandbox`.
- :mod:`fade.verifiers.rewards`: the same rewards with TRL's ``reward_funcs`` signature and
  verl's custom ``compute_score`` signature.
- :mod:`fade.verifiers.evaluate`: ``fade eval``: score a samples file incrementally and
  resumably, and report pass@k, per-problem solve rates and distinct correct solutions.

Every verifier returns a :class:`VerifierResult` (score, reason, details, canonical form) and
never raises on what a model wrote. This package sits above the core and never imports the
testbed; the testbed reaches these verifiers by name (``--verifier math|code``).
"""

from .code_exec import CodeVerifier, extract_program, score_code
from .math_answer import MathVerifier, score_math
from .result import REASONS, VerifierResult
from .sandbox import Limits
from .testcases import TestSuite, parse_tests

__all__ = [
    "REASONS",
    "CodeVerifier",
    "Limits",
    "MathVerifier",
    "TestSuite",
    "VerifierResult",
    "extract_program",
    "parse_tests",
    "score_code",
    "score_math",
]
