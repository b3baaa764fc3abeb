"""The ``humaneval`` profile: openai/human-eval (``human_eval/execution.py``), for problems with
``test`` (defining ``check(candidate)``) and ``entry_point``; also HumanEval+ rows that carry a
``test`` field, as bigcode's humanevalplus task judges them.

Rules H1-H5 of docs/verifiers.md: the prompt, the completion and the check assembled into one
program, run in an empty globals dict with a standard input that raises and the output
discarded, under the reliability guard; 3 s for the whole program; passed only when the program
returns to the harness (an exception of any kind, or a process that ends before, fails). The mbpp profile judges its
own program by these rules too.
"""

from __future__ import annotations

from typing import Any

from ..run_options import CHECK, RunOptions
from ..testcases import TestSuite
from .base import Judge

__all__ = ["JUDGE", "HumanEval", "humaneval_program"]


def humaneval_program(completion: str, check: dict) -> str:
    """human-eval's check program: prompt + completion + "\\n" + test + "\\n" + check(entry_point)."""
    return f"{check.get('prompt', '')}{completion}\n{check['test']}\ncheck({check['entry_point']})"


class HumanEval(Judge):
    name = "humaneval"
    benchmark = "HumanEval"
    fields = ("test", "entry_point")
    format_doc = "`task_id`, `prompt`, `test` (defining `check`), `entry_point`"
    follows = "openai/human-eval, `human_eval/execution.py`; HumanEval+ rows with a `test` field likewise"
    kind = "check"
    time_seconds = 3.0

    def extract(self, completion: str) -> str:
        return completion  # the completion as it is, after the prompt

    def program(self, code: str, suite: TestSuite) -> str:
        return humaneval_program(code, suite.check)

    def run_options(self, suite: TestSuite) -> RunOptions:
        return RunOptions(io=CHECK, guard=True, guard_exit=True)

    def compare(self, record: dict[str, Any], expected: Any, suite: TestSuite,
                tolerance: float) -> tuple[str, dict[str, Any]] | None:
        # H2: a check program passes when the check returns; a process that ended before (a
        # status 0 from os._exit, exec, a thread) never reported it.
        return self.unfinished(record, suite)

    def failure(self, reason: str, info: dict[str, Any], record: dict[str, Any], suite: TestSuite,
                exits: list[int | None]) -> tuple[str, dict[str, Any]] | None:
        if info.get("exception") == "AssertionError":
            reason = "wrong_answer"  # a check's assert failed: the program runs and computes something else
        return reason, info


JUDGE = HumanEval()
