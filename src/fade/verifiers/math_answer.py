"""Math-answer rewards: extract the final answer of a completion and compare it with the gold
answer using Hugging Face's ``math-verify`` (the ``math`` extra).

Extraction (``answer_mode``):

- "any" (the default, math-verify's own): ``\\boxed{...}`` (the last one) first, then "final
  answer is ..." phrases, then any LaTeX or plain expression anywhere, as math-verify does with
  its boxed priority raised to the top. A truncated completion still yields its last expression.
- "final": only an answer in its final form: the last closed ``\\boxed{...}`` or ``\\fbox{...}``
  (with the boxes right before it that math-verify reads as one answer: fewer than 10 characters
  apart, or joined by and, or, a comma or a semicolon within 70; across two math environments,
  ``$...$`` and the like, only when nothing but spaces, delimiters and one such separator lies
  between), else the rest of the last line that matches ``final_answer_pattern`` ("the final
  answer is", "Final answer:", ...). A completion with neither has no answer, so an output cut
  off mid-derivation scores 0: the mode for RL rewards.
- "boxed": the last closed box only (with the boxes read as one answer with it).

In "final" and "boxed" the answer's span is searched in the worker, under the timeout, in time
linear in the completion.

Comparison is math-verify's ``verify``, with its settings exposed: ``float_rounding`` (decimal
places floats are rounded to, 6), ``numeric_precision`` (significant digits of numeric
evaluation, 15), ``strict`` (variables and set/tuple kinds must match, True) and
``allow_set_relation_comp`` (an inequality such as 1 < x < 2 equals the interval (1, 2), False).
So numbers compare by value ("033" equals "33" and 0.5 equals \\frac{1}{2}), expressions
symbolically, and sets, intervals and matrices as such. Gold answers may be bare ("33",
"x^2+1"), delimited ("$\\frac{1}{2}$") or boxed.

A check that runs out of the worker's address space (``memory_mb``) is reported as
"memory_limit", even where math-verify catches the MemoryError and carries on with a weaker
reading of the answer.

math-verify times itself out with ``signal.alarm``, which works only in a process's main thread,
and a few inputs (a power tower such as ``9^{9^{9^9}}``) hang in C code that no signal
interrupts. So the checking runs in worker processes that this module starts and feeds one
request at a time: inside a worker a timer interrupts slow Python-level work, and a worker that
does not answer within ``timeout`` plus a grace second is killed and replaced. A verifier can
therefore be called from any thread (verl calls reward functions from a thread pool), and no
input can stall it longer than its timeout.

Python refuses to read or write an integer of more than 4,300 digits as text (its guard against
the quadratic cost of the conversion, ``sys.get_int_max_str_digits``); math-verify catches that
refusal and reads such a gold as no answer and such a completion as raw text. The workers lift
the limit: the timeout bounds the conversion's cost as it bounds everything else, so an answer
of any length is judged by value, as math-verify judges shorter ones.
"""

from __future__ import annotations

import atexit
import decimal
import json
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from fade.extras import install_line

from .result import VerifierResult
from .sandbox import MAX_LIMIT_MB, MAX_TIME_SECONDS

_log = logging.getLogger(__name__)

__all__ = ["ANSWER_MODES", "BACKEND_PACKAGES", "FINAL_ANSWER_PATTERN", "MathVerifier", "align_latex_parser",
           "default_math_verifier", "final_answer_span", "math_backend", "score_math"]

# A worker's first answer waits for its imports (sympy, the LaTeX grammar): seconds, not a timeout.
_STARTUP_SECONDS = 120.0
# How much longer than the per-call timeout a worker may take before it is killed.
_GRACE_SECONDS = 1.0
# Completions longer than this are cut to their last part before extraction: the final answer
# is at the end, and regexes over megabytes of text cost more than any answer is worth.
MAX_COMPLETION_CHARS = 20_000
#: The packages whose versions decide how a LaTeX answer is read (see :func:`align_latex_parser`).
BACKEND_PACKAGES = ("math-verify", "latex2sympy2_extended", "antlr4-python3-runtime")
#: Where a completion's answer may come from (see the module docstring).
ANSWER_MODES = ("any", "final", "boxed")
#: A line that states the final answer, for ``answer_mode="final"``; the answer is the rest of the line.
FINAL_ANSWER_PATTERN = r"(?i)\bfinal\s+answer\b[^\n]*?(?:\bis\b|:)"
# math-verify's rule for boxes read as one answer: the next box starts fewer than 10 characters
# after one ends, or within 70 after a separator (and, or, a comma or a semicolon).
_BOX_GAP, _BOX_GAP_SEPARATED = 10, 70
_BOX_SEPARATOR = re.compile(r"\b(?:and|or)\b|,|;")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACE = re.compile(r"[{}]")
# Boxes in two math environments ($...$, \(...\), \[...\]) are one answer only when nothing but
# spaces, the delimiters and at most one separator joins them (within 70 characters), as
# math-verify joins environments; a box in an earlier environment is otherwise an answer of its own.
_DELIMITER = r"\$|\\[()\[\]]"
_MATH_DELIMITER = re.compile(_DELIMITER)
_JOINED_ENVIRONMENTS = re.compile(rf"(?:\s|{_DELIMITER})*(?:(?:,\s*)?(?:and|or)\b|[,;])?(?:\s|{_DELIMITER})*")
_FBOX = re.compile(r"\\fbox(?=\s*\{)")


