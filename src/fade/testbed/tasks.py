"""Tasks with verifiable answers and graded difficulty: the problems the testbed trains and
evaluates a policy on, and the verifiers that turn a completion into a reward. A task lists its
problems in difficulty buckets and splits them into train and test by a stable hash of each
problem's key, so the split never depends on a seed and the two sides are disjoint by
construction; the seed only chooses which problems a draw returns. Two tasks are built in:
multi-digit arithmetic (one correct answer per problem) and countdown (often several correct
expressions per problem, told apart by a normal form, so distinct correct answers can be
counted). Verifiers never raise: any text gets a score of 0 or 1 and a reason from ``REASONS``.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from .expressions import EXPRESSION_CHARS, Malformed, Parser, canonical, reachable, solutions, witness

__all__ = [
    "REASONS",
    "SPLITS",
    "TASKS",
    "TEST_FRACTION",
    "ArithmeticTask",
    "CountdownTask",
    "Problem",
    "Task",
    "Verdict",
    "get_task",
    "select_difficulties",
]

SPLITS = ("train", "test")

#: Share of each bucket's keys (by hash) that belong to the test split.
TEST_FRACTION = 0.2

#: Every reason a verifier may give, and what it means.
REASONS: dict[str, str] = {
    "correct": "the answer is right",
    "wrong": "a well-formed answer with the wrong value",
    "malformed": "not a well-formed answer (characters outside the answer syntax, a syntax error, "
    "a leading zero, or longer than any answer could be)",
    "empty": "nothing but whitespace",
    "bad_numbers": "countdown: a well-formed expression that does not use the given numbers exactly once each",
}

# Buckets this small (in problems) are listed and shuffled; larger ones are sampled by rejection.
_LIST_LIMIT = 20_000

# Countdown completions longer than this are not parsed: no answer comes close, and it bounds the
# parser's recursion depth on inputs such as "((((...".
_MAX_EXPRESSION_CHARS = 64


@dataclass(frozen=True)
class Problem:
    """One problem: the prompt the policy is conditioned on and a reference answer."""

    id: str
    prompt: str
    answer: str
    difficulty: int
    data: tuple = ()


@dataclass(frozen=True)
class Verdict:
    """A verifier's judgement: ``score`` 1.0 or 0.0, a ``reason`` from ``REASONS``, and the
    normal form of a correct answer (``None`` otherwise), so that equal answers can be counted once."""

    score: float
    reason: str
    canonical: str | None = None


def _verdict(reason: str, canonical: str | None = None) -> Verdict:
    return Verdict(1.0 if reason == "correct" else 0.0, reason, canonical)


def select_difficulties(task: str, buckets: Sequence[int], wanted: Sequence[int] | None) -> tuple[int, ...]:
    """The buckets of ``task`` (its ``buckets``, in their order) that ``wanted`` names, all of them for
    None; ValueError naming the value and the task's buckets where ``wanted`` is empty or names another."""
    if wanted is None:
        return tuple(buckets)
    if isinstance(wanted, (str, bytes)) or not isinstance(wanted, Sequence) or not wanted or any(
        isinstance(d, bool) or not isinstance(d, int) or d not in buckets for d in wanted
    ):
        raise ValueError(f"difficulties must be buckets of task {task!r} ({', '.join(map(str, buckets))}), "
                         f"got {wanted!r}")
    return tuple(d for d in buckets if d in wanted)


