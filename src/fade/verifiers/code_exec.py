"""Code rewards: extract the program from a completion, run it against a problem's tests in the
sandbox, and judge it.

A completion scores 1 when its program passes every test (LiveCodeBench's and CodeContests'
criterion); the first failing test decides the reason (wrong answer, runtime error, time limit,
memory limit, output limit, sandbox violation, compile error), and running stops there. The
program is the last fenced code block marked python (or unmarked) in the completion, else the
whole completion; a fence left open by a truncated generation counts up to the end of the text.
The canonical form of a passing program is its syntax tree printed back (``ast.unparse``), so
reformatting and comments do not make two solutions distinct.

:class:`CodeVerifier` scores many completions at once with a bounded pool of threads, each
driving one sandbox process; a result depends only on the program and the tests (and on the
limits, for programs near them), not on how many run in parallel.
"""

from __future__ import annotations

import ast
import errno
import logging
import math
import os
import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from typing import Any

from .judges import JUDGES, Judge, extract_program, judge_for
from .judges.base import SandboxJob, excerpt
from .result import VerifierResult
from .run_options import RunOptions
from .sandbox import Limits, SandboxRun
from .testcases import TestSuite, parse_tests
from .wire import harness_input

__all__ = ["CodeVerifier", "extract_program", "default_code_verifier", "numpy_paths", "score_code"]

# errno values that mean the sandbox refused something: no network, a read-only filesystem, a
# foreign process, the process or file-size limits.
VIOLATION_ERRNOS = frozenset({
    errno.EPERM, errno.EACCES, errno.EROFS, errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH,
    errno.EADDRNOTAVAIL, errno.ECONNREFUSED, errno.EAFNOSUPPORT, errno.EAGAIN, errno.EFBIG,
    errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ESRCH,
})
_NETWORK_EXCEPTIONS = frozenset({"gaierror", "herror"})
_EXCERPT = 200
_ERRORS = ("raise", "result")
_log = logging.getLogger(__name__)
_numpy_paths: list[str] | None = None


def numpy_paths() -> list[str]:
    """A folder to put on the sandbox's sys.path so that ``import numpy`` finds the evaluator's
    numpy (TACO's prelude imports it), and nothing else of its site-packages: the sandbox binds
    these folders read-only."""
    global _numpy_paths
    if _numpy_paths is None:
        import importlib.util

        spec = importlib.util.find_spec("numpy")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("the taco judge needs numpy (TACO's prelude imports it): pip install numpy")
        package = os.path.realpath(list(spec.submodule_search_locations)[0])
        _numpy_paths = [package]
        libs = package + ".libs"  # the shared libraries a numpy wheel ships beside the package
        if os.path.isdir(libs):
            _numpy_paths.append(libs)
    return list(_numpy_paths)


