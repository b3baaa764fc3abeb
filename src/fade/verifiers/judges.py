"""Judging profiles: how each benchmark's own harness turns a program and its tests into a
verdict, so that ``fade eval`` and the code rewards give the numbers that benchmark publishes.

A profile fixes everything between the completion and the verdict that the official harness
fixes: which code is taken from the completion, what is prepended to it (imports, a recursion
limit), how the program is run (as a script, wrapped into a function, as a module whose function
is called, as one assembled program of checks), how standard input is fed and output captured,
which built-in functions are switched off, the default limits, and how an output or a returned
value is compared with the expected one. Every rule names the place in the official harness
that states it; docs/verifiers.md has the table. The programs run in fade's sandbox in every
profile (the official harnesses are not sandboxes), one fresh process per test.

Profiles (``JUDGES``):

- ``fade``: fade's own rules (docs/verifiers.md): tokens, integers exact, other numbers within a
  tolerance, one-element lists unwrapped. For the ``tests`` field and whenever asked for.
- ``lcb``: LiveCodeBench's grader (``lcb_runner/evaluation/testing_util.py``, 2025-07).
- ``taco``: TACO's grader (``metrics/testing_util.py``; APPS-format ``input_output`` problems).
- ``codecontests``: DeepMind's CodeContests tester (``execution/tester_sandboxer.cc``).
- ``humaneval``: openai/human-eval (``human_eval/execution.py``); also HumanEval+ rows that carry
  a ``test`` field, as bigcode's humanevalplus task judges them.
- ``mbpp``: MBPP as bigcode-evaluation-harness judges it (``bigcode_eval/tasks/mbpp.py``); the
  MBPP release has no execution harness of its own.

One rule holds in every profile, where an official harness is looser: an expected integer is
matched only by an integer written in ASCII digits (never ``7.0``, ``1e9``, ``٣`` or ``1_000``,
never a returned ``float`` or ``True``). See :func:`integer_guard_ok`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from .testcases import TestCase, TestSuite, integer_guard_ok, is_ascii_int, outputs_match, values_match

__all__ = [
    "JUDGES",
    "JUDGE_FIELDS",
    "Judge",
    "LCB_PRELUDE",
    "MBPP_STOP_WORDS",
    "TACO_PRELUDE",
    "codecontests_match",
    "decode_typed",
    "default_match",
    "extract_program",
    "humaneval_program",
    "integer_guard_ok",
    "judge_for",
    "lcb_extract",
    "lcb_stdout_match",
    "lcb_value_match",
    "lcb_wrap",
    "mbpp_program",
    "prepare_tests",
    "taco_std_versions",
    "taco_stdout_match",
    "taco_value_match",
]

# -- the rule every profile keeps ------------------------------------------------------------------

def _guarded_equal(got: Any, expected: Any) -> bool:
    """Python's ``got == expected``, recursively through lists, tuples and dicts, except that an
    expected int (not bool) is matched only by an int (not bool)."""
    if isinstance(expected, int) and not isinstance(expected, bool):
        return isinstance(got, int) and not isinstance(got, bool) and got == expected
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        return type(got) is type(expected) and len(got) == len(expected) and all(
            _guarded_equal(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(_guarded_equal(got[k], expected[k]) for k in expected)
    try:
        return bool(got == expected)
    except Exception:
        return False


class _Opaque:
    """A returned value that is none of the types JSON or a container can carry: equal to nothing."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name, self.text = type_name, text

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return self.text


def decode_typed(value: Any) -> Any:
    """The Python value the sandbox's typed encoding stands for (tuples, sets, dicts with any
    keys and non-finite floats restored; other objects equal to nothing)."""
    if isinstance(value, list):
        return [decode_typed(v) for v in value]
    if not isinstance(value, dict):
        return value
    kind = value.get("$")
    items = value.get("v")
    if kind == "tuple":
        return tuple(decode_typed(v) for v in items)
    if kind in ("set", "frozenset"):
        made = [decode_typed(v) for v in items]
        try:
            return set(made) if kind == "set" else frozenset(made)
        except TypeError:
            return _Opaque(kind, repr(made))
    if kind == "dict":
        out = {}
        for k, v in items:
            key = decode_typed(k)
            try:
                out[key] = decode_typed(v)
            except TypeError:
                return _Opaque("dict", repr(items))
        return out
    if kind == "float":
        return float(items)
    return _Opaque(str(value.get("type")), str(items))


