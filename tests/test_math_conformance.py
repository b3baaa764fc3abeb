"""The math reward's verdicts do not depend on which ANTLR runtime math-verify's LaTeX parser runs on.

verl's environment has antlr4-python3-runtime 4.9.3 (hydra-core and omegaconf pin 4.9.*); a plain
``pip install 'fade-rl[math]'`` gets 4.13.2. ``data/math_conformance.jsonl`` holds 454 LaTeX answers
(integers, fractions, percentages, roots, functions, sets, intervals, matrices, units, text, ...)
against gold answers, each with the verdict math-verify gives under 4.13.2, the runtime its parser
is generated for today. This file runs in both environments: in the suite (4.9.3, next to verl)
and in ``make check-wheel``'s clean environment with 4.13.2 (``FADE_EXPECT_ANTLR=4.13.2`` makes
the test check that it got that runtime), so the same answers get the same verdicts in both.
"""

from __future__ import annotations

import ast
import json
import logging
import os
from pathlib import Path

import pytest

pytest.importorskip("math_verify")

from fade.verifiers.math_answer import MathVerifier, align_latex_parser, math_backend  # noqa: E402

CASES = Path(__file__).with_name("data") / "math_conformance.jsonl"


@pytest.fixture(scope="module")
def verifier():
    with MathVerifier(timeout=10.0, workers=2) as v:
        yield v


def _cases() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_conformance_set_gets_the_same_verdicts_under_every_antlr_runtime(verifier):
    runtime = math_backend()["antlr4-python3-runtime"]
    expected = os.environ.get("FADE_EXPECT_ANTLR")
    if expected:
        assert runtime == expected, f"this environment was meant to have antlr {expected}, it has {runtime}"
    cases = _cases()
    assert len(cases) == 454
    results = verifier.score_many([c["completion"] for c in cases], [c["gold"] for c in cases])
    differ = [
        (c["completion"], c["gold"], c["reason"], r.reason) for c, r in zip(cases, results) if r.reason != c["reason"]
    ]
    assert not differ, f"antlr {runtime}: {len(differ)} verdicts differ from the recorded ones, e.g. {differ[:5]}"


@pytest.mark.parametrize("completion, gold, reason", [
    ("\\boxed{25\\%}", "25", "correct"),  # the case: "malformed" under 4.9.3 before
    ("\\boxed{25\\%}", "0.25", "correct"),
    ("$\\boxed{50 \\%}$", "\\frac{1}{2}", "correct"),
    ("\\boxed{25\\%}", "26", "wrong"),
])
def test_percentages_are_read_as_math_verify_reads_them_under_antlr_4_13_2(verifier, completion, gold, reason):
    assert verifier.score(completion, gold).reason == reason


def _accessors(parser_file: Path) -> dict[str, set[str]]:
    tree = ast.parse(parser_file.read_text(encoding="utf-8"))
    return {node.name: {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name.endswith("Context")}


def test_the_generated_parsers_differ_in_the_one_accessor_fade_adds():
    # latex2sympy2_extended ships a parser per runtime; read both as source (only the installed
    # runtime's can be imported) and check that fade's alignment covers every difference.
    import latex2sympy2_extended

    gen = Path(latex2sympy2_extended.__file__).parent / "gen"
    old, new = _accessors(gen / "antlr4_9_3" / "PSParser.py"), _accessors(gen / "antlr4_13_2" / "PSParser.py")
    assert set(old) == set(new)
    missing = {(name, accessor) for name in new for accessor in new[name] - old[name]}
    assert missing == {("AtomContext", "FUNC_GAMMA")}
    assert all(old[name] <= new[name] for name in old)
    from latex2sympy2_extended.antlr_parser import PSParser

    align_latex_parser()
    assert hasattr(PSParser.AtomContext, "FUNC_GAMMA")
    assert align_latex_parser() is None  # once is enough


def test_the_verifier_says_which_runtime_it_found(caplog):
    from fade.verifiers import math_answer

    math_answer._backend_said = False
    with caplog.at_level(logging.INFO, logger="fade.verifiers.math_answer"), \
            MathVerifier(timeout=10.0, workers=1) as verifier:
        assert verifier.score("\\boxed{1}", "1").correct
    said = [r.getMessage() for r in caplog.records if r.name == "fade.verifiers.math_answer"]
    runtime = math_backend()["antlr4-python3-runtime"]
    assert len(said) == 1 and f"antlr4-python3-runtime {runtime}" in said[0] and "math-verify" in said[0]
    assert ("FUNC_GAMMA" in said[0]) == runtime.startswith("4.9")