def _closed_boxes(text: str) -> list[tuple[int, int]]:
    """(start, end) of every ``\\boxed{...}`` / ``\\fbox{...}`` whose braces close, in order of start.

    One pass over the braces with a stack (a box's brace closes at the first "}" that balances
    it, as counting would find), so the cost is linear in the text, nested boxes included."""
    commands = list(_BOX.finditer(text))
    boxes = [[m.start(), -1] for m in commands]
    box_at = {m.end() - 1: i for i, m in enumerate(commands)}
    open_braces: list[int | None] = []
    for brace in _BRACE.finditer(text):
        if brace.group() == "{":
            open_braces.append(box_at.get(brace.start()))
        elif open_braces:
            box = open_braces.pop()
            if box is not None:
                boxes[box][1] = brace.end()
    return [(start, end) for start, end in boxes if end >= 0]


def _read_together(between: str) -> bool:
    """Whether two boxes with ``between`` between them are one answer (module docstring)."""
    if len(between) >= _BOX_GAP_SEPARATED:
        return False
    if _MATH_DELIMITER.search(between):
        return _JOINED_ENVIRONMENTS.fullmatch(between) is not None
    return len(between) < _BOX_GAP or _BOX_SEPARATOR.search(between) is not None


def final_answer_span(completion: str, mode: str = "final", pattern: str = FINAL_ANSWER_PATTERN) -> str | None:
    """The part of ``completion`` that states its final answer, or None when there is none:
    for "boxed", the last closed box together with the boxes read as one answer with it (each
    ``\\fbox`` written as ``\\boxed``, which math-verify reads); for "final", that, else the rest
    of the last line matching ``pattern``. Linear in the length of ``completion`` (``pattern``'s
    own matching aside)."""
    if mode not in ("final", "boxed"):
        raise ValueError(f"answer mode must be 'final' or 'boxed' here, got {mode!r}")
    boxes = _closed_boxes(completion)
    if boxes:
        start, end = boxes[-1]
        for prev_start, prev_end in reversed(boxes[:-1]):
            if prev_end > start or not _read_together(completion[prev_end:start]):
                break  # nested in the last box, or an answer of its own
            start = prev_start
        return _FBOX.sub(r"\\boxed", completion[start:end])
    if mode == "boxed":
        return None
    matches = list(re.finditer(pattern, completion))
    if not matches:
        return None
    end = matches[-1].end()
    line_end = completion.find("\n", end)
    rest = completion[end: None if line_end < 0 else line_end].strip()
    return rest or None


