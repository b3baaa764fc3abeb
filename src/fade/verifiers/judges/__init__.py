"""Judging profiles: how each benchmark's own harness turns a program and its tests into a
verdict, so that ``fade eval`` and the code rewards give the numbers that benchmark publishes.

A profile fixes everything between the completion and the verdict that the official harness
fixes: which code is taken from the completion, what is prepended to it (imports, a recursion
limit), how the program is run (as a script, wrapped into a function, as a module whose function
is called, as one assembled program of checks), how standard input is fed and output captured,
which built-in functions are switched off, the default limits, how an output or a returned
value is compared with the expected one, and what a crash or an exit means. Every rule names
the place in the official harness that states it; docs/verifiers.md has the table. The programs
run in fade's sandbox in every profile (the official harnesses are not sandboxes), one fresh
process per test.

Each profile is one module of this package holding its :class:`~.base.Judge` as ``JUDGE``
(:mod:`.base` says what a judge decides and when), registered by its module's name in
:data:`PROFILES`:

- ``lcb``: LiveCodeBench's grader (``lcb_runner/evaluation/testing_util.py``, 2025-07).
- ``taco``: TACO's grader (``metrics/testing_util.py``; APPS-format ``input_output`` problems).
- ``codecontests``: DeepMind's CodeContests tester (``execution/tester_sandboxer.cc``).
- ``humaneval``: openai/human-eval (``human_eval/execution.py``); also HumanEval+ rows that carry
  a ``test`` field, as bigcode's humanevalplus task judges them.
- ``mbpp``: MBPP as bigcode-evaluation-harness judges it (``bigcode_eval/tasks/mbpp.py``); the
  MBPP release has no execution harness of its own.
- ``fade``: fade's own rules (docs/verifiers.md): tokens, integers exact, other numbers within a
  tolerance, one-element lists unwrapped. For the ``tests`` field and whenever asked for.
"""

from __future__ import annotations

from importlib import import_module
from itertools import groupby

from ..sandbox import Limits
from ..testcases import TestSuite, integer_guard_ok
from .base import Judge, extract_program
from .codecontests import codecontests_match
from .humaneval import humaneval_program
from .lcb import LCB_PRELUDE, lcb_extract, lcb_stdout_match, lcb_value_match, lcb_wrap
from .mbpp import MBPP_STOP_WORDS, mbpp_program
from .taco import TACO_PRELUDE, taco_std_versions, taco_stdout_match, taco_value_match

__all__ = [
    "JUDGES",
    "JUDGE_FIELDS",
    "PROFILES",
    "Judge",
    "LCB_PRELUDE",
    "MBPP_STOP_WORDS",
    "TACO_PRELUDE",
    "codecontests_match",
    "extract_program",
    "humaneval_program",
    "integer_guard_ok",
    "judge_for",
    "lcb_extract",
    "lcb_stdout_match",
    "lcb_value_match",
    "lcb_wrap",
    "limit_defaults",
    "mbpp_program",
    "profile_table",
    "taco_std_versions",
    "taco_stdout_match",
    "taco_value_match",
]

#: The profiles, each a module of this package, in the order of ``--judge``'s choices and the
#: docs' table. A new profile is its module and its name here.
PROFILES = ("lcb", "taco", "codecontests", "humaneval", "mbpp", "fade")

#: Every profile by name.
JUDGES: dict[str, Judge] = {name: import_module(f"{__name__}.{name}").JUDGE for name in PROFILES}

#: The fields of a problem that say which benchmark's format it is in.
JUDGE_FIELDS: dict[str, tuple[str, ...]] = {name: judge.fields for name, judge in JUDGES.items()}


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
            raise ValueError(
                f"judge {name} reads {wanted}; this problem has {', '.join(sorted(present)) or 'no tests'}"
            )
        if judge.kind == "check" and suite.check.get("style") != name:
            raise ValueError(f"judge {name} cannot judge a {suite.check.get('style')} problem (its fields: "
                             f"{', '.join(sorted(present))})")
        return judge
    if suite.check is not None:
        return JUDGES[suite.check["style"]]
    named = {j.name for j in JUDGES.values() if any(k in present for k in j.fields)}
    found = sorted({n for n in named if not JUDGES[n].fallback} or named)
    if len(found) != 1:
        raise ValueError(f"the problem's fields ({', '.join(sorted(present))}) belong to "
                         f"{', '.join(found) or 'no benchmark'}: name the judge (--judge / judge=)")
    return JUDGES[found[0]]


def _default(judge: Judge, field: str) -> float:
    """The profile's default of a :class:`Limits` field, the sandbox's where it has none."""
    value = getattr(judge, field)
    return value if value is not None else getattr(Limits(), field)


def _whole(judge: Judge, field: str) -> str:
    # A check program runs once: its time limit is for the whole program.
    return " for the whole program" if field == "time_seconds" and judge.kind == "check" else ""


def limit_defaults(field: str) -> str:
    """Each profile's default of a :class:`Limits` field (``time_seconds`` or ``memory_mb``), as
    the command line's help says it: the profiles with a default of their own (neighbours with
    the same one together), then the sandbox's for the others (``codecontests 288, else 1024``)."""
    own = [(name, f"{_default(judge, field):g}{_whole(judge, field)}") for name, judge in JUDGES.items()
           if getattr(judge, field) is not None]
    parts = [f"{' and '.join(name for name, _ in group)} {text}" for text, group in groupby(own, key=lambda x: x[1])]
    others = [name for name, judge in JUDGES.items() if getattr(judge, field) is None]
    if others:
        parts.append(f"{others[0] if len(others) == 1 else 'else'} {getattr(Limits(), field):g}")
    return ", ".join(parts)


def profile_table() -> str:
    """docs/verifiers.md's table of the profiles (a test keeps the page's copy the same)."""
    rows = ["| format (fields) | profile | official harness it follows | default limits |", "|---|---|---|---|"]
    for judge in JUDGES.values():
        per = _whole(judge, "time_seconds") or " per test"
        limits = f"{_default(judge, 'time_seconds'):g} s{per}, {_default(judge, 'memory_mb'):g} MB"
        rows.append(f"| {judge.format_doc} | `{judge.name}` | {judge.follows} | {limits} |")
    return "\n".join(rows) + "\n"