def _hash_unit(text: str) -> float:
    """A stable map of ``text`` to [0, 1): the same in every process, unlike ``hash``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


class Task(ABC):
    """A family of problems with a verifier.

    Subclasses set the class or instance attributes below and implement ``verify``,
    ``sft_answer``, ``_split_key`` (the text whose hash places a problem in a split; problems
    that differ only in presentation share it, so they land on the same side), ``_bucket`` (the
    problems of one bucket in one split, in a fixed order, as the arguments of ``_problem``) and
    ``_problem``. Only the problems a draw returns are built.
    """

    name: str
    alphabet: str  # every character a prompt or answer may contain, sorted, no duplicates
    difficulties: tuple[int, ...]
    max_prompt_chars: int
    max_answer_chars: int
    #: A task this one is a subset of (None: itself). A subset shares the parent's prompts,
    #: verifier, train/test split and shipped base policy, so its test problems are never among
    #: the problems the base policy was pretrained on.
    base: str | None = None

    def __init__(self) -> None:
        self._pools: dict[tuple[str, int], list[tuple]] = {}

    def problems(
        self, split: str, n: int | None = None, seed: int = 0, difficulties: Sequence[int] | None = None
    ) -> list[Problem]:
        """Problems of ``split`` ("train" or "test"), of the buckets ``difficulties`` names (default:
        all of them; see :func:`select_difficulties`).

        With ``n=None``, the whole split in a fixed order (bucket by bucket; ``seed`` has no
        effect), or ``ValueError`` where a bucket is too large to list. With ``n``, a seeded draw
        of ``n`` problems stratified over the buckets: ``n // B`` from each of the ``B`` buckets
        and one more from each of the lowest ``n % B``, without duplicates unless a bucket's split
        holds fewer problems than asked for (then every problem of it is drawn before any repeats),
        shuffled so that any prefix mixes the buckets.
        """
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        chosen = select_difficulties(self.name, self.difficulties, difficulties)
        if n is None:
            too_large = [d for d in chosen if not self._listable(d)]
            if too_large:
                raise ValueError(
                    f"the {split} split of {self.name!r} is too large to list (difficulties {too_large}); "
                    "pass n to draw problems from it"
                )
            return [self._problem(*args) for d in chosen for args in self._pool(split, d)]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be None or a non-negative integer, got {n!r}")
        rng = random.Random(f"{self.name}/{split}/{seed}")
        buckets = len(chosen)
        drawn: list[Problem] = []
        for i, d in enumerate(chosen):
            drawn += self._draw(split, d, n // buckets + (i < n % buckets), rng)
        rng.shuffle(drawn)
        return drawn

    def split_of(self, problem: Problem) -> str:
        """The split of ``problem``: "test" where the hash of its key falls in the lowest
        ``TEST_FRACTION`` of the hash range, whatever the seed of any draw."""
        return "test" if self._in_split(self._split_key(problem), "test") else "train"

    def _in_split(self, key: str, split: str) -> bool:
        return (_hash_unit(f"{self.base or self.name}/{key}") < TEST_FRACTION) == (split == "test")

    @abstractmethod
    def verify(self, problem: Problem, completion: str) -> Verdict:
        """Judge ``completion``, the text generated after the prompt up to the end token."""

    def verify_many(self, problems: list[Problem], completions: list[str]) -> list[Verdict]:
        """Judge each ``(problem, completion)`` pair, in order. Verifiers that run programs or
        call out to a parser override this to judge in parallel; the verdicts are the same."""
        if len(problems) != len(completions):
            raise ValueError(
                f"got {len(problems)} problems and {len(completions)} completions: expected as many of each"
            )
        return [self.verify(p, c) for p, c in zip(problems, completions)]

    @abstractmethod
    def sft_answer(self, problem: Problem, rng: random.Random) -> str:
        """An answer to train on in supervised pretraining."""

    @abstractmethod
    def _bucket(self, difficulty: int, split: str) -> list[tuple]:
        """Every problem of one bucket in one split, in a fixed order, as arguments of ``_problem``."""

    @abstractmethod
    def _problem(self, *args) -> Problem:
        """The problem that ``args`` from ``_bucket`` describe."""

    @abstractmethod
    def _split_key(self, problem: Problem) -> str:
        """The text whose hash decides the split of ``problem``."""

    def _listable(self, difficulty: int) -> bool:
        """Whether the bucket is small enough to hold in memory; a task overrides ``_draw`` for
        the buckets that are not."""
        return True

    def _pool(self, split: str, difficulty: int) -> list[tuple]:
        key = (split, difficulty)
        if key not in self._pools:
            self._pools[key] = self._bucket(difficulty, split)
        return self._pools[key]

    def _draw(self, split: str, difficulty: int, k: int, rng: random.Random) -> list[Problem]:
        pool = self._pool(split, difficulty)
        if k and not pool:
            raise ValueError(f"the {split} split of {self.name!r} has no problems of difficulty {difficulty}")
        drawn: list[tuple] = []
        while k - len(drawn) >= len(pool) > 0:
            drawn += rng.sample(pool, len(pool))
        return [self._problem(*args) for args in drawn + rng.sample(pool, k - len(drawn))]


# --------------------------------------------------------------------------------------------
# Arithmetic


_ARITHMETIC_OPS = ("*", "+")


def _apply(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a * b


def _column_carries(numbers: list[int]) -> int:
    """Columns with a non-zero carry out when ``numbers`` are added digit by digit."""
    carries, carry, place = 0, 0, 1
    while carry or any(x >= place for x in numbers):
        carry = (sum(x // place % 10 for x in numbers) + carry) // 10
        carries += carry > 0
        place *= 10
    return carries


def _carries(a: int, op: str, b: int) -> int:
    """Carries in the schoolbook method: column carries for ``+``; for ``*``, the carries of each
    row (larger operand times one digit of the smaller) plus the column carries adding the rows."""
    if op == "+":
        return _column_carries([a, b])
    top, bottom = max(a, b), min(a, b)
    carries, rows = 0, []
    for place, y in enumerate(int(c) for c in reversed(str(bottom))):
        carry = 0
        for x in (int(c) for c in reversed(str(top))):
            carry = (x * y + carry) // 10
            carries += carry > 0
        rows.append(top * y * 10**place)
    return carries + _column_carries(rows)


class ArithmeticTask(Task):
    """Addition (and, as an option, multiplication) of two non-negative integers.

    A problem is ``37+485=`` with answer ``522``. Difficulty ``d`` (1 to ``max_digits``) is the
    number of digits of the larger operand: both operands are drawn uniformly from ``[0, 10**d)``
    conditioned on the larger one having exactly ``d`` digits (the smaller may be shorter, or
    0). Carries do not move a problem between buckets: their count is ``data[3]`` (``data`` is
    ``(a, op, b, carries)``), for slicing results by it. ``a+b`` and ``b+a`` are distinct problems
    that share a split key, so a test problem's mirror image is never trained on. Buckets of at
    most 20,000 problems (1 and 2 digits) are listed; so the whole split is listable with
    ``max_digits <= 2`` only. The verifier wants the decimal digits of the result, surrounding
    whitespace allowed, no sign, no leading zero.
    """

    name = "arithmetic"

    def __init__(self, ops: tuple[str, ...] = ("+",), max_digits: int = 4) -> None:
        super().__init__()
        ops = tuple(ops)
        if not ops or len(set(ops)) != len(ops) or any(op not in _ARITHMETIC_OPS for op in ops):
            raise ValueError(f"ops must be distinct operators from {_ARITHMETIC_OPS}, got {ops!r}")
        if isinstance(max_digits, bool) or not isinstance(max_digits, int) or not 1 <= max_digits <= 9:
            raise ValueError(f"max_digits must be an integer from 1 to 9, got {max_digits!r}")
        self.ops = tuple(sorted(ops))
        self.max_digits = max_digits
        self.difficulties = tuple(range(1, max_digits + 1))
        self.alphabet = "".join(sorted(set("0123456789=") | set(ops)))
        self.max_prompt_chars = 2 * max_digits + 2
        self.max_answer_chars = 2 * max_digits if "*" in ops else max_digits + 1

    def verify(self, problem: Problem, completion: str) -> Verdict:
        text = completion.strip()
        if not text:
            return _verdict("empty")
        if any(c not in "0123456789" for c in text) or (len(text) > 1 and text[0] == "0"):
            return _verdict("malformed")
        if text != problem.answer:
            return _verdict("wrong")
        return _verdict("correct", text)

    def sft_answer(self, problem: Problem, rng: random.Random) -> str:
        return problem.answer

    def _problem(self, a: int, op: str, b: int) -> Problem:
        return Problem(
            id=f"{self.name}/{a}{op}{b}",
            prompt=f"{a}{op}{b}=",
            answer=str(_apply(a, op, b)),
            difficulty=len(str(max(a, b))),
            data=(a, op, b, _carries(a, op, b)),
        )

    def _split_key(self, problem: Problem) -> str:
        return self._key(*problem.data[:3])

    @staticmethod
    def _key(a: int, op: str, b: int) -> str:
        return f"{min(a, b)}{op}{max(a, b)}"

    def _bounds(self, difficulty: int) -> tuple[int, int]:
        return (10 ** (difficulty - 1) if difficulty > 1 else 0), 10**difficulty

    def _listable(self, difficulty: int) -> bool:
        low, high = self._bounds(difficulty)
        return (high**2 - low**2) * len(self.ops) <= _LIST_LIMIT

    def _bucket(self, difficulty: int, split: str) -> list[tuple]:
        low, high = self._bounds(difficulty)
        return [
            (a, op, b)
            for op in self.ops
            for a in range(high)
            for b in range(high)
            if max(a, b) >= low and self._in_split(self._key(a, op, b), split)
        ]

    def _draw(self, split: str, difficulty: int, k: int, rng: random.Random) -> list[Problem]:
        if self._listable(difficulty):
            return super()._draw(split, difficulty, k, rng)
        low, high = self._bounds(difficulty)
        drawn: dict[str, Problem] = {}
        # The bucket holds about a million problems or more here, so misses are rare unless k
        # nears the split's size; the cap turns that into an error instead of an endless loop.
        for _ in range(100 * k + 1000):
            if len(drawn) == k:
                break
            a, op, b = rng.randrange(high), rng.choice(self.ops), rng.randrange(high)
            if max(a, b) < low or f"{self.name}/{a}{op}{b}" in drawn:
                continue
            if self._in_split(self._key(a, op, b), split):
                drawn[f"{self.name}/{a}{op}{b}"] = self._problem(a, op, b)
        if len(drawn) < k:
            raise ValueError(f"could not draw {k} distinct {split} problems of difficulty {difficulty}: ask for fewer")
        return list(drawn.values())


# difficulty -> (how many numbers, lowest target, highest target)
_COUNTDOWN_BUCKETS = {1: (3, 1, 20), 2: (3, 21, 99), 3: (4, 1, 20), 4: (4, 21, 99)}


class CountdownTask(Task):
    """Reach a target with ``+``, ``-``, ``*`` and parentheses, using each given number exactly once.

    A problem is ``3,5,7>22:`` (the numbers in ascending order, ``>``, the target, ``:``) and one
    answer is ``3*5+7``. The numbers are 1 to 9, repeats allowed; the target is any value from 1
    to 99 that the numbers reach, so every problem is solvable, and integer intermediate results
    may be negative or zero. Difficulty: 1 is three numbers and a target up to 20, 2 three numbers
    and a target from 21 to 99, 3 four numbers up to 20, 4 four numbers from 21 to 99; the share
    of uniformly random expressions (random order, tree and operators) that hit the target falls
    from about 7% in bucket 1 to under 1% in bucket 4. Answers that are equal up to
    commutativity and associativity of ``+`` and ``*`` share one ``canonical`` form (see
    :class:`~fade.testbed.expressions.Form`); under that identification the mean number of
    distinct solutions per problem is about 1.2, 1.0, 2.7 and 1.6 in buckets 1 to 4 (up to 14 in
    bucket 3), and ``solutions`` lists them. The verifier allows surrounding whitespace, not whitespace inside.
    """

    name = "countdown"
    alphabet = "".join(sorted(set("0123456789+-*()") | set(",>:")))
    difficulties = tuple(_COUNTDOWN_BUCKETS)
    max_prompt_chars = len("9,9,9,9>99:")
    # Four one-digit numbers, three operators and at most two pairs of parentheses (a pair wraps
    # a non-root operator, and four numbers have two of those): every answer this task writes
    # has the fewest parentheses.
    max_answer_chars = 4 + 3 + 4

    def verify(self, problem: Problem, completion: str) -> Verdict:
        numbers, target = problem.data
        text = completion.strip()
        if not text:
            return _verdict("empty")
        if len(text) > _MAX_EXPRESSION_CHARS or not set(text) <= EXPRESSION_CHARS:
            return _verdict("malformed")
        parser = Parser(text)
        try:
            form = parser.parse()
        except Malformed:
            return _verdict("malformed")
        if sorted(parser.numbers) != sorted(numbers):
            return _verdict("bad_numbers")
        if form.value != target:
            return _verdict("wrong")
        return _verdict("correct", canonical(form))

    def sft_answer(self, problem: Problem, rng: random.Random) -> str:
        """A correct answer drawn uniformly from the problem's distinct normal forms."""
        return rng.choice(self.solutions(problem))

    def solutions(self, problem: Problem) -> tuple[str, ...]:
        """Every distinct correct answer (in normal form, sorted), for measuring coverage."""
        numbers, target = problem.data
        return solutions(tuple(sorted(numbers)), target)

    def _problem(self, numbers: tuple[int, ...], target: int, difficulty: int) -> Problem:
        key = self._key(numbers, target)
        return Problem(
            id=f"{self.name}/{key}",
            prompt=f"{key}:",
            answer=canonical(witness(numbers, target)),
            difficulty=difficulty,
            data=(numbers, target),
        )

    def _split_key(self, problem: Problem) -> str:
        return self._key(*problem.data)

    @staticmethod
    def _key(numbers: tuple[int, ...], target: int) -> str:
        return f"{','.join(map(str, sorted(numbers)))}>{target}"

    def _bucket(self, difficulty: int, split: str) -> list[tuple]:
        count, low, high = _COUNTDOWN_BUCKETS[difficulty]
        return self._select(difficulty, split, count, lambda numbers, target: low <= target <= high)

    def _select(self, difficulty: int, split: str, count: int, keep) -> list[tuple]:
        """Every (numbers, target) of ``split`` with ``count`` numbers 1-9 and a reachable target
        for which ``keep(numbers, target)`` holds, in a fixed order, as ``_problem`` arguments."""
        return [
            (numbers, target, difficulty)
            for numbers in itertools.combinations_with_replacement(range(1, 10), count)
            for target in sorted(reachable(numbers))
            if keep(numbers, target) and self._in_split(self._key(numbers, target), split)
        ]