class _Worker:
    """One checking process and the bytes it has sent but we have not read."""

    def __init__(self, memory_mb: int) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from fade.verifiers.math_answer import serve; serve({int(memory_mb)})"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )
        self._buffer = bytearray()
        hello = self.receive(_STARTUP_SECONDS)
        self.memory_bytes = hello.get("memory_bytes") if isinstance(hello, dict) else None
        self.backend = hello.get("backend") if isinstance(hello, dict) else None
        if hello is None or hello.get("ready") is not True:
            self.kill()
            raise RuntimeError(
                "the math-verify worker did not start; is the 'math' extra installed? "
                f"({install_line('math')})"
                + (f": {hello.get('error')}" if isinstance(hello, dict) and hello.get("error") else "")
            )

    def send(self, request: dict) -> bool:
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except OSError:
            return False

    def receive(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                try:
                    return json.loads(line)
                except ValueError:
                    return None
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


class MathVerifier:
    """Scores completions against gold answers with math-verify, in worker processes.

    Args:
        timeout: seconds one completion may take to extract, parse and compare (> 0, at most
            :data:`~fade.verifiers.sandbox.MAX_TIME_SECONDS`, a day).
        workers: most worker processes running at once (default: the CPU count); they start
            on first use, about a second each, and stay until :meth:`close`.
        memory_mb: address-space limit of each worker, >= 64 (lowered to the limits this process
            already has, where those are lower).
        answer_mode: where the answer may come from: "any", "final" or "boxed" (module docstring).
        final_answer_pattern: the regular expression of a final-answer line ("final" mode).
        float_rounding, numeric_precision, strict, allow_set_relation_comp: math-verify's
            ``verify`` settings, with its defaults.
    """

    def __init__(self, timeout: float = 5.0, workers: int | None = None, memory_mb: int = 4096, *,
                 answer_mode: str = "any", final_answer_pattern: str = FINAL_ANSWER_PATTERN, float_rounding: int = 6,
                 numeric_precision: int = 15, strict: bool = True, allow_set_relation_comp: bool = False) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIME_SECONDS:
            raise ValueError(f"timeout must be a number of seconds > 0 and at most {MAX_TIME_SECONDS}, got {timeout!r}")
        workers = (os.cpu_count() or 1) if workers is None else workers
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or not 64 <= memory_mb <= MAX_LIMIT_MB:
            raise ValueError(f"memory_mb must be an integer >= 64 and at most {MAX_LIMIT_MB}, got {memory_mb!r}")
        if answer_mode not in ANSWER_MODES:
            raise ValueError(f"answer_mode must be one of {', '.join(ANSWER_MODES)}, got {answer_mode!r}")
        try:
            re.compile(final_answer_pattern)
        except (re.error, TypeError) as exc:
            raise ValueError(
                f"final_answer_pattern must be a regular expression, got {final_answer_pattern!r} ({exc})"
            ) from None
        for name, value, low in (("float_rounding", float_rounding, 0), ("numeric_precision", numeric_precision, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, value in (("strict", strict), ("allow_set_relation_comp", allow_set_relation_comp)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be True or False, got {value!r}")
        self.timeout = float(timeout)
        self.workers = workers
        self.memory_mb = int(memory_mb)
        self.answer_mode = answer_mode
        self.final_answer_pattern = final_answer_pattern
        self.compare = {"float_rounding": float_rounding, "numeric_precision": numeric_precision, "strict": strict,
                        "allow_set_relation_comp": allow_set_relation_comp}
        self._idle: list[_Worker] = []
        self._started = 0
        self._cond = threading.Condition()
        self._closed = False

    def settings(self) -> dict:
        """Everything a score depends on besides the completion and the gold answer."""
        out = {"answer_mode": self.answer_mode, **self.compare}
        if self.answer_mode == "final":
            out["final_answer_pattern"] = self.final_answer_pattern
        return out

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._started -= len(idle)
        for worker in idle:
            worker.kill()

    def _acquire(self) -> _Worker:
        with self._cond:
            while not self._idle and self._started >= self.workers:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._started += 1
        try:
            worker = _Worker(self.memory_mb)
        except BaseException:
            with self._cond:
                self._started -= 1
                self._cond.notify()
            raise
        _say_backend(worker.backend)
        return worker

    def _release(self, worker: _Worker | None) -> None:
        with self._cond:
            if worker is None:
                self._started -= 1
            else:
                self._idle.append(worker)
            self._cond.notify()

    def score(self, completion: str, gold: str) -> VerifierResult:
        """Judge one completion; never raises for anything in ``completion`` or ``gold``."""
        if not isinstance(completion, str):
            return VerifierResult.of("no_answer", note=f"the completion is a {type(completion).__name__}, not text")
        if not completion.strip():
            return VerifierResult.of("empty")
        if gold is None or (isinstance(gold, str) and not gold.strip()):
            return VerifierResult.of("bad_reference", error="the gold answer is empty")
        if isinstance(gold, (int, float)) and not isinstance(gold, bool):
            gold = _number_text(gold)
        if not isinstance(gold, str):
            return VerifierResult.of(
                "bad_reference", error=f"the gold answer is a {type(gold).__name__}, expected text"
            )
        # The answer's span is found in the worker, under the timeout, like everything else.
        request = {"completion": completion[-MAX_COMPLETION_CHARS:], "gold": gold, "timeout": self.timeout,
                   "compare": self.compare, "answer_mode": self.answer_mode, "pattern": self.final_answer_pattern}
        worker = self._acquire()
        answer = worker.receive(self.timeout + _GRACE_SECONDS) if worker.send(request) else None
        if answer is None:
            # Stuck past its timeout (or dead): the only way to stop C code is to end the process.
            worker.kill()
            self._release(None)
            return VerifierResult.of("timeout", seconds=self.timeout)
        self._release(worker)
        return VerifierResult.of(answer["reason"], answer.get("canonical"), **answer.get("details", {}))

    def score_many(self, completions: Sequence[str], golds: Sequence[str]) -> list[VerifierResult]:
        """Judge pairs in parallel (as many at once as there are workers); results in input order."""
        if len(completions) != len(golds):
            raise ValueError(
                f"got {len(completions)} completions and {len(golds)} gold answers: expected as many of each"
            )
        if len(completions) <= 1:
            return [self.score(c, g) for c, g in zip(completions, golds)]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(completions))) as pool:
            return list(pool.map(self.score, completions, golds))


def _number_text(value: int | float) -> str:
    """A number gold as text. Decimal writes an int of any length exactly, where ``str`` refuses
    more than Python's 4,300 digits (``sys.get_int_max_str_digits``)."""
    return str(decimal.Decimal(value)) if isinstance(value, int) else str(value)


_backend_said = False


def _say_backend(backend: dict | None) -> None:
    """Log once per process which math-verify, LaTeX parser and ANTLR runtime the workers found."""
    global _backend_said
    if _backend_said or not backend:
        return
    _backend_said = True
    versions = ", ".join(f"{name} {backend.get(name)}" for name in BACKEND_PACKAGES)
    _log.info("math answers checked with %s%s", versions, f"; {backend['aligned']}" if backend.get("aligned") else "")


_default: MathVerifier | None = None
_default_lock = threading.Lock()


def default_math_verifier() -> MathVerifier:
    """The verifier shared by :func:`score_math`, the reward adapters and the testbed."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MathVerifier()
            atexit.register(_default.close)
        return _default


def score_math(completion: str, gold: str) -> VerifierResult:
    """Judge one completion with the shared default verifier (5 s timeout)."""
    return default_math_verifier().score(completion, gold)


# -- inside a worker process ---------------------------------------------------------------------


class _Deadline(BaseException):
    """Raised by the worker's timer; a BaseException so that math-verify's handlers let it pass."""


def _gold_text(gold: str) -> str:
    text = gold.strip()
    if "$" in text or "\\boxed" in text or "\\(" in text or "\\[" in text:
        return text
    return f"${text}$"  # a bare answer ("33", "\\frac{1}{2}", "x^2+1") read as one LaTeX expression


_VERIFY_DEFAULTS = {"float_rounding": 6, "numeric_precision": 15, "strict": True, "allow_set_relation_comp": False}


def align_latex_parser() -> str | None:
    """Make math-verify's LaTeX parser read answers the same under every ANTLR runtime it supports;
    returns what was changed here, or None.

    latex2sympy2_extended ships one generated parser per ANTLR runtime (4.9.3, 4.11, 4.13.2) and
    picks the one matching the installed runtime. In 1.11.0 the 4.9.3 parser, the one every verl
    environment gets (hydra-core and omegaconf pin antlr4-python3-runtime 4.9.*), lacks the
    ``FUNC_GAMMA`` accessor of ``AtomContext`` that the converter calls just before it reads a
    percentage, so every ``25\\%`` raises there and math-verify falls back to the raw text
    ("malformed"), where under 4.13.2 it is 25/100 and math-verify's own percentage rule applies
    (``\\boxed{25\\%}`` is correct against 25 and 0.25). That accessor is the only one the generated
    parsers differ in (tests/test_math_conformance.py checks it), and in the 4.9.3 grammar an atom
    never holds that token, so adding it, as the 4.13.2 parser defines it, makes the converter go
    on to the percentage as it does under 4.13.2."""
    from latex2sympy2_extended.antlr_parser import PSParser

    atom = PSParser.AtomContext
    if hasattr(atom, "FUNC_GAMMA"):
        return None
    atom.FUNC_GAMMA = lambda self: self.getToken(PSParser.FUNC_GAMMA, 0)
    return "the ANTLR 4.9.3 parser's AtomContext.FUNC_GAMMA, missing in latex2sympy2_extended, added (percentages)"


def math_backend() -> dict[str, str | None]:
    """The installed versions of the packages a math verdict depends on (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for name in BACKEND_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def _compare(completion: str, gold: str, compare: dict) -> dict:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    align_latex_parser()

    golds = parse(_gold_text(gold), extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()],
                  parsing_timeout=None)
    if not golds:
        return {
            "reason": "bad_reference",
            "details": {"error": f"math-verify found no answer in the gold {gold[:200]!r}"},
        }
    preds = parse(completion, extraction_config=[LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()],
                  parsing_timeout=None)
    if not preds:
        return {"reason": "no_answer", "details": {}}
    shown = str(preds[-1] if len(preds) > 1 else preds[0])[:200]
    details = {"extracted": shown, "gold": str(golds[0])[:200]}
    if verify(golds, preds, timeout_seconds=None, **compare):
        return {"reason": "correct", "canonical": str(preds[0])[:500], "details": details}
    # Only the raw text came back (math-verify's fallback): an answer that is not math.
    parsed = any(not isinstance(p, str) for p in preds)
    return {"reason": "wrong" if parsed else "malformed", "details": details}


def _ran_out_of_memory(call) -> bool:
    """Whether ``call()`` raised a MemoryError anywhere, caught or not: math-verify catches its
    parsers' and comparisons' exceptions, MemoryError included, and carries on with a weaker
    reading. Traced with exception events only (about 2x the work), so run only to explain a
    failed check; a deadline inside it ends the tracing, not the caller's answer."""
    seen = []

    def on_event(frame, event, arg):
        if event == "exception" and issubclass(arg[0], MemoryError):
            seen.append(frame.f_code.co_name)
        return on_event

    def on_call(frame, event, arg):
        frame.f_trace_lines = False
        return on_event

    sys.settrace(on_call)
    try:
        call()
    except MemoryError:
        seen.append("raised")
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return bool(seen)


def _judge(completion: str, gold: str, timeout: float, compare: dict | None = None, answer_mode: str = "any",
           pattern: str = FINAL_ANSWER_PATTERN) -> dict:
    compare = {**_VERIFY_DEFAULTS, **(compare or {})}

    def _on_alarm(signum, frame):
        raise _Deadline

    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        if answer_mode != "any":
            span = final_answer_span(completion, answer_mode, pattern)
            if span is None:
                what = "a closed \\boxed{...}" + (" or a final-answer line" if answer_mode == "final" else "")
                return {"reason": "no_answer", "details": {"answer_mode": answer_mode,
                                                           "note": f"no answer in its final form ({what})"}}
            completion = span
        answer = _compare(completion, gold, compare)
        if answer["reason"] in ("wrong", "malformed", "no_answer"):
            try:
                if _ran_out_of_memory(lambda: _compare(completion, gold, compare)):
                    answer = {
                        "reason": "memory_limit",
                        "details": {**answer["details"], "instead_of": answer["reason"]},
                    }
            except _Deadline:
                pass  # no time left to look: the first answer stands
        return answer
    except _Deadline:
        return {"reason": "timeout", "details": {"seconds": timeout}}
    except MemoryError:
        return {"reason": "memory_limit", "details": {}}
    except Exception as exc:  # math-verify's own failures: count as not verified, say which
        return {"reason": "error", "details": {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _watch_parent(parent: int) -> None:
    # Exit when the evaluator dies, even in the middle of a computation that never returns.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _address_space_limit(wanted: int) -> int:
    """``wanted``, or the limits the caller already set where they are lower: only root may raise
    a hard limit, and even root should not undo a limit its caller chose."""
    import resource

    return min([wanted] + [v for v in resource.getrlimit(resource.RLIMIT_AS) if v != resource.RLIM_INFINITY])


def serve(memory_mb: int = 4096) -> None:
    """The worker's loop: one JSON request per stdin line, one JSON answer per stdout line."""
    import resource

    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    out = sys.stdout.buffer
    try:
        import math_verify  # noqa: F401

        backend = {**math_backend(), "aligned": align_latex_parser()}
        logging.getLogger("math_verify").setLevel(logging.CRITICAL)
        logging.getLogger("latex2sympy2_extended").setLevel(logging.CRITICAL)
        sys.set_int_max_str_digits(0)  # the timeout bounds the conversions instead (module docstring)
        limit = _address_space_limit(int(memory_mb) << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        _judge("\\boxed{1}", "1", 30.0)  # warm the parsers once, outside any caller's timeout
    except Exception as exc:
        out.write((json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
        out.flush()
        return
    out.write((json.dumps({"ready": True, "memory_bytes": limit, "backend": backend}) + "\n").encode())
    out.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        answer = _judge(request["completion"], request["gold"], float(request["timeout"]), request.get("compare"),
                        request.get("answer_mode", "any"), request.get("pattern", FINAL_ANSWER_PATTERN))
        out.write((json.dumps(answer) + "\n").encode())
        out.flush()

