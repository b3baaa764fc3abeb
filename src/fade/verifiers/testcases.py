"""Test cases of programming problems, read from the formats public datasets use, and the output
comparison their harnesses make.

Formats (a problem's fields, as a dict or a JSON object; every listed field that is present is
used, so a problem's tests are its public and private (and generated) tests together):

- LiveCodeBench: ``public_test_cases`` and ``private_test_cases``, each a list (or its JSON text)
  of ``{"input", "output", "testtype": "stdin" | "functional"}``; the private list may be in
  LiveCodeBench's compressed form (base64 of zlib of a pickled JSON string), which is decoded
  with an unpickler that builds strings only, and refused when it would inflate past
  :data:`MAX_DECOMPRESSED_BYTES`. Functional tests call ``metadata["func_name"]``
  (``metadata`` a dict or JSON text) with one argument per line of ``input`` (each line JSON)
  and compare the return value with ``output`` read as JSON.
- CodeContests: ``public_tests``, ``private_tests``, ``generated_tests``, each
  ``{"input": [...], "output": [...]}``; stdin/stdout.
- TACO / APPS (and verl's ``prime_code`` ground truth): ``input_output``, a JSON object (or its
  text) ``{"inputs": [...], "outputs": [...], "fn_name"?}``; with ``fn_name`` each input is the
  list of arguments and each output the return value (or a one-element list holding it).
- ``tests``: any of the above, or a list of ``{"input", "output"}`` pairs.

Comparison. Standard input/output: the outputs are split into whitespace-separated tokens
(so line breaks and trailing spaces do not matter) that must be equal one for one. Where the
expected token is an integer, only an integer token of the same value matches ("007" = "7",
never "7.0" or "1e9" for 999999999); where it is another number, any ASCII decimal token within
``float_tolerance`` (absolute or relative) matches; numbers are read from ASCII digits only (no
Unicode digits, no "1_000", nothing that overflows to infinity). Call-based: the return value
(sent back as JSON, so tuples become lists) must equal the expected value, recursively, with
the same rules (an expected integer is matched by an integer only, an expected float within
the tolerance); where the expected value is a one-element list, its element is accepted too
(TACO's convention).
"""

from __future__ import annotations

import base64
import decimal
import io
import json
import math
import pickle
import re
import zlib
from dataclasses import dataclass
from typing import Any

__all__ = ["TestCase", "TestSuite", "integer_guard_ok", "integer_text", "is_ascii_int", "lcb_json", "outputs_match",
           "parse_tests", "values_match"]

TEST_FIELDS = ("tests", "public_test_cases", "private_test_cases", "public_tests", "private_tests", "generated_tests",
               "input_output", "test", "test_list")
#: The other fields a check-style problem (HumanEval, MBPP) is made of.
CHECK_FIELDS = ("prompt", "entry_point", "text", "test_setup_code", "challenge_test_list")
#: The most bytes LiveCodeBench's compressed tests may inflate to: well above the largest real
#: problem's tests, and a bound on what a zlib bomb (1000:1 and more) can make the evaluator hold.
MAX_DECOMPRESSED_BYTES = 256 << 20
#: The longest integer LiveCodeBench's grader reads in its tests (it runs under
#: ``sys.set_int_max_str_digits(50000)``; Python's own limit is 4,300 digits).
LCB_INT_DIGITS = 50_000


@dataclass(frozen=True)
class TestCase:
    """One test: ``stdin`` text and expected ``output`` text, or call ``args`` and ``expected`` value."""

    stdin: str | None = None
    output: str | None = None
    args: tuple | None = None
    expected: Any = None
    # A call-based test's input and output as the dataset holds them (text of JSON lines, a list
    # of arguments, a wrapped answer), for judges that read them their own way.
    raw_input: Any = None
    raw_output: Any = None

    def harness_input(self) -> dict[str, Any]:
        return {"stdin": self.stdin} if self.args is None else {"args": list(self.args)}


@dataclass(frozen=True)
class TestSuite:
    """A problem's tests; ``call`` is the function name of call-based tests, None for stdin/stdout."""

    cases: tuple[TestCase, ...]
    call: str | None = None
    #: The fields the tests came from (which benchmark's format they are in).
    fields: frozenset[str] = frozenset()
    #: A check program's parts (HumanEval: prompt, test, entry_point; MBPP: text, test_list, ...)
    #: and its ``style``; None for input/output and call-based tests.
    check: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.cases)