def canonical_program(source: str) -> str:
    """The syntax tree printed back: formatting and comments removed."""
    try:
        return ast.unparse(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "\n".join(line.rstrip() for line in source.strip().splitlines())


class SetupFailed(RuntimeError):
    """The sandbox could not set up a test (before the program ran): the machine, not the program."""


def classify(record: dict[str, Any], limits: Limits) -> tuple[str, dict[str, Any]] | None:
    """How one test ended, from the supervisor's record: (reason, details), or None when the
    program ran to a clean exit (its output is still to be compared). Raises :class:`SetupFailed`
    when the harness reports (on a channel the program never holds) that it could not set up."""
    if record.get("setup_error") is not None:
        raise SetupFailed(f"the code sandbox could not be set up: {record['setup_error']}")
    if record.get("report_error") is not None:
        return "sandbox_violation", {"report": record["report_error"], "exit": record.get("exit"),
                                     "signal": record.get("signal")}
    status = record.get("status") or {}
    info: dict[str, Any] = {}
    exc = status.get("exc")
    if exc:
        info["exception"] = exc
    sig = record.get("signal")
    if sig:
        try:
            info["signal"] = signal.Signals(sig).name
        except ValueError:
            info["signal"] = sig
    if record.get("ended") == "output_limit":
        return "output_limit", {**info, "output_bytes": record.get("stdout_bytes")}
    cpu_limit = max(1, math.ceil(limits.time_seconds))  # RLIMIT_CPU's soft limit; SIGKILL at the hard one
    out_of_cpu = sig == signal.SIGXCPU or (sig == signal.SIGKILL and record.get("cpu_seconds", 0) >= cpu_limit)
    if record.get("ended") == "wall_time" or out_of_cpu:
        return "time_limit", {**info, "limit_seconds": limits.time_seconds}
    if exc == "MemoryError":
        return "memory_limit", info
    if exc and status.get("phase") == "compile":
        return "compile_error", {**info, "stderr": excerpt(record.get("stderr_tail", "")[-_EXCERPT:])}
    if exc in _NETWORK_EXCEPTIONS or (status.get("errno") in VIOLATION_ERRNOS and exc != "SystemExit"):
        info["errno"] = errno.errorcode.get(status.get("errno"), status.get("errno"))
        return "sandbox_violation", info
    if sig or record.get("exit") or exc:
        info["exit"] = record.get("exit")
        info["stderr"] = record.get("stderr_tail", "")[-_EXCERPT:]
        return "runtime_error", info
    return None


class CodeVerifier:
    """Scores programs in completions against problems' tests, in the sandbox.

    Args:
        limits: per-test time, memory, processes, output and disk limits (see :class:`Limits`);
            None: the judge's official defaults where it has them (LiveCodeBench 6 s, TACO 4 s,
            CodeContests 10 s and 288 MB, HumanEval and MBPP 3 s for the whole program), else
            the sandbox's; a dict: those defaults with the given fields replaced.
        workers: sandboxes running at once (default: the CPU count).
        float_tolerance: absolute or relative tolerance for non-integer numbers in outputs (the
            ``fade`` judge; the benchmarks' judges compare their own way).
        namespaces: False forces the weakest isolation (see :mod:`fade.verifiers.sandbox`).
        judge: "auto" (the profile the problem's format names) or one of
            :data:`fade.verifiers.judges.JUDGES` (lcb, taco, codecontests, humaneval, mbpp, fade).
    """

    def __init__(self, limits: Limits | dict[str, Any] | None = None, workers: int | None = None,
                 float_tolerance: float = 1e-6, namespaces: bool = True, judge: str = "auto") -> None:
        workers = (os.cpu_count() or 1) if workers is None else workers
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if not isinstance(float_tolerance, (int, float)) or not 0 <= float_tolerance < 1:
            raise ValueError(f"float_tolerance must be a number in [0, 1), got {float_tolerance!r}")
        if judge != "auto" and judge not in JUDGES:
            raise ValueError(f"judge must be auto or one of {', '.join(JUDGES)}, got {judge!r}")
        if isinstance(limits, dict):
            Limits(**limits)  # unknown fields and bad values are refused here, before anything runs
        elif limits is not None and not isinstance(limits, Limits):
            raise ValueError(f"limits must be a Limits, a dict of Limits fields or None, got {type(limits).__name__}")
        self.user_limits = limits
        self.workers = workers
        self.float_tolerance = float(float_tolerance)
        self.namespaces = namespaces
        self.judge = judge

    def limits_for(self, judge: Judge) -> Limits:
        """The limits a program runs under with ``judge``: the caller's, else the judge's defaults."""
        if isinstance(self.user_limits, Limits):
            return self.user_limits
        defaults = {k: v for k, v in (("time_seconds", judge.time_seconds), ("memory_mb", judge.memory_mb)) if v}
        return Limits(**{**defaults, **(self.user_limits or {})})

    def worst_case_seconds(self, tests: Any) -> float:
        """How long judging one completion against ``tests`` can hold a worker, whatever the
        program does: the profile's sandbox runs, each bounded by its deadline
        (:meth:`fade.verifiers.judges.Judge.worst_case_seconds`). Twice that only when the machine
        fails to set a sandbox up, which no program can cause, and the judging is tried again.
        Raises ValueError for tests that cannot be read."""
        suite = parse_tests(tests)
        judge = judge_for(suite, self.judge)
        return judge.worst_case_seconds(self.limits_for(judge), suite)

    def score(self, completion: str, tests: Any) -> VerifierResult:
        """Judge one completion against ``tests`` (a :class:`TestSuite`, or a problem's fields in
        any format :func:`parse_tests` reads). Malformed tests, or tests the chosen judge cannot
        read, give reason "bad_reference"."""
        try:
            suite = parse_tests(tests)
            judge = judge_for(suite, self.judge)
        except ValueError as exc:
            return VerifierResult.of("bad_reference", error=str(exc))
        if not isinstance(completion, str):
            return VerifierResult.of("no_code", note=f"the completion is a {type(completion).__name__}, not text",
                                     judge=judge.name)
        code = judge.extract(completion)
        if not code.strip():
            return VerifierResult.of("no_code", judge=judge.name)
        return self._run(code, suite, judge)

    def _run(self, code: str, suite: TestSuite, judge: Judge) -> VerifierResult:
        # A sandbox that does not start or set up a test says something about the machine (out of
        # processes, a broken interpreter), not the program (which never reaches either channel):
        # try once more, then stop with the reason.
        options = judge.run_options(suite)
        try:
            inputs, expected = judge.prepare_tests(suite)
            for test in inputs:
                harness_input(test, options)  # arguments the sandbox cannot be sent are the data's fault
        except ValueError as exc:
            return VerifierResult.of("bad_reference", error=str(exc), judge=judge.name)
        if judge.needs_numpy:
            options = replace(options, paths=tuple(numpy_paths()))
        failure = None
        for _ in range(2):
            result, failure = self._run_judged(code, suite, judge, inputs, expected, options)
            if result is not None:
                return result
        raise RuntimeError(f"the code sandbox did not start twice in a row: {failure}")

    def _run_judged(self, code: str, suite: TestSuite, judge: Judge, inputs: list, expected: list,
                    options: RunOptions) -> tuple[VerifierResult | None, str | None]:
        limits = self.limits_for(judge)
        result, failure = self._sandbox(judge.first_run(code, suite, inputs), code, suite, judge, limits, options,
                                        expected)
        again = judge.rerun(code, suite, inputs, result) if result is not None else None
        if again is None:
            return result, failure
        return self._sandbox(again, code, suite, judge, limits, options, expected)

    def _sandbox(self, job: SandboxJob, code: str, suite: TestSuite, judge: Judge, limits: Limits, options: RunOptions,
                 expected: list) -> tuple[VerifierResult | None, str | None]:
        with SandboxRun(job.source, job.inputs, call=suite.call, limits=limits, namespaces=self.namespaces,
                        options=options) as run:
            if run.failure_kind == "start":
                return None, run.failure
            try:
                return self._judge(run, job, code, suite, judge, limits, expected), None
            except SetupFailed as exc:
                return None, str(exc)

    def _judge(self, run: SandboxRun, job: SandboxJob, code: str, suite: TestSuite, judge: Judge, limits: Limits,
               expected: list) -> VerifierResult:
        """Read the run's records as they come, by the judge's record rules; the first failing test decides."""
        base = {"judge": judge.name, "tests": len(suite), "sandbox": run.isolation.get("mode"),
                "network_isolated": run.isolation.get("network", False), "memory_bound": run.isolation.get("memory")}
        tolerance = self.float_tolerance
        passed, seconds, exits = 0, 0.0, []
        # The first failing test decides. A profile may read on past one (TACO, whose wrapped rerun
        # depends on how every test ended): it is kept here, and a later failure does not replace it.
        deferred: tuple[str, dict[str, Any]] | None = None
        for record in run:
            seconds += record.get("seconds", 0.0)
            index = record["test"] - (1 if job.compile_step is not None else 0)
            if index < 0:  # a compile step before the tests
                ended = classify(record, limits)
                if ended is not None:
                    reason, info = ended
                    if reason not in ("sandbox_violation", "time_limit", "memory_limit", "output_limit"):
                        reason = "compile_error"
                    return VerifierResult.of(reason, **base, **info, note=job.compile_step)
                continue
            where = {**base, "passed": passed, "failed_test": index, "seconds": round(seconds, 4)}
            exits.append(record.get("exit") if not record.get("signal") and not record.get("ended") else None)
            ended = classify(record, limits)
            if ended is not None and judge.passes_after(ended[0], record, expected[index], suite, tolerance):
                passed += 1
                continue
            verdict = judge.failure(*ended, record, suite, exits) if ended is not None else \
                judge.compare(record, expected[index], suite, tolerance)
            if verdict is None and ended is not None:
                deferred = deferred or (ended[0], {**where, **ended[1]})
                continue
            if verdict is not None:
                reason, info = deferred or (verdict[0], {**where, **verdict[1]})
                return VerifierResult.of(reason, **info)
            passed += 1
        if deferred is not None:
            reason, info = deferred
            if len(exits) == len(suite) and all(code == 1 for code in exits):
                info = {**info, "all_exit_1": True}  # every test ended with status 1 (TACO's rerun reads it)
            return VerifierResult.of(reason, **info)
        where = {**base, "passed": passed, "seconds": round(seconds, 4)}
        if run.failure_kind == "deadline":
            return VerifierResult.of("time_limit", **where, failure=run.failure)
        if run.failure is not None or passed < len(suite):
            return VerifierResult.of(
                "sandbox_violation", **where, failure=run.failure or "the sandbox stopped before the last test"
            )
        return VerifierResult.of("correct", canonical_program(code), **where)

    def score_many(
        self, completions: Sequence[str], tests: Sequence[Any], *, errors: str = "raise"
    ) -> list[VerifierResult]:
        """Judge pairs in parallel; results in input order. ``errors="result"`` turns a failure of
        the machine (a sandbox that does not start twice) into that pair's result, reason
        "error", logged as a warning, instead of raising: what a reward inside training wants."""
        if len(completions) != len(tests):
            raise ValueError(f"got {len(completions)} completions and {len(tests)} test sets: expected as many of each")
        return [
            result for _, result in sorted(self.imap(list(zip(completions, tests)), errors=errors), key=lambda x: x[0])
        ]

    def imap(self, pairs: Sequence[tuple[str, Any]], *, errors: str = "raise") -> Iterator[tuple[int, VerifierResult]]:
        """Judge ``(completion, tests)`` pairs in parallel, yielding ``(index, result)`` as each finishes."""
        if errors not in _ERRORS:
            raise ValueError(f"errors must be one of {_ERRORS}, got {errors!r}")
        if not pairs:
            return
        score = self.score if errors == "raise" else self._score_or_error
        with ThreadPoolExecutor(max_workers=min(self.workers, len(pairs))) as pool:
            futures = {pool.submit(score, c, t): i for i, (c, t) in enumerate(pairs)}
            for future in as_completed(futures):
                yield futures[future], future.result()

    def _score_or_error(self, completion: str, tests: Any) -> VerifierResult:
        try:
            return self.score(completion, tests)
        except Exception as exc:  # the machine failed, not the program: counted as 0 and said so
            _log.warning("code verifier failed (scored 0, reason 'error'): %s: %s", type(exc).__name__, exc)
            return VerifierResult.of("error", error=f"{type(exc).__name__}: {exc}")


_default: CodeVerifier | None = None


def default_code_verifier() -> CodeVerifier:
    """The verifier shared by :func:`score_code`, the reward adapters and the testbed (default limits)."""
    global _default
    if _default is None:
        _default = CodeVerifier()
    return _default


def score_code(completion: str, tests: Any) -> VerifierResult:
    """Judge one completion with the shared default verifier."""
    return default_code_verifier().score(completion, tests)
