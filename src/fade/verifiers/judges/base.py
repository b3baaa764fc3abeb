"""What a judging profile is: the :class:`Judge` every profile module of this package defines
one of, with fade's own shape as its defaults, and the rules more than one profile reads.

A judging run goes: :meth:`Judge.extract` the code from the completion; :meth:`Judge.prepare_tests`
(the harness inputs and what each test expects); :meth:`Judge.first_run` (the program that runs,
with its preludes or wrapping, and its inputs) under :meth:`Judge.run_options` in the sandbox;
then, record by record, :func:`fade.verifiers.code_exec.classify` says how the test ended and the
profile's record rules decide: :meth:`Judge.passes_after` (a failed run that passes on its output),
:meth:`Judge.failure` (the verdict of a failed test, or read on), :meth:`Judge.compare` (the
output or return value against the expected one); last, :meth:`Judge.rerun` (a second run
decided by the first one's result).

One rule holds in every profile, where an official harness is looser: an expected integer is
matched only by an integer written in ASCII digits (never ``7.0``, ``1e9``, ``٣`` or ``1_000``,
never a returned ``float`` or ``True``). See :func:`fade.verifiers.testcases.integer_guard_ok`
and :func:`guarded_equal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..benchmark_io import RunOptions
from ..testcases import TestCase, TestSuite

__all__ = ["Judge", "Run", "decode_typed", "excerpt", "extract_program", "guarded_equal"]

_EXCERPT = 200
_PYTHON_TAGS = ("python", "py", "python3")


@dataclass(frozen=True)
class Run:
    """One sandbox run of a judging: the program, its harness inputs, and ``compile_step``, what
    to say when the first input, a compile step rather than a test, fails (None: every input is
    a test)."""

    source: str
    inputs: list[dict[str, Any]]
    compile_step: str | None = None


class Judge:
    """One benchmark's judging rules. A profile subclasses it, sets the attributes and overrides
    the methods where its harness differs from the defaults (a program run as a script per test,
    its output or return value compared by the profile's own matches)."""

    #: The registry's key, the value of ``--judge`` and ``details["judge"]``; the module's name.
    name: str = ""
    #: Whose rules, in words.
    benchmark: str = ""
    #: The fields of a problem that say it is in this benchmark's format.
    fields: tuple[str, ...] = ()
    #: The format's fields and the harness the profile follows, as docs/verifiers.md's table shows them.
    format_doc: str = ""
    follows: str = ""
    #: "tests" (input/output or call-based tests) or "check" (one assembled program of checks).
    kind: str = "tests"
    #: Chosen for a problem only when no other profile's fields are present.
    fallback: bool = False
    #: The official defaults (None: the sandbox's own), used unless the caller sets limits.
    time_seconds: float | None = None
    memory_mb: int | None = None
    #: The profile's programs import numpy (the evaluator's is bound read-only into the sandbox).
    needs_numpy: bool = False

    def __repr__(self) -> str:
        return f"<judge {self.name}: {self.benchmark}>"

    # -- the program ---------------------------------------------------------------------------

    def extract(self, completion: str) -> str:
        """The code in a completion (its harness's extraction)."""
        return extract_program(completion)

    def program(self, code: str, suite: TestSuite) -> str:
        """The program that runs: the code with what the harness prepends or wraps it in."""
        return code

    def first_run(self, code: str, suite: TestSuite, inputs: list[dict[str, Any]]) -> Run:
        return Run(self.program(code, suite), inputs)

    def rerun(self, code: str, suite: TestSuite, inputs: list[dict[str, Any]], result: Any) -> Run | None:
        """A second run that the first run's ``result`` (a VerifierResult) calls for, whose result
        replaces it; None: the first result stands."""
        return None

    def run_options(self, suite: TestSuite) -> RunOptions:
        """How the sandbox's supervisor runs the program (:class:`RunOptions`)."""
        return RunOptions()

    # -- the tests -----------------------------------------------------------------------------

    def prepare_tests(self, suite: TestSuite) -> tuple[list[dict[str, Any]], list[Any]]:
        """The harness inputs of a suite's tests, and what each test expects (an output text, or
        the expected value in the profile's reading). A test the harness could not read raises
        ValueError."""
        inputs, expected = [], []
        for case in suite.cases:
            if suite.call is None:
                inputs.append({"stdin": case.stdin})
                expected.append(case.output)
            else:
                args, want = self.call_test(case)
                inputs.append({"args": args})
                expected.append(want)
        return inputs, expected

    def call_test(self, case: TestCase) -> tuple[Any, Any]:
        """A call-based test's arguments and expected value, as the harness reads them."""
        return list(case.args), case.expected

    def stdout_match(self, got: str, expected: str, tolerance: float) -> bool:
        """Whether a program's standard output is the expected one (``tolerance``: fade's rules only)."""
        raise NotImplementedError(f"the {self.name} judge compares no standard output")

    def value_match(self, got: Any, expected: Any, tolerance: float) -> bool:
        """Whether a call's return value is the expected one (``tolerance``: fade's rules only)."""
        raise NotImplementedError(f"the {self.name} judge compares no return values")

    def returned(self, status: dict[str, Any]) -> Any:
        """The value a call returned, from the program's report (which holds ``result`` or
        ``result_typed``)."""
        return decode_typed(status["result_typed"]) if "result_typed" in status else status["result"]

    def compare(self, record: dict[str, Any], expected: Any, suite: TestSuite, tolerance: float) -> dict[str, Any] | None:
        """None when a test that ran to a clean exit passes, else the details of its wrong answer."""
        if suite.call is None:
            got = record.get("stdout", "")
            return None if self.stdout_match(got, expected, tolerance) else {"expected": excerpt(expected), "got": excerpt(got)}
        status = record.get("status") or {}
        if "result_typed" not in status and "result" not in status:
            got = status.get("result_repr", "no return value")
            return {"expected": excerpt(expected), "got": excerpt(got), "note": "the return value is not JSON"}
        got = self.returned(status)
        return None if self.value_match(got, expected, tolerance) else {"expected": excerpt(expected), "got": excerpt(got)}

    # -- the records ---------------------------------------------------------------------------

    def passes_after(self, reason: str, record: dict[str, Any], expected: Any, suite: TestSuite, tolerance: float) -> bool:
        """Whether a test whose run ended with ``reason`` (a crash, a limit) passes all the same."""
        return False

    def failure(self, reason: str, info: dict[str, Any], record: dict[str, Any], suite: TestSuite,
                exits: list[int | None]) -> tuple[str, dict[str, Any]] | None:
        """The verdict of a failed test (its reason and details), or None to read the next record;
        ``exits`` are the exit statuses of the tests so far, this one last (None: a signal or a limit)."""
        return reason, info


# -- rules more than one profile reads ---------------------------------------------------------------


def excerpt(value: Any) -> str:
    """A value as a result's details show it: its text, cut at 200 characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


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


def guarded_equal(got: Any, expected: Any) -> bool:
    """Python's ``got == expected``, recursively through lists, tuples and dicts, except that an
    expected int (not bool) is matched only by an int (not bool)."""
    if isinstance(expected, int) and not isinstance(expected, bool):
        return isinstance(got, int) and not isinstance(got, bool) and got == expected
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        return type(got) is type(expected) and len(got) == len(expected) and all(
            guarded_equal(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(guarded_equal(got[k], expected[k]) for k in expected)
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
    """The Python value the sandbox's typed encoding (``RunOptions.typed``, which the lcb and taco
    profiles ask for) stands for: tuples, sets, dicts with any keys and non-finite floats
    restored; other objects equal to nothing."""
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