class _StringsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # never build objects from a dataset's pickle
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a test-case pickle")


def _decode(value: Any, what: str) -> Any:
    """JSON text (or LiveCodeBench's compressed text) as a value; other values as they are."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return []
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        packed = base64.b64decode(text, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_DECOMPRESSED_BYTES)
    except Exception:
        raise ValueError(f"{what} is neither JSON nor LiveCodeBench's compressed test format") from None
    if inflater.unconsumed_tail:
        raise ValueError(
            f"{what} decompresses to more than {MAX_DECOMPRESSED_BYTES >> 20} MB (from {len(text)} "
            "characters): refused as a zlib bomb; expected LiveCodeBench's compressed tests below that size"
        )
    try:
        inner = _StringsOnly(io.BytesIO(raw)).load()
        return json.loads(inner) if isinstance(inner, str) else inner
    except Exception:
        raise ValueError(f"{what} is neither JSON nor LiveCodeBench's compressed test format") from None


def _text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)  # some TACO inputs are lists of lines
    raise ValueError(f"{what} must be text, got {type(value).__name__}")


def _long_int(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > LCB_INT_DIGITS:
        raise ValueError(f"an integer of {count} digits, past the {LCB_INT_DIGITS:,} LiveCodeBench reads")
    # Decimal's conversion to int is not bound by the interpreter's digit limit (int(str) is).
    return int(digits) if count <= 4000 else int(decimal.Decimal(digits))


def lcb_json(text: str) -> Any:
    """JSON text as LiveCodeBench's grader reads its tests: integers of up to
    :data:`LCB_INT_DIGITS` digits (past Python's 4,300-digit limit). ValueError as json.loads."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(text, parse_int=_long_int)  # the slower reading, only where it is needed


def _functional_args(text: str, what: str) -> tuple:
    args = []
    for line in text.split("\n"):
        if line.strip():
            try:
                args.append(lcb_json(line))
            except ValueError as exc:
                raise ValueError(f"{what}: argument line {line[:80]!r} is not JSON ({exc})") from None
    return tuple(args)


def _lcb_cases(value: Any, what: str, func_name: str | None) -> tuple[list[TestCase], bool]:
    """LiveCodeBench-style list of {input, output, testtype}; returns (cases, any functional)."""
    items = _decode(value, what)
    if not isinstance(items, list):
        raise ValueError(f"{what} must be a list of {{input, output}} objects, got {type(items).__name__}")
    cases, functional = [], False
    for i, item in enumerate(items):
        where = f"{what}[{i}]"
        if not isinstance(item, dict) or "input" not in item or "output" not in item:
            raise ValueError(f"{where} must be an object with 'input' and 'output'")
        kind = item.get("testtype", "stdin")
        if kind == "functional":
            functional = True
            try:
                expected = lcb_json(item["output"]) if isinstance(item["output"], str) else item["output"]
            except ValueError as exc:
                raise ValueError(
                    f"{where}: functional output {str(item['output'])[:80]!r} is not JSON ({exc})"
                ) from None
            cases.append(TestCase(args=_functional_args(_text(item["input"], where), where), expected=expected,
                                  raw_input=item["input"], raw_output=item["output"]))
        elif kind == "stdin":
            cases.append(TestCase(stdin=_text(item["input"], where), output=_text(item["output"], where)))
        else:
            raise ValueError(f"{where}: testtype must be 'stdin' or 'functional', got {kind!r}")
    return cases, functional


def _io_cases(value: Any, what: str) -> tuple[list[TestCase], str | None]:
    """{inputs, outputs, fn_name?} (TACO/APPS) or {input: [...], output: [...]} (CodeContests)."""
    obj = _decode(value, what)
    if not isinstance(obj, dict):
        raise ValueError(f"{what} must be an object with inputs and outputs, got {type(obj).__name__}")
    inputs = obj.get("inputs", obj.get("input"))
    outputs = obj.get("outputs", obj.get("output"))
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ValueError(f"{what} must hold lists 'inputs' and 'outputs' (or 'input' and 'output')")
    if len(inputs) != len(outputs):
        raise ValueError(f"{what} has {len(inputs)} inputs and {len(outputs)} outputs: expected as many of each")
    fn = obj.get("fn_name")
    if fn is not None and not (isinstance(fn, str) and fn.isidentifier()):
        raise ValueError(f"{what}: fn_name must be a Python identifier, got {fn!r}")
    cases = []
    for i, (x, y) in enumerate(zip(inputs, outputs)):
        where = f"{what} test {i}"
        if fn:
            args = tuple(x) if isinstance(x, list) else (x,)
            cases.append(TestCase(args=args, expected=y, raw_input=x, raw_output=y))
        else:
            cases.append(TestCase(stdin=_text(x, where), output=_text(y, where)))
    return cases, fn


def _metadata_func(row: dict) -> str | None:
    meta = row.get("metadata")
    if meta is None:
        return row.get("func_name") or row.get("fn_name")
    meta = _decode(meta, "metadata")
    if not isinstance(meta, dict):
        raise ValueError(f"metadata must be an object, got {type(meta).__name__}")
    return meta.get("func_name") or row.get("func_name") or row.get("fn_name")


def _check_suite(row: dict) -> TestSuite:
    """A HumanEval-style (``test`` defining check(candidate), ``entry_point``, ``prompt``) or
    MBPP-style (``test_list`` of asserts, ``text``) problem."""
    present = frozenset(k for k in (*TEST_FIELDS, *CHECK_FIELDS) if row.get(k) is not None)
    if row.get("test_list") is not None:
        tests = row["test_list"]
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
            raise ValueError(f"test_list must be a non-empty list of assert statements (text), got {tests!r}"[:300])
        check = {"style": "mbpp", "test_list": list(tests), "text": str(row.get("text") or "")}
    else:
        test, entry = row.get("test"), row.get("entry_point")
        if not isinstance(test, str) or not test.strip():
            raise ValueError("test must be the text of the check code (HumanEval's `def check(candidate): ...`)")
        if not isinstance(entry, str) or not entry.isidentifier():
            raise ValueError(f"a HumanEval-style problem needs entry_point, the function's name; got {entry!r}")
        prompt = row.get("prompt") or ""
        if not isinstance(prompt, str):
            raise ValueError(f"prompt must be text, got {type(prompt).__name__}")
        check = {"style": "humaneval", "test": test, "entry_point": entry, "prompt": prompt}
    others = sorted(k for k in TEST_FIELDS if row.get(k) is not None and k not in ("test", "test_list"))
    if others:
        raise ValueError(f"the problem mixes a check program with other tests ({', '.join(others)}): expected one kind")
    return TestSuite((TestCase(stdin=""),), None, present, check)


def parse_tests(source: Any) -> TestSuite:
    """The tests of a problem given as a dict of its fields (any format above), as the value of a
    ``tests`` field, or as JSON text of either. Raises ValueError naming what is malformed."""
    if isinstance(source, TestSuite):
        return source
    value = _decode(source, "tests") if isinstance(source, str) else source
    row = value if isinstance(value, dict) and any(k in value for k in TEST_FIELDS) else {"tests": value}
    if row.get("test_list") is not None or row.get("entry_point") is not None:
        return _check_suite(row)
    func_name = _metadata_func(row)
    cases: list[TestCase] = []
    call: str | None = None
    kinds: set[str] = set()
    for key in TEST_FIELDS:
        if key not in row or row[key] is None or key in ("test", "test_list"):
            continue
        value = _decode(row[key], key)
        if isinstance(value, list):
            got, functional = _lcb_cases(value, key, func_name)
            if functional:
                call = func_name
        elif isinstance(value, dict):
            got, fn = _io_cases(value, key)
            call = fn or call
            functional = fn is not None
        else:
            raise ValueError(f"{key} must be a list or an object of test cases, got {type(value).__name__}")
        if got:
            kinds.add("call" if functional else "stdin")
        cases += got
    if not cases:
        raise ValueError(f"no test cases: expected one of the fields {', '.join(TEST_FIELDS)} with at least one test")
    if len(kinds) > 1:
        raise ValueError("the tests mix standard-input and call-based cases: expected one kind per problem")
    if "call" in kinds and not (isinstance(call, str) and call.isidentifier()):
        raise ValueError(f"call-based tests need the function name (metadata func_name or fn_name), got {call!r}")
    fields = frozenset(k for k in TEST_FIELDS if row.get(k) is not None)
    return TestSuite(tuple(cases), call if "call" in kinds else None, fields)


# Numbers are read from ASCII tokens only: Python's int() and float() also take Unicode digits
# ("٣", "３"), digit-group underscores ("1_000") and overflow to infinity ("1e400"), none of which
# a judge should read as the number a test expects.
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def integer_text(token: str) -> str:
    """An ASCII integer token in a normal form ("+007" -> "7", "-0" -> "0"), compared as text:
    int() refuses more than 4,300 digits, and answers can be longer."""
    digits = token.lstrip("+-").lstrip("0") or "0"
    return "-" + digits if token.startswith("-") and digits != "0" else digits


def _finite_decimal(token: str) -> float | None:
    """The value of an ASCII decimal token (``12``, ``-0.5``, ``.5``, ``1e-9``), None for anything
    else or for a value that overflows a float."""
    if not _DECIMAL.fullmatch(token):
        return None
    value = float(token)
    return value if math.isfinite(value) else None


def integer_guard_ok(got: str, expected: str) -> bool:
    """False when ``expected`` is an ASCII integer token and ``got`` is not one (a float, a
    number in other digits, one with underscores): the pair must then not match, under any
    judging rules (fade.verifiers.judges keeps it in every profile)."""
    return not _INT.fullmatch(expected) or _INT.fullmatch(got) is not None


def is_ascii_int(token: str) -> bool:
    return _INT.fullmatch(token) is not None


def _tokens_match(got: str, expected: str, tol: float) -> bool:
    """One output token against the expected one. An integer expected token is matched only by an
    integer token of the same value ("007" = "7"): never by a float within tolerance, whose
    relative error grows with the magnitude. A non-integer expected number is matched by any
    ASCII decimal within ``tol`` (absolute or relative). Everything else compares as text."""
    if got == expected:
        return True
    if _INT.fullmatch(expected):
        return integer_guard_ok(got, expected) and integer_text(got) == integer_text(expected)
    want = _finite_decimal(expected)
    have = _finite_decimal(got)
    if want is None or have is None:
        return False
    return math.isclose(have, want, rel_tol=tol, abs_tol=tol)


def outputs_match(got: str, expected: str, float_tolerance: float = 1e-6) -> bool:
    """Whether a program's standard output matches the expected output, token by token."""
    a, b = got.split(), expected.split()
    return len(a) == len(b) and all(_tokens_match(x, y, float_tolerance) for x, y in zip(a, b))


def values_match(got: Any, expected: Any, float_tolerance: float = 1e-6, *, unwrap: bool = True) -> bool:
    """Whether a returned value (JSON-decoded) equals the expected one, to any depth."""
    if _equal(got, expected, float_tolerance):
        return True
    return unwrap and isinstance(expected, list) and len(expected) == 1 and _equal(got, expected[0], float_tolerance)


def _equal(got: Any, expected: Any, tol: float) -> bool:
    pairs = [(got, expected)]  # a stack, not recursion: values can be nested past the recursion limit
    while pairs:
        got, expected = pairs.pop()
        if isinstance(got, list) and isinstance(expected, list):
            if len(got) != len(expected):
                return False
            pairs.extend(zip(got, expected))
        elif isinstance(got, dict) and isinstance(expected, dict):
            if got.keys() != expected.keys():
                return False
            pairs.extend((got[k], expected[k]) for k in got)
        elif not _scalar_equal(got, expected, tol):
            return False
    return True


def _scalar_equal(got: Any, expected: Any, tol: float) -> bool:
    if isinstance(got, bool) or isinstance(expected, bool):
        return got is expected
    if isinstance(expected, int):
        # An integer is matched by an integer only: float(n) can round a large n to a neighbour.
        return isinstance(got, int) and got == expected
    try:
        if isinstance(expected, float) and isinstance(got, (int, float)):
            if not (math.isfinite(got) and math.isfinite(expected)):
                return got == expected
            return math.isclose(got, expected, rel_tol=tol, abs_tol=tol)
        return type(got) is type(expected) and bool(got == expected)
    except (OverflowError, ValueError, TypeError, RecursionError):  # an int past a float's range, an odd ==
        return False