# -- LiveCodeBench ---------------------------------------------------------------------------------

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


def _lcb_drop_main_guard(code: str) -> str:
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
    code = _lcb_drop_main_guard(code)
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


def _lcb_decimals(line: str) -> list[Decimal] | None:
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
        gd, wd = _lcb_decimals(g), _lcb_decimals(w)
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
    return _guarded_equal(got, expected)


def _lcb_args(case: TestCase) -> tuple:
    raw = case.raw_input
    if isinstance(raw, str):
        return tuple(json.loads(line) for line in raw.split("\n"))
    if isinstance(raw, list):
        return tuple(raw)
    return case.args or ()


def _lcb_expected(case: TestCase) -> Any:
    raw = case.raw_output
    return json.loads(raw) if isinstance(raw, str) else (case.expected if raw is None else raw)


# -- TACO ----------------------------------------------------------------------------------------

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
            compiled += TACO_PRELUDE + star + "\nstdin = sys.stdin\nstdout = sys.stdout\n" + "def code():\n" + f"\t{x}\n"
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


def _taco_keys(value: Any) -> Any:
    """process_input_output: JSON's string keys made ints again where the value (or its first
    element) is a dict whose keys all read as ints; such a value becomes a one-element list."""
    def intkeys(d: dict) -> dict | None:
        try:
            return {int(k): v for k, v in d.items()}
        except (TypeError, ValueError):
            return None

    if isinstance(value, dict) and (converted := intkeys(value)) is not None:
        value = [converted]
    if isinstance(value, list) and value and isinstance(value[0], dict) and (converted := intkeys(value[0])) is not None:
        value = [converted]
    return value


def _taco_args(case: TestCase) -> Any:
    raw = case.raw_input if case.raw_input is not None else list(case.args or ())
    if isinstance(raw, list) and raw and isinstance(raw[0], dict):
        try:
            raw = [{int(k): v for k, v in raw[0].items()}]
        except (TypeError, ValueError):
            pass
    # method(*inputs): a list gives its elements, a string its characters, anything else fails.
    return list(raw) if isinstance(raw, (list, str)) else None


def taco_value_match(got: Any, expected: Any) -> bool:
    """execute_cb_code: a returned tuple becomes a list; equal to the expected value, or to its
    first element when it is a non-empty list, or (rows of tuples made lists) to that element."""
    expected = _taco_keys(expected)
    if isinstance(got, tuple):
        got = list(got)
    if _guarded_equal(got, expected):
        return True
    if isinstance(expected, list) and expected and _guarded_equal(got, expected[0]):
        return True
    try:
        if isinstance(got[0], tuple):
            return isinstance(expected, list) and bool(expected) and _guarded_equal([list(x) for x in got], expected[0])
    except (TypeError, IndexError, KeyError):
        pass
    return False


# -- CodeContests --------------------------------------------------------------------------------

_INT32 = (-(2 ** 31), 2 ** 31 - 1)
_DOUBLE = re.compile(r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf(?:inity)?|nan)\s*", re.ASCII)


def _cc_int(token: str) -> int | None:
    if is_ascii_int(token) and len(token.lstrip("+-").lstrip("0")) <= 10:
        value = int(token)
        if _INT32[0] <= value <= _INT32[1]:
            return value
    return None


def _cc_double(token: str) -> float | None:
    try:
        return float(token) if _DOUBLE.fullmatch(token) else None
    except (ValueError, OverflowError):
        return None


def codecontests_match(got: str, expected: str) -> bool:
    """OutputsMatch: both outputs split on whitespace and lowercased; equal token lists, or as
    many tokens with each pair equal by ValuesMatch (a non-numeric token as text, two tokens
    that are 32-bit ints exactly, else as doubles within an absolute 1e-5, strictly)."""
    a = [t.lower() for t in got.split()]
    b = [t.lower() for t in expected.split()]
    if a == b:
        return True
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        if not integer_guard_ok(x, y):
            return False
        dx, dy = _cc_double(x), _cc_double(y)
        if dx is None or dy is None:
            return False
        ix, iy = _cc_int(x), _cc_int(y)
        if ix is not None and iy is not None:
            if ix != iy:
                return False
        elif not abs(dx - dy) < 1e-5:
            return False
    return True


