"""The ``taco`` profile: TACO's grader (``metrics/testing_util.py``), for APPS-format problems
with ``input_output``.

Rules T1-T7 of docs/verifiers.md: APPS's prelude (numpy among its imports); a stdin program in
two versions, a compile step of the wrapped one, then the plain one per test, a failed test
retried with ``input.txt`` / ``output.txt``, and the whole set run again as the wrapped version
when every test ended with status 1; the output compared through TACO's cascade of fallbacks;
call-based tests on a module ``tmp_sol`` with the reliability guard after it is loaded.
"""

from __future__ import annotations

from typing import Any

from ..run_options import RunOptions
from ..testcases import TestCase, TestSuite, integer_guard_ok, is_ascii_int
from .base import Judge, SandboxJob, guarded_equal

__all__ = ["JUDGE", "TACO_PRELUDE", "taco_std_versions", "taco_stdout_match", "taco_value_match"]

#: What TACO (after APPS) prepends to every program; numpy among them, so the taco profile
#: makes the evaluator's numpy importable in the sandbox.
TACO_PRELUDE = (
    "import sys\nimport time\nimport itertools\nfrom itertools import accumulate, product, permutations, combinations\n"
    "import collections\nfrom collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\nimport math\nfrom math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, "
    "log, log2\nimport fractions\nfrom typing import List, Tuple\nimport numpy as np\nimport random\nimport heapq\n"
    "from heapq import *\n"
)


def taco_std_versions(code: str) -> tuple[str, str]:
    """TACO's two versions of a stdin program (synthesize_std_code): the one it runs (import
    lines before the first other line, then the prelude and ``stdin = sys.stdin``, ``stdout =
    sys.stdout``, then the rest) and the one it compiles first and falls back to (the rest as the
    body of ``def code():``, tab-indented, with lines holding ``import *`` lifted to the top)."""
    lines = code.split("\n")
    kinds = [2 if "import *" in x else 1 if x.startswith(("from ", "import ")) else 0 for x in lines]
    star = "\n".join(x.lstrip("\t") for x, k in zip(lines, kinds) if k == 2)
    compiled, run, started = "", "", False
    for x, k in zip(lines, kinds):
        if k == 0 and not started:
            run += TACO_PRELUDE + "\nstdin = sys.stdin\nstdout = sys.stdout\n" + f"{x}\n"
            compiled += (
                TACO_PRELUDE + star + "\nstdin = sys.stdin\nstdout = sys.stdout\n" + "def code():\n" + f"\t{x}\n"
            )
            started = True
        else:
            run += f"{x}\n"
            if k < 2:
                compiled += ("\t" if started else "") + f"{x}\n"
    return compiled, run


def _all_floats(values: list) -> list[float] | None:
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def _allclose(a: list[float], b: list[float]) -> bool:
    # numpy.allclose's defaults: |a - b| <= 1e-8 + 1e-5 |b|, elementwise (nan never close).
    return all(abs(x - y) <= 1e-8 + 1e-5 * abs(y) for x, y in zip(a, b))


def taco_stdout_match(got: str, expected: str) -> bool:
    """compare_std_results applied, as TACO applies it, to the program's whole standard output
    as one string: equal after stripping; else, with the expected output split into non-empty
    stripped lines, the output's *characters* read as floats and the lines read as floats,
    numpy-allclose; else the set of the character sets of the output's tokens equal to the set
    of the expected lines' token sets, exactly or with every number rounded to 3 places. So
    ``1.0`` does not match ``1``, and ``21`` matches ``1 2``."""
    if got.strip() == expected.strip():
        return True
    want_lines = [x.strip() for x in expected.split("\n") if x]
    chars = list(got)
    got_floats, want_floats = _all_floats(chars), _all_floats(want_lines)
    if got_floats is not None and want_floats is not None and len(got_floats) == len(want_floats) \
            and _allclose(got_floats, want_floats) \
            and all(integer_guard_ok(c, w) for c, w in zip(chars, want_lines)):
        return True
    want_sets = [set(line.split()) for line in want_lines]
    tokens = {t for t in got.split() if t}
    if {frozenset(t) for t in tokens} == {frozenset(s) for s in want_sets} and _sets_guarded(tokens, want_sets):
        return True
    try:
        rounded_got = {frozenset(round(float(c), 3) for c in t) for t in tokens}
        rounded_want = {frozenset(round(float(x), 3) for x in s) for s in want_sets}
    except (TypeError, ValueError):
        return False
    return rounded_got == rounded_want and _sets_guarded(tokens, want_sets)