#: countdown_multi's problems have at least this many distinct solutions (normal forms).
MULTI_MIN_SOLUTIONS = 2
#: countdown_multi's difficulty buckets: (how many numbers, fewest and most distinct solutions).
#: Fewer solutions make a problem harder to hit by sampling; three numbers are the easy end.
_MULTI_BUCKETS = {1: (3, 2, 99), 2: (4, 4, 99), 3: (4, 3, 3), 4: (4, 2, 2)}


class CountdownMultiTask(CountdownTask):
    """Countdown problems (targets 1 to 99) that have several distinct solutions.

    The calibrated regime of the experiments: every problem has at least
    ``MULTI_MIN_SOLUTIONS`` answers that differ beyond commutativity and associativity, so
    diversity, pass@k and distinct-answer counts mean something. Buckets: 1, three numbers; 2,
    four numbers with four or more solutions; 3, four numbers with three; 4, four numbers with
    exactly two. It is a subset of ``countdown`` (same prompts, verifier and split), so
    countdown's shipped base policy serves it and never saw its test problems;
    ``fade calibrate --task countdown_multi`` measures that policy's solve rates on it.
    """

    name = "countdown_multi"
    base = "countdown"
    difficulties = tuple(_MULTI_BUCKETS)

    def _bucket(self, difficulty: int, split: str) -> list[tuple]:
        count, fewest, most = _MULTI_BUCKETS[difficulty]
        return self._select(
            difficulty, split, count,
            lambda numbers, target: 1 <= target <= 99 and fewest <= len(solutions(numbers, target)) <= most,
        )


TASKS: dict[str, type[Task]] = {
    "arithmetic": ArithmeticTask, "countdown": CountdownTask, "countdown_multi": CountdownMultiTask,
}


def get_task(name: str, **options) -> Task:
    """The task registered as ``name``, built with ``options`` (e.g. ``ops=("+", "*")`` for arithmetic)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name](**options)
