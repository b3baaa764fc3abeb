"""Verdicts a hostile or unlucky program must not be able to bend: numbers compared by the
expected value's kind, one sample's bounded hold on a worker, nothing carried from one test to
the next, output counted in bytes, a standard library without site-packages, the supervisor
hidden from the program, exit statuses as the program chose them, and eval scores reused only
for the reference they were made against."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from fade.verifiers.code_exec import CodeVerifier
from fade.verifiers.sandbox import Limits, SandboxRun, isolation_report
from fade.verifiers.testcases import outputs_match, values_match

LIMITS = Limits(time_seconds=1.0, memory_mb=256, processes=16, output_bytes=64 << 10, disk_mb=16)


@pytest.fixture(scope="module")
def verifier() -> CodeVerifier:
    return CodeVerifier(limits=LIMITS, workers=2)


@pytest.fixture(scope="module")
def isolation() -> dict:
    return isolation_report()


def _needs_namespaces(isolation: dict) -> None:
    if isolation["mode"] == "none":
        pytest.skip(f"no namespaces on this machine ({isolation['notes']}): the weaker isolation is documented")


def _stdin_tests(*pairs: tuple[str, str]) -> dict:
    return {"tests": [{"input": i, "output": o} for i, o in pairs]}


# -- 1. numbers: an integer expected value is matched by an integer only ---------------------------


@pytest.mark.parametrize("got, expected", [
    ("1000000000000000000", "999999999999999999"),  # integers compare exactly
    ("1.0000000000000001e18", "1000000000000000000"),  # a float token within 1e-6 of a large integer
    ("1e9", "999999999"),
    ("1000000000.0", "1000000000"),  # an integer value written as a float
    ("1414213563.0", "1414213562"),
    ("٣", "3"),  # Arabic-Indic digit
    ("３", "3"),  # full-width digit
    ("1_000", "1000"),
    ("1e400", "inf"),
    ("inf", "1e400"),
    ("0.5000001", "0.5000001e400"),
    ("nan", "nan0"),
])
def test_an_integer_or_ascii_number_is_never_matched_by_another_kind_of_token(got, expected):
    assert not outputs_match(got, expected, 1e-6)


@pytest.mark.parametrize("got, expected", [
    ("007", "7"), ("+7", "7"), ("-0", "0"),
    ("0.3333333", "0.33333333333"), ("0.5", "0.50"), ("2", "2.0"), (".5", "0.5"), ("1e-9", "0.000000001"),
    ("inf", "inf"),  # the same text is always the same token
])
def test_numbers_of_the_expected_kind_still_match(got, expected):
    assert outputs_match(got, expected, 1e-6)


def test_call_based_integers_need_integers():
    assert not values_match(1000000007.0, 1000000007)
    assert not values_match(3.0, 3)
    assert not values_match([1.0, 2], [1, 2])
    assert not values_match({"a": 2.0}, {"a": 2})
    assert values_match(3, 3) and values_match(3, 3.0) and values_match(0.1 + 0.2, 0.3)
    assert values_match(3, [3]) and not values_match(3.0, [3])
    assert not values_match(float("inf"), 1e308) and values_match(float("inf"), float("inf"))
    assert not values_match("3", 3) and not values_match(None, 0)


def test_a_float_answer_to_an_integer_test_is_wrong_end_to_end(verifier):
    n = 1414213562
    expected = str(n * (n + 1) // 2 + 78_000_000)  # off by 78 million: still within 1e-6 relative
    stdout = verifier.score(f"n = {n}\nprint(n * (n + 1) / 2)", _stdin_tests(("", expected)))
    assert stdout.reason == "wrong_answer"
    exact = verifier.score(f"n = {n}\nprint(n * (n + 1) // 2)", _stdin_tests(("", str(n * (n + 1) // 2))))
    assert exact.reason == "correct"
    call = {"input_output": json.dumps({"fn_name": "f", "inputs": [[1000000007]], "outputs": [1000000007]})}
    assert verifier.score("def f(n):\n    return float(n)", call).reason == "wrong_answer"
    assert verifier.score("def f(n):\n    return n", call).reason == "correct"
