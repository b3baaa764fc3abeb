"""What a judging profile is: the :class:`Judge` every profile module of this package defines
one of, with fade's own shape as its defaults, and the rules more than one profile reads.

A judging run goes: :meth:`Judge.extract` the code from the completion; :meth:`Judge.prepare_tests`
(the harness inputs and what each test expects); :meth:`Judge.first_run` (the program that runs,
with its preludes or wrapping, and its inputs) under :meth:`Judge.run_options` in the sandbox;
then, record by record, :func:`fade.verifiers.code_exec.classify` says how the test ended and the
profile's record rules decide: :meth:`Judge.passes_after` (a failed run that passes on its output),
:meth:`Judge.failure` (the verdict of a failed test, or read on), :meth:`Judge.compare` (a test
whose process ended cleanly: did the program's code return to the harness, and the output or
return value against the expected one); last, :meth:`Judge.rerun` (a second run decided by the
first one's result). :meth:`Judge.runs` counts the program runs all this can make, which bounds
how long one sample holds a worker.

One rule holds in every profile, where an official harness is looser: an expected integer is
matched only by an integer written in ASCII digits (never ``7.0``, ``1e9``, ``٣`` or ``1_000``,
never a returned ``float`` or ``True``). See :func:`fade.verifiers.testcases.integer_guard_ok`
and :func:`guarded_equal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..run_options import SCRIPT, RunOptions
from ..sandbox import Limits, worst_case_seconds
from ..testcases import TestCase, TestSuite
from ..wire import decode_value

__all__ = ["ENDED_EARLY", "Judge", "SandboxJob", "excerpt", "extract_program", "guarded_equal"]

#: Why a test fails whose process ended before the program's code returned to the harness.
ENDED_EARLY = ("the process ended before the program's code returned to the harness (os._exit, exec, a thread "
               "or signal handler ending it, its report channel closed)")

_EXCERPT = 200
_PYTHON_TAGS = ("python", "py", "python3")


@dataclass(frozen=True)
class SandboxJob:
    """What one sandbox run of a judging runs (:class:`~fade.verifiers.sandbox.SandboxRun` runs it):
    the program, its harness inputs, and ``compile_step``, what to say when the first input, a
    compile step rather than a test, fails (None: every input is a test)."""

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

    def first_run(self, code: str, suite: TestSuite, inputs: list[dict[str, Any]]) -> SandboxJob:
        return SandboxJob(self.program(code, suite), inputs)

    def rerun(self, code: str, suite: TestSuite, inputs: list[dict[str, Any]], result: Any) -> SandboxJob | None:
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
        """The value a call returned, from the harness's report (its ``result`` tokens, read by
        ``wire.decode_value``); ValueError when the report is malformed."""
        return decode_value(status["result"])

    def compare(self, record: dict[str, Any], expected: Any, suite: TestSuite,
                tolerance: float) -> tuple[str, dict[str, Any]] | None:
        """The verdict of a test whose process ended cleanly, as (reason, details); None when it passes."""
        unfinished = self.unfinished(record, suite)
        if unfinished is not None:
            return unfinished
        if suite.call is None:
            got = record.get("stdout", "")
            return None if self.stdout_match(got, expected, tolerance) else \
                ("wrong_answer", {"expected": excerpt(expected), "got": excerpt(got)})
        status = record.get("status") or {}
        if "result" not in status:
            got = status.get("result_repr", "no return value")
            return "wrong_answer", {
                "expected": excerpt(expected),
                "got": excerpt(got),
                "note": "the return value cannot be sent back (not JSON in fade's rules, or circular)",
            }
        try:
            got = self.returned(status)
        except ValueError as exc:  # the supervisor refuses these first: only a report it did not check
            return "sandbox_violation", {"report": f"a malformed return value: {exc}"}
        return None if self.value_match(got, expected, tolerance) else \
            ("wrong_answer", {"expected": excerpt(expected), "got": excerpt(got)})

    def unfinished(self, record: dict[str, Any], suite: TestSuite) -> tuple[str, dict[str, Any]] | None:
        """A runtime error when the harness calls the program (call-based tests, and profiles whose
        harness runs programs in its own process) and the process ended before the program's code
        returned to it, as the official harnesses fail it (its result never comes); else None. A
        script (the test's own process, judged by its output) may end itself."""
        if (suite.call is not None or self.run_options(suite).io != SCRIPT) and not record.get("done"):
            return "runtime_error", {"exit": record.get("exit"), "note": ENDED_EARLY}
        return None

    def runs(self, suite: TestSuite) -> tuple[int, ...]:
        """The most times the program can run in each sandbox run of a judging (one entry per
        sandbox run): a run per test by default."""
        return (len(suite),)

    def worst_case_seconds(self, limits: Limits, suite: TestSuite) -> float:
        """How long one sample can hold a worker, whatever its program does: each sandbox run's
        deadline (:func:`fade.verifiers.sandbox.worst_case_seconds`) for the runs it can make."""
        return sum(worst_case_seconds(limits, runs) for runs in self.runs(suite))

    # -- the records ---------------------------------------------------------------------------

    def passes_after(
        self, reason: str, record: dict[str, Any], expected: Any, suite: TestSuite, tolerance: float
    ) -> bool:
        """Whether a test whose run ended with ``reason`` (a crash, a limit) passes all the same."""
        return False

    def failure(self, reason: str, info: dict[str, Any], record: dict[str, Any], suite: TestSuite,
                exits: list[int | None]) -> tuple[str, dict[str, Any]] | None:
        """The verdict of a failed test (its reason and details), or None to read the next record;
        ``exits`` are the exit statuses of the tests so far, this one last (None: a signal or a limit)."""
        return reason, info


# -- rules more than one profile reads ---------------------------------------------------------------


def excerpt(value: Any) -> str:
    """A value as a result's details show it: its text, cut at 200 characters (an integer past
    Python's digit limit, or a value nested past its recursion limit, described instead)."""
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # int -> str past the digit limit
        text = f"<an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits>" \
            if isinstance(value, int) else f"<a {type(value).__name__} holding an integer too long to show>"
    except RecursionError:
        text = f"<a {type(value).__name__} nested too deeply to show>"
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
    """Python's ``got == expected``, through lists, tuples and dicts to any depth (no recursion),
    except that an expected int (not bool) is matched only by an int (not bool)."""
    pairs = [(got, expected)]
    while pairs:
        got, expected = pairs.pop()
        if isinstance(expected, int) and not isinstance(expected, bool):
            if not (isinstance(got, int) and not isinstance(got, bool) and got == expected):
                return False
        elif isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
            if type(got) is not type(expected) or len(got) != len(expected):
                return False
            pairs.extend(zip(got, expected))
        elif isinstance(expected, dict) and isinstance(got, dict):
            if got.keys() != expected.keys():
                return False
            pairs.extend((got[k], expected[k]) for k in expected)
        else:
            try:
                if not bool(got == expected):
                    return False
            except Exception:
                return False
    return True