# -- HumanEval and MBPP --------------------------------------------------------------------------

#: Where bigcode's MBPP task cuts a generation (stop words).
MBPP_STOP_WORDS = ("\nclass", "\nassert", '\n"""', "\nprint", "\nif", "\n<|/", "\n```")


def humaneval_program(completion: str, check: dict) -> str:
    """human-eval's check program: prompt + completion + "\\n" + test + "\\n" + check(entry_point)."""
    return f"{check.get('prompt', '')}{completion}\n{check['test']}\ncheck({check['entry_point']})"


def mbpp_prompt(check: dict) -> str:
    return f'"""\n{check.get("text", "")}\n{check["test_list"][0]}\n"""\n'


def mbpp_program(completion: str, check: dict) -> str:
    """bigcode's MBPP program: its prompt (a docstring of the task and the first test), the
    completion cut at the first stop word, a newline and the asserts of ``test_list``
    (``test_setup_code`` and ``challenge_test_list`` are not used, as there)."""
    cut = min((i for i in (completion.find(w) for w in MBPP_STOP_WORDS) if i >= 0), default=len(completion))
    return mbpp_prompt(check) + completion[:cut] + "\n" + "\n".join(check["test_list"])


# -- the profiles --------------------------------------------------------------------------------

#: The fields of a problem that say which benchmark's format it is in.
JUDGE_FIELDS: dict[str, tuple[str, ...]] = {
    "lcb": ("public_test_cases", "private_test_cases"),
    "taco": ("input_output",),
    "codecontests": ("public_tests", "private_tests", "generated_tests"),
    "humaneval": ("test", "entry_point"),
    "mbpp": ("test_list",),
    "fade": ("tests",),
}


@dataclass(frozen=True)
class Judge:
    """One benchmark's judging rules (module docstring). ``harness`` holds the options the
    sandbox's supervisor reads; ``time_seconds`` and ``memory_mb`` are the official defaults
    (``None``: the sandbox's own), used unless the caller sets limits."""

    name: str
    benchmark: str
    kind: str  # "tests" (stdin or call-based tests) or "check" (one assembled program)
    extract: Callable[[str], str] | None
    stdout_match: Callable[[str, str], bool] | None = None
    value_match: Callable[[Any, Any], bool] | None = None
    harness: dict[str, Any] = field(default_factory=dict)
    call_harness: dict[str, Any] = field(default_factory=dict)
    time_seconds: float | None = None
    memory_mb: int | None = None
    compare_after_crash: bool = False  # CodeContests: a test passes on its output, however the program ended
    fade_tolerance: bool = False  # the fade profile: compare with the verifier's float tolerance

    def options(self, call: str | None) -> dict[str, Any]:
        return dict(self.call_harness if call is not None else self.harness)


_PYTHON_TAGS = ("python", "py", "python3")


def extract_program(completion: str) -> str:
    """The program in a completion: its last python (or unlabelled) fenced block, else its last
    fenced block, else the whole text. An unclosed fence runs to the end of the text."""
    blocks: list[tuple[str, str]] = []
    lang, lines = None, []
    for line in completion.split("\n"):
        stripped = line.strip()
        if lang is None and stripped.startswith("```"):
            lang, lines = stripped[3:].strip().lower(), []
        elif lang is not None and stripped.startswith("```"):
            blocks.append((lang, "\n".join(lines)))
            lang = None
        elif lang is not None:
            lines.append(line)
    if lang is not None:
        blocks.append((lang, "\n".join(lines)))
    if not blocks:
        return completion
    python = [code for tag, code in blocks if not tag or tag.split()[0] in _PYTHON_TAGS]
    return (python or [code for _, code in blocks])[-1]