def _sets_guarded(tokens: set[str], want_sets: list[set[str]]) -> bool:
    # The characters compared with an expected integer must be ASCII digits themselves.
    wants_int = any(is_ascii_int(w) for s in want_sets for w in s)
    return not wants_int or all(c.isascii() for t in tokens for c in t)


def _int_keys(value: Any) -> Any:
    """process_input_output: JSON's string keys made ints again where the value (or its first
    element) is a dict whose keys all read as ints; such a value becomes a one-element list."""
    def intkeys(d: dict) -> dict | None:
        try:
            return {int(k): v for k, v in d.items()}
        except (TypeError, ValueError):
            return None

    if isinstance(value, dict) and (converted := intkeys(value)) is not None:
        value = [converted]
    if (
        isinstance(value, list)
        and value
        and isinstance(value[0], dict)
        and (converted := intkeys(value[0])) is not None
    ):
        value = [converted]
    return value


def taco_value_match(got: Any, expected: Any) -> bool:
    """execute_cb_code: a returned tuple becomes a list; equal to the expected value, or to its
    first element when it is a non-empty list, or (rows of tuples made lists) to that element."""
    expected = _int_keys(expected)
    if isinstance(got, tuple):
        got = list(got)
    if guarded_equal(got, expected):
        return True
    if isinstance(expected, list) and expected and guarded_equal(got, expected[0]):
        return True
    try:
        if isinstance(got[0], tuple):
            return isinstance(expected, list) and bool(expected) and guarded_equal([list(x) for x in got], expected[0])
    except (TypeError, IndexError, KeyError):
        pass
    return False


class Taco(Judge):
    name = "taco"
    benchmark = "TACO"
    fields = ("input_output",)
    format_doc = "`input_output` (`{inputs, outputs, fn_name?}`)"
    follows = "TACO, `metrics/testing_util.py` (APPS-format problems)"
    time_seconds = 4.0
    needs_numpy = True

    def first_run(self, code: str, suite: TestSuite, inputs: list[dict[str, Any]]) -> SandboxJob:
        if suite.call is not None:
            return SandboxJob(TACO_PRELUDE + code, inputs)
        # TACO compiles the wrapped version first (running its imports): if that fails, every
        # test fails as a compile error. Then it runs the plain version on each test.
        compiled, run_version = taco_std_versions(code)
        return SandboxJob(run_version, [{"stdin": "", "source": compiled}, *inputs],
                          compile_step="TACO's compile step (the wrapped program) failed")

    def rerun(self, code: str, suite: TestSuite, inputs: list[dict[str, Any]], result: Any) -> SandboxJob | None:
        # If every test ended with exit status 1, TACO runs the wrapped version with code() called.
        if suite.call is not None or not result.details.get("all_exit_1"):
            return None
        compiled, _ = taco_std_versions(code)
        return SandboxJob(compiled + "\ncode()\n", inputs)

    def run_options(self, suite: TestSuite) -> RunOptions:
        if suite.call is None:
            return RunOptions(file_retry=True, stop_on_failure=False)
        return RunOptions(module_name="tmp_sol", guard=True, guard_exit=True, guard_after_compile=True, typed=True,
                          solution_by_text=True)

    def call_test(self, case: TestCase) -> tuple[Any, Any]:
        raw = case.raw_input if case.raw_input is not None else list(case.args or ())
        if isinstance(raw, list) and raw and isinstance(raw[0], dict):
            try:
                raw = [{int(k): v for k, v in raw[0].items()}]
            except (TypeError, ValueError):
                pass
        # method(*inputs): a list gives its elements, a string its characters, anything else fails.
        args = list(raw) if isinstance(raw, (list, str)) else None
        return args, case.raw_output if case.raw_output is not None else case.expected

    def stdout_match(self, got: str, expected: str, tolerance: float) -> bool:
        return taco_stdout_match(got, expected)

    def value_match(self, got: Any, expected: Any, tolerance: float) -> bool:
        return taco_value_match(got, expected)

    def failure(self, reason: str, info: dict[str, Any], record: dict[str, Any], suite: TestSuite,
                exits: list[int | None]) -> tuple[str, dict[str, Any]] | None:
        if suite.call is None and reason in ("runtime_error", "compile_error") and all(code == 1 for code in exits):
            return None  # the wrapped rerun applies if every test ends with status 1: read on
        return reason, info

    def runs(self, suite: TestSuite) -> tuple[int, ...]:
        # T2, T3: a stdin program runs the compile step and each test with its file retry, then,
        # when every test ended with status 1, each test and its retry again in the wrapped rerun.
        return (len(suite),) if suite.call is not None else (1 + 2 * len(suite), 2 * len(suite))


JUDGE = Taco()
