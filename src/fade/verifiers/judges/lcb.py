"""The ``lcb`` profile: LiveCodeBench's grader (``lcb_runner/evaluation/testing_util.py``,
2025-07), for problems with ``public_test_cases`` / ``private_test_cases``.

Rules L1-L17 of docs/verifiers.md: the program is the lines between the last two fences; a
prelude of imports and a recursion limit; a stdin program wrapped into ``wrapped_function`` and
run in-process with a stand-in standard input and captured output; call-based tests read as JSON
lines; outputs compared line by line as text or exact Decimals; return values with ``==``.
"""

from __future__ import annotations

import ast
from decimal import Decimal, InvalidOperation
from typing import Any

from ..run_options import CAPTURED, RunOptions
from ..testcases import TestCase, TestSuite, integer_guard_ok, lcb_json
from .base import Judge, guarded_equal

__all__ = ["JUDGE", "LCB_PRELUDE", "lcb_extract", "lcb_stdout_match", "lcb_value_match", "lcb_wrap"]

#: What LiveCodeBench prepends to every program (``import_string``): star imports of these
#: modules in this order, plain imports of the same modules but builtins and typing, and a
#: recursion limit of 50,000.
LCB_STAR_IMPORTS = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                    "statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")
LCB_PRELUDE = (
    "".join(f"from {m} import *\n" for m in LCB_STAR_IMPORTS)
    + "".join(f"import {m}\n" for m in LCB_STAR_IMPORTS if m not in ("builtins", "typing"))
    + "sys.setrecursionlimit(50000)\n"
)


def _drop_main_guard(code: str) -> str:
    """A last top-level ``if __name__ == '__main__':`` is replaced by its body (clean_if_name)."""
    try:
        tree = ast.parse(code)
        last = tree.body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            return ast.unparse(tree.body[:-1]) + "\n" + ast.unparse(last.body)
    except Exception:
        pass
    return code


def lcb_wrap(code: str) -> str:
    """A stdin program the way LiveCodeBench runs it: the main guard dropped, the top-level
    imports kept after the prelude, every other top-level statement made the body of
    ``def wrapped_function():`` (make_function); the code unchanged (without the prelude) where
    it does not parse."""
    code = _drop_main_guard(code)
    try:
        tree = ast.parse(code)
        imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        others = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        function = ast.FunctionDef(name="wrapped_function", args=ast.arguments(
            posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=others, decorator_list=[],
            lineno=-1)
        return LCB_PRELUDE + "\n" + ast.unparse(imports) + "\n" + ast.unparse(function)
    except Exception:
        return code


def lcb_extract(completion: str) -> str:
    """LiveCodeBench's extract_code: the lines between the last two lines that hold a triple
    backtick; nothing when there are fewer than two such lines."""
    lines = completion.split("\n")
    fences = [i for i, line in enumerate(lines) if "```" in line]
    if len(fences) < 2:
        return ""
    return "\n".join(lines[fences[-2] + 1: fences[-1]])


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def lcb_stdout_match(got: str, expected: str) -> bool:
    """grade_stdio: both outputs stripped and split into lines, each line stripped; as many
    lines; each line equal as text, or else both lines read as whitespace-separated Decimals
    and equal as lists (exact: no tolerance, so 1.0 = 1 and 1e2 = 100 but 0.3000001 != 0.3)."""
    got_lines = [line.strip() for line in got.strip().split("\n")]
    want_lines = [line.strip() for line in expected.strip().split("\n")]
    if len(got_lines) != len(want_lines):
        return False
    for g, w in zip(got_lines, want_lines):
        if g == w:
            continue
        gd, wd = _decimals(g), _decimals(w)
        if gd is None or wd is None or gd != wd:
            return False
        if not all(integer_guard_ok(a, b) for a, b in zip(g.split(), w.split())):
            return False
    return True


def lcb_value_match(got: Any, expected: Any) -> bool:
    """grade_call_based: a returned tuple becomes a list (top level only), then Python's ==
    with the expected value read as JSON: no tolerance, no unwrapping, dict keys as they are."""
    if isinstance(got, tuple):
        got = list(got)
    return guarded_equal(got, expected)


class LiveCodeBench(Judge):
    name = "lcb"
    benchmark = "LiveCodeBench"
    fields = ("public_test_cases", "private_test_cases")
    format_doc = "`public_test_cases` / `private_test_cases` (+ `metadata.func_name`)"
    follows = ("LiveCodeBench, `lcb_runner/evaluation/testing_util.py` (the grader of 2025-01 onwards, "
               "as of 2025-07)")
    time_seconds = 6.0

    def extract(self, completion: str) -> str:
        return lcb_extract(completion)

    def program(self, code: str, suite: TestSuite) -> str:
        return lcb_wrap(code) if suite.call is None else LCB_PRELUDE + "\n\n" + code

    def run_options(self, suite: TestSuite) -> RunOptions:
        call = suite.call is not None
        return RunOptions(io=CAPTURED, module_name="tmp_sol", guard=True, int_max_str_digits=50000, typed=call,
                          solution_by_text=call)

    def call_test(self, case: TestCase) -> tuple[Any, Any]:
        try:
            raw = case.raw_input
            if isinstance(raw, str):
                args = tuple(lcb_json(line) for line in raw.split("\n"))
            else:
                args = tuple(raw) if isinstance(raw, list) else case.args or ()
            out = case.raw_output
            want = lcb_json(out) if isinstance(out, str) else (case.expected if out is None else out)
        except ValueError as exc:
            raise ValueError(
                f"LiveCodeBench could not read a call-based test ({exc}): every program fails it"
            ) from None
        return args, want

    def stdout_match(self, got: str, expected: str, tolerance: float) -> bool:
        return lcb_stdout_match(got, expected)

    def value_match(self, got: Any, expected: Any, tolerance: float) -> bool:
        return lcb_value_match(got, expected)


JUDGE = LiveCodeBench()
