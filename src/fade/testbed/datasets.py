"""Prompt/answer sets from a JSON-lines file, scored by a named verifier, as a testbed task.

``fade train --data FILE.jsonl --verifier NAME`` trains on a user's own problems with any local
model. Each line holds ``prompt`` and ``answer``, and optionally ``id``, ``difficulty`` (a
positive integer bucket; 1 when absent) and ``split`` ("train" or "test"); lines without a
split are placed by a stable hash of the prompt, 20% to test, as the built-in tasks are.
Verifiers are looked up by name in :data:`VERIFIERS`: ``exact`` and ``numeric`` here, and
``math`` (math-verify, the ``math`` extra) and ``code`` (programs run against tests in the sandbox)
from :mod:`fade.verifiers`, imported on first use. For ``--verifier code`` a line may hold its
tests instead of ``answer``: any fields :mod:`fade.verifiers.testcases` reads (``tests``,
LiveCodeBench's ``public_test_cases``/``private_test_cases``/``metadata``, TACO's
``input_output``, CodeContests' ``public_tests``/``private_tests``/``generated_tests``); they are
kept as the problem's answer, as JSON text. The file is read by :mod:`fade.jsonl` (a ``.gz`` one
decompressed): a line that cannot be read, a torn last line included, is an error naming it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from fade import jsonl

from .tasks import TEST_FRACTION, Problem, Verdict, select_difficulties

__all__ = ["BATCH_VERIFIERS", "VERIFIERS", "FileTask", "register_verifier"]


def _exact(answer: str, completion: str) -> Verdict:
    text = completion.strip()
    if not text:
        return Verdict(0.0, "empty", None)
    return Verdict(1.0, "correct", text) if text == answer.strip() else Verdict(0.0, "wrong", None)


def _numeric(answer: str, completion: str) -> Verdict:
    text = completion.strip()
    if not text:
        return Verdict(0.0, "empty", None)
    try:
        got, want = float(text.replace(",", "")), float(answer.replace(",", ""))
    except ValueError:
        return Verdict(0.0, "malformed", None)
    if not math.isfinite(got):
        return Verdict(0.0, "malformed", None)
    if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
        return Verdict(1.0, "correct", repr(want))
    return Verdict(0.0, "wrong", None)


def _math(answer: str, completion: str) -> Verdict:
    from fade.verifiers.math_answer import score_math

    result = score_math(completion, answer)
    return Verdict(result.score, result.reason, result.canonical)


def _code(answer: str, completion: str) -> Verdict:
    from fade.verifiers.code_exec import score_code

    result = score_code(completion, answer)
    return Verdict(result.score, result.reason, result.canonical)


def _math_many(answers: list[str], completions: list[str]) -> list[Verdict]:
    from fade.verifiers.math_answer import default_math_verifier

    return [Verdict(r.score, r.reason, r.canonical) for r in default_math_verifier().score_many(completions, answers)]


def _code_many(answers: list[str], completions: list[str]) -> list[Verdict]:
    from fade.verifiers.code_exec import default_code_verifier

    return [Verdict(r.score, r.reason, r.canonical) for r in default_code_verifier().score_many(completions, answers)]


#: verifier name -> f(reference answer, completion) -> Verdict
VERIFIERS: dict[str, Callable[[str, str], Verdict]] = {
    "exact": _exact,
    "numeric": _numeric,
    "math": _math,
    "code": _code,
}

#: verifier name -> f(reference answers, completions) -> Verdicts, judged in parallel, for the
#: verifiers whose single calls are slow (a parser process, a sandboxed program).
BATCH_VERIFIERS: dict[str, Callable[[list[str], list[str]], list[Verdict]]] = {"math": _math_many, "code": _code_many}

# Fields that hold a programming problem's tests (fade.verifiers.testcases.TEST_FIELDS, and the
# function name of call-based tests), listed here so that reading a file imports nothing.
_TEST_FIELDS = ("tests", "public_test_cases", "private_test_cases", "public_tests", "private_tests", "generated_tests",
                "input_output", "metadata", "func_name", "fn_name")
# The room a program gets to be written in, when the answers are tests rather than text to copy.
CODE_ANSWER_CHARS = 2048


def register_verifier(
    name: str,
    fn: Callable[[str, str], Verdict],
    batch: Callable[[list[str], list[str]], list[Verdict]] | None = None,
) -> None:
    """Make ``fn`` available as ``--verifier name``; ``batch`` (answers, completions) -> verdicts
    judges many at once where that is faster, and must agree with ``fn``."""
    VERIFIERS[name] = fn
    BATCH_VERIFIERS.pop(name, None)
    if batch is not None:
        BATCH_VERIFIERS[name] = batch


class FileTask:
    """The problems of a JSON-lines file, with the interface of the built-in tasks."""

    def __init__(self, path: str | Path, *, verifier: str) -> None:
        if verifier not in VERIFIERS:
            raise ValueError(f"unknown verifier {verifier!r}; known: {', '.join(sorted(VERIFIERS))}")
        self.path = Path(path)
        if not self.path.is_file():
            raise ValueError(f"--data {self.path}: no such file")
        self.name = self.path.stem
        self._verify = VERIFIERS[verifier]
        self._verify_many = BATCH_VERIFIERS.get(verifier)
        self._splits: dict[str, list[Problem]] = {"train": [], "test": []}
        wanted = "'answer' or the tests" if verifier == "code" else "'answer'"
        expected = f"an object with string 'prompt' and {wanted}"
        for number, row in jsonl.records(self.path, torn="error", expected=expected):
            if verifier == "math" and type(row.get("answer")) in (int, float):
                row["answer"] = str(row["answer"])  # integer answers, as AIME sets store them
            if verifier == "code" and "answer" not in row:
                tests = {k: row[k] for k in _TEST_FIELDS if row.get(k) is not None}
                if tests:
                    row["answer"] = json.dumps(tests)
            if not isinstance(row.get("prompt"), str) or not isinstance(row.get("answer"), str):
                raise ValueError(f"{self.path}:{number}: expected {expected}")
            difficulty = row.get("difficulty", 1)
            if isinstance(difficulty, bool) or not isinstance(difficulty, int) or difficulty < 1:
                raise ValueError(f"{self.path}:{number}: difficulty must be a positive integer, got {difficulty!r}")
            split = row.get("split") or self._hash_split(row["prompt"])
            if split not in self._splits:
                raise ValueError(f"{self.path}:{number}: split must be 'train' or 'test', got {split!r}")
            pid = str(row.get("id", f"{self.name}/{number}"))
            self._splits[split].append(
                Problem(id=pid, prompt=row["prompt"], answer=row["answer"], difficulty=difficulty)
            )
        if not self._splits["train"]:
            raise ValueError(f"{self.path} has no training problems")
        everything = self._splits["train"] + self._splits["test"]
        self.difficulties = tuple(sorted({p.difficulty for p in everything}))
        self.max_prompt_chars = max(len(p.prompt) for p in everything)
        self.max_answer_chars = CODE_ANSWER_CHARS if verifier == "code" else max(len(p.answer) for p in everything)
        self.alphabet = "".join(sorted({c for p in everything for c in p.prompt + p.answer}))

    @staticmethod
    def _hash_split(prompt: str) -> str:
        h = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:8], "big") / 2**64
        return "test" if h < TEST_FRACTION else "train"

    def problems(
        self, split: str, n: int | None = None, seed: int = 0, difficulties: Sequence[int] | None = None
    ) -> list[Problem]:
        """The problems of ``split`` (within the buckets ``difficulties`` names, all by default): all of
        them with ``n=None``; else ``n`` drawn with ``seed``, distinct while the split holds ``n``."""
        if split not in self._splits:
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        pool = self._splits[split]
        if difficulties is not None:
            chosen = select_difficulties(self.name, self.difficulties, difficulties)
            pool = [p for p in pool if p.difficulty in chosen]
        if n is None:
            return list(pool)
        if not pool:
            return []
        rng = random.Random(f"{self.name}/{split}/{seed}")
        if n <= len(pool):
            return rng.sample(pool, n)
        return [pool[rng.randrange(len(pool))] for _ in range(n)]

    def verify(self, problem: Problem, completion: str) -> Verdict:
        return self._verify(problem.answer, completion)

    def verify_many(self, problems: list[Problem], completions: list[str]) -> list[Verdict]:
        """Judge each pair, in order; in parallel for the math and code verifiers."""
        if len(problems) != len(completions):
            raise ValueError(
                f"got {len(problems)} problems and {len(completions)} completions: expected as many of each"
            )
        if self._verify_many is None:
            return [self.verify(p, c) for p, c in zip(problems, completions)]
        return self._verify_many([p.answer for p in problems], list(completions))

    def sft_answer(self, problem: Problem, rng: random.Random) -> str:
        return problem.answer
