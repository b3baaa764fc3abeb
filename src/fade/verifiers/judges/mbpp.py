"""The ``mbpp`` profile: MBPP as bigcode-evaluation-harness judges it (``bigcode_eval/tasks/mbpp.py``;
the MBPP release has no execution harness of its own), for problems with ``test_list``.

Rule M1 of docs/verifiers.md: bigcode's prompt, the completion cut at the first stop word and the
asserts of ``test_list`` assembled into one program, then judged as HumanEval's (H2-H5).
"""

from __future__ import annotations

from ..testcases import TestSuite
from .humaneval import HumanEval

__all__ = ["JUDGE", "MBPP_STOP_WORDS", "mbpp_program", "mbpp_prompt"]

#: Where bigcode's MBPP task cuts a generation (stop words).
MBPP_STOP_WORDS = ("\nclass", "\nassert", '\n"""', "\nprint", "\nif", "\n<|/", "\n```")


def mbpp_prompt(check: dict) -> str:
    return f'"""\n{check.get("text", "")}\n{check["test_list"][0]}\n"""\n'


def mbpp_program(completion: str, check: dict) -> str:
    """bigcode's MBPP program: its prompt (a docstring of the task and the first test), the
    completion cut at the first stop word, a newline and the asserts of ``test_list``
    (``test_setup_code`` and ``challenge_test_list`` are not used, as there)."""
    cut = min((i for i in (completion.find(w) for w in MBPP_STOP_WORDS) if i >= 0), default=len(completion))
    return mbpp_prompt(check) + completion[:cut] + "\n" + "\n".join(check["test_list"])


class MBPP(HumanEval):
    name = "mbpp"
    benchmark = "MBPP"
    fields = ("test_list",)
    format_doc = "`task_id`, `text`, `test_list` (+ `test_setup_code`, `challenge_test_list`)"
    follows = "bigcode-evaluation-harness, `bigcode_eval/tasks/mbpp.py` (the MBPP release ships no harness)"

    def program(self, code: str, suite: TestSuite) -> str:
        return mbpp_program(code, suite.check)


JUDGE = MBPP()