JUDGES: dict[str, Judge] = {
    "fade": Judge("fade", "fade's own rules", "tests", extract_program, fade_tolerance=True),
    "lcb": Judge(
        "lcb", "LiveCodeBench", "tests", lcb_extract, lcb_stdout_match, lcb_value_match,
        harness={"io": "lcb", "guard": "lcb", "int_max_str_digits": 50000},
        call_harness={"io": "lcb", "guard": "lcb", "int_max_str_digits": 50000, "typed": True, "solution_by_text": True},
        time_seconds=6.0),
    "taco": Judge(
        "taco", "TACO", "tests", extract_program, taco_stdout_match, taco_value_match,
        harness={"io": "fade", "numpy": True, "file_retry": True, "stop_on_failure": False},
        call_harness={"io": "fade", "numpy": True, "module_name": "tmp_sol", "guard": "taco",
                      "guard_after_compile": True, "typed": True, "solution_by_text": True},
        time_seconds=4.0),
    "codecontests": Judge(
        "codecontests", "CodeContests", "tests", extract_program, codecontests_match, None,
        harness={"io": "fade", "stop_on_failure": False}, time_seconds=10.0, memory_mb=288, compare_after_crash=True),
    "humaneval": Judge("humaneval", "HumanEval", "check", None, harness={"io": "check", "guard": "humaneval"},
                       time_seconds=3.0),
    "mbpp": Judge("mbpp", "MBPP", "check", None, harness={"io": "check", "guard": "humaneval"}, time_seconds=3.0),
}


def judge_for(suite: TestSuite, name: str = "auto") -> Judge:
    """The profile for a problem: ``name`` when given (checked against the problem's format),
    else the one its fields name. Raises ValueError naming the problem's fields and the
    profiles that could judge them."""
    present = suite.fields
    if name != "auto":
        if name not in JUDGES:
            raise ValueError(f"unknown judge {name!r}: expected auto or one of {', '.join(JUDGES)}")
        judge = JUDGES[name]
        if (judge.kind == "check") != (suite.check is not None):
            wanted = "a check program (test + entry_point, or test_list)" if judge.kind == "check" else \
                "input/output or call-based tests"
            raise ValueError(f"judge {name} reads {wanted}; this problem has {', '.join(sorted(present)) or 'no tests'}")
        if judge.kind == "check" and suite.check.get("style") != name:
            raise ValueError(f"judge {name} cannot judge a {suite.check.get('style')} problem (its fields: "
                             f"{', '.join(sorted(present))})")
        return judge
    found = sorted({j for j, keys in JUDGE_FIELDS.items() if any(k in present for k in keys)} - {"fade"} or
                   ({"fade"} if "tests" in present else set()))
    if suite.check is not None:
        return JUDGES[suite.check["style"]]
    if len(found) != 1:
        raise ValueError(f"the problem's fields ({', '.join(sorted(present))}) belong to "
                         f"{', '.join(found) or 'no benchmark'}: name the judge (--judge / judge=)")
    return JUDGES[found[0]]


def prepare_tests(judge: Judge, suite: TestSuite) -> tuple[list[dict[str, Any]], list[Any]]:
    """The harness inputs of a suite's tests under ``judge``, and what each test expects (an
    output text, or the expected value in the judge's reading). A test the judge's harness
    could not read (a functional input line that is not JSON, in LiveCodeBench) raises ValueError."""
    inputs, expected = [], []
    for case in suite.cases:
        if suite.call is None:
            inputs.append({"stdin": case.stdin})
            expected.append(case.output)
            continue
        if judge.name == "lcb":
            try:
                args, want = _lcb_args(case), _lcb_expected(case)
            except ValueError as exc:
                raise ValueError(f"LiveCodeBench could not read a call-based test ({exc}): every program fails it") \
                    from None
        elif judge.name == "taco":
            args, want = _taco_args(case), case.raw_output if case.raw_output is not None else case.expected
        else:
            args, want = list(case.args), case.expected
        inputs.append({"args": args})
        expected.append(want)
    return inputs, expected


def default_match(judge: Judge, tolerance: float) -> tuple[Callable[[str, str], bool], Callable[[Any, Any], bool]]:
    if judge.fade_tolerance:
        return (lambda g, e: outputs_match(g, e, tolerance)), (lambda g, e: values_match(g, e, tolerance))
    return judge.stdout_match, judge.value_match

