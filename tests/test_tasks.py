"""The testbed's tasks: problems, splits and verifiers.

Verifiers: known right, wrong, malformed and empty answers; countdown's number rule and its
normal form (commutative and associative variants share one, different solutions do not); no
text makes a verifier raise (property-based). Generators: a draw is a function of
(split, n, seed); train and test never share a problem, whatever the seed; draws are stratified
over the buckets; every problem is solvable and its reference answer verifies; difficulty is
graded the way each task documents it. Countdown's solver is checked against an independent
brute force over every expression tree.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fade.testbed.tasks import (
    MULTI_MIN_SOLUTIONS,
    REASONS,
    TASKS,
    TEST_FRACTION,
    ArithmeticTask,
    CountdownMultiTask,
    CountdownTask,
    Problem,
    Verdict,
    get_task,
)

ARITHMETIC = ArithmeticTask()
MIXED = ArithmeticTask(ops=("+", "*"))
COUNTDOWN = CountdownTask()
TASK_OBJECTS = {"arithmetic": ARITHMETIC, "arithmetic+*": MIXED, "countdown": COUNTDOWN}


def sum_problem(a: int, b: int) -> Problem:
    return Problem(f"arithmetic/{a}+{b}", f"{a}+{b}=", str(a + b), len(str(max(a, b))), (a, "+", b, 0))


def countdown_problem(numbers: tuple[int, ...], target: int) -> Problem:
    key = f"{','.join(map(str, sorted(numbers)))}>{target}"
    return Problem(f"countdown/{key}", f"{key}:", "", 1, (tuple(sorted(numbers)), target))


def assert_consistent(verdict: Verdict) -> None:
    assert verdict.reason in REASONS
    assert verdict.score == (1.0 if verdict.reason == "correct" else 0.0)
    assert (verdict.canonical is not None) == (verdict.reason == "correct")


# ----------------------------------------------------------------------------------------------
# Arithmetic verifier


@pytest.mark.parametrize(
    "completion, reason",
    [
        ("522", "correct"),
        (" 522\n", "correct"),
        ("523", "wrong"),
        ("52", "wrong"),
        ("5220", "wrong"),
        ("9" * 10_000, "wrong"),
        ("0522", "malformed"),
        ("+522", "malformed"),
        ("-522", "malformed"),
        ("522.0", "malformed"),
        ("52 2", "malformed"),
        ("522=", "malformed"),
        ("\uff15\uff12\uff12", "malformed"),  # full-width digits: str.isdigit would accept them
        ("\u0665\u0662\u0662", "malformed"),  # Arabic-Indic digits
        ("", "empty"),
        ("  \t\n", "empty"),
    ],
)
def test_arithmetic_verifier(completion, reason):
    verdict = ARITHMETIC.verify(sum_problem(37, 485), completion)
    assert verdict.reason == reason
    assert_consistent(verdict)
    if reason == "correct":
        assert verdict.canonical == "522"


def test_arithmetic_zero_answer_allows_a_single_zero_only():
    assert ARITHMETIC.verify(sum_problem(0, 0), "0").reason == "correct"
    assert ARITHMETIC.verify(sum_problem(0, 0), "00").reason == "malformed"


# ----------------------------------------------------------------------------------------------
# Countdown verifier

P22 = countdown_problem((3, 5, 7), 22)


@pytest.mark.parametrize(
    "completion, reason",
    [
        ("3*5+7", "correct"),
        (" 7+5*3 \n", "correct"),
        ("((5*3)+(7))", "correct"),
        ("3*5+7+3", "bad_numbers"),  # 3 used twice
        ("3*5+8", "bad_numbers"),  # 8 is not given
        ("3*5", "bad_numbers"),  # 7 unused: every number exactly once
        ("15+7", "bad_numbers"),
        ("0+3*5+7", "bad_numbers"),
        ("3+5+7", "wrong"),
        ("3*5*7", "wrong"),
        ("(3+5)*7", "wrong"),
        ("3**5+7", "malformed"),
        ("(((", "malformed"),
        ("1/2", "malformed"),
        ("3*5+7)", "malformed"),
        ("(3*5+7", "malformed"),
        ("()3*5+7", "malformed"),
        ("-3*5+7", "malformed"),  # no unary minus
        ("3*-5+7", "malformed"),
        ("03*5+7", "malformed"),  # leading zero
        ("3 * 5 + 7", "malformed"),  # whitespace only around the answer
        ("3*5+7=", "malformed"),
        ("3*5+7,", "malformed"),
        ("3\u00d75+7", "malformed"),  # multiplication sign
        ("\uff13*5+7", "malformed"),  # full-width digit
        ("3*5+7\x00", "malformed"),
        ("(" * 10_000, "malformed"),
        ("(" * 20 + "3*5+7" + ")" * 20, "correct"),
        ("(" * 40 + "3*5+7" + ")" * 40, "malformed"),  # longer than any answer could be
        ("1+" * 5_000 + "1", "malformed"),
        ("", "empty"),
        ("\n", "empty"),
    ],
)
def test_countdown_verifier(completion, reason):
    verdict = COUNTDOWN.verify(P22, completion)
    assert verdict.reason == reason
    assert_consistent(verdict)


def test_countdown_canonical_merges_commutative_and_associative_variants():
    variants = ["3*5+7", "7+3*5", "5*3+7", "7+5*3", "(3*5)+7", "((7)+(5*(3)))"]
    assert {COUNTDOWN.verify(P22, v).canonical for v in variants} == {"3*5+7"}

    p8 = countdown_problem((2, 3, 4, 9), 8)
    sums = ["9-2-3+4", "9-(2+3)+4", "4+9-3-2", "4-(3-(9-2))", "9+4-(2+3)"]
    verdicts = [COUNTDOWN.verify(p8, v) for v in sums]
    assert all(v.reason == "correct" for v in verdicts)
    assert {v.canonical for v in verdicts} == {"4+9-2-3"}

    # A difference that is a factor is turned to its non-negative orientation.
    p13 = countdown_problem((2, 3, 5, 9), 13)
    signs = ["9-(3-5)*2", "9+(5-3)*2", "(5-3)*2+9", "9-2*(3-5)"]
    assert len({COUNTDOWN.verify(p13, v).canonical for v in signs}) == 1
    p10 = countdown_problem((2, 3, 5, 7), 10)
    assert COUNTDOWN.verify(p10, "(3-5)*(2-7)").canonical == COUNTDOWN.verify(p10, "(5-3)*(7-2)").canonical


def test_countdown_canonical_separates_different_solutions():
    p10 = countdown_problem((1, 2, 3, 4), 10)
    solutions = ["1+2+3+4", "1*2*3+4", "3*4-2*1", "2*3+4*1"]
    verdicts = [COUNTDOWN.verify(p10, s) for s in solutions]
    assert all(v.reason == "correct" for v in verdicts)
    assert len({v.canonical for v in verdicts}) == len(solutions)
    # Distributivity is not applied (under the exactly-once rule the two sides use different
    # numbers, so the forms are compared across two problems).
    a = COUNTDOWN.verify(countdown_problem((2, 3, 5), 16), "2*(3+5)")
    b = COUNTDOWN.verify(countdown_problem((2, 2, 3, 5), 16), "2*3+2*5")
    assert a.reason == b.reason == "correct"
    assert (a.canonical, b.canonical) == ("(3+5)*2", "2*3+2*5")


# ----------------------------------------------------------------------------------------------
# Properties of the verifiers


def _tree(draw, numbers: list[int]):
    if len(numbers) == 1:
        return numbers[0]
    k = draw(st.integers(1, len(numbers) - 1))
    return (draw(st.sampled_from("+-*")), _tree(draw, numbers[:k]), _tree(draw, numbers[k:]))


@st.composite
def expression_trees(draw):
    """A random expression tree over one to four numbers from 1 to 99."""
    return _tree(draw, draw(st.lists(st.integers(1, 99), min_size=1, max_size=4)))


def evaluate(tree) -> int:
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    a, b = evaluate(left), evaluate(right)
    return a + b if op == "+" else a - b if op == "-" else a * b


def leaves(tree) -> tuple[int, ...]:
    return (tree,) if isinstance(tree, int) else leaves(tree[1]) + leaves(tree[2])


def render(tree) -> str:
    """Every operator below the root in parentheses: correct whatever the precedence."""
    if isinstance(tree, int):
        return str(tree)
    op, left, right = tree
    side = [render(t) if isinstance(t, int) else f"({render(t)})" for t in (left, right)]
    return side[0] + op + side[1]


def rewrite(draw, tree):
    """An equal expression up to commutativity and associativity of + and *."""
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    left, right = rewrite(draw, left), rewrite(draw, right)
    if op in "+*" and not isinstance(left, int) and left[0] == op and draw(st.booleans()):
        left, right = left[1], (op, left[2], right)  # (a op b) op c -> a op (b op c)
    if op in "+*" and draw(st.booleans()):
        left, right = right, left
    return (op, left, right)


@settings(max_examples=100, deadline=None)
@given(tree=expression_trees(), data=st.data())
def test_canonical_is_invariant_under_commuting_and_reassociating(tree, data):
    problem = countdown_problem(leaves(tree), evaluate(tree))
    first = COUNTDOWN.verify(problem, render(tree))
    other = COUNTDOWN.verify(problem, render(rewrite(data.draw, tree)))
    assert first.reason == other.reason == "correct"
    assert first.canonical == other.canonical


@settings(max_examples=100, deadline=None)
@given(tree=expression_trees())
def test_canonical_of_a_positive_answer_is_an_answer_with_the_same_canonical(tree):
    value = evaluate(tree)
    if value <= 0:
        return
    problem = countdown_problem(leaves(tree), value)
    canonical = COUNTDOWN.verify(problem, render(tree)).canonical
    again = COUNTDOWN.verify(problem, canonical)
    assert again.reason == "correct"
    assert again.canonical == canonical
    assert len(canonical) <= len(render(tree))  # the fewest parentheses


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(st.text(), st.text(alphabet="0123456789+-*() \n", max_size=80)),
    task=st.sampled_from(sorted(TASK_OBJECTS)),
)
def test_verifiers_never_raise(text, task):
    problem = sum_problem(37, 485) if task.startswith("arithmetic") else P22
    assert_consistent(TASK_OBJECTS[task].verify(problem, text))


# ----------------------------------------------------------------------------------------------
# Generators

FACTORIES = {
    "arithmetic": ArithmeticTask,
    "arithmetic+*": lambda: ArithmeticTask(ops=("*", "+")),
    "countdown": CountdownTask,
    "countdown_multi": CountdownMultiTask,
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_draw_is_a_function_of_split_n_and_seed(name):
    fresh, shared = FACTORIES[name](), TASK_OBJECTS.get(name) or FACTORIES[name]()
    for split in ("train", "test"):
        draw = fresh.problems(split, 60, seed=3)
        assert len(draw) == 60
        assert draw == shared.problems(split, 60, seed=3)
        assert draw != shared.problems(split, 60, seed=4)


def test_registry():
    assert TASKS == {"arithmetic": ArithmeticTask, "countdown": CountdownTask, "countdown_multi": CountdownMultiTask}
    assert isinstance(get_task("countdown"), CountdownTask)
    assert get_task("arithmetic", ops=("*", "+")).alphabet == "*+0123456789="
    with pytest.raises(ValueError, match="arithmetic, countdown, countdown_multi"):
        get_task("sudoku")


@pytest.mark.parametrize(
    "options",
    [{"ops": ()}, {"ops": ("-",)}, {"ops": ("+", "+")}, {"max_digits": 0}, {"max_digits": 10}, {"max_digits": True}],
)
def test_arithmetic_options_are_checked(options):
    with pytest.raises(ValueError):
        ArithmeticTask(**options)


def test_bad_draw_arguments():
    with pytest.raises(ValueError, match="split"):
        COUNTDOWN.problems("valid")
    for n in (-1, 1.5, True):
        with pytest.raises(ValueError, match="n must be"):
            COUNTDOWN.problems("train", n)
    with pytest.raises(ValueError, match="pass n"):
        ARITHMETIC.problems("test")


@pytest.fixture(scope="module")
def countdown_splits() -> tuple[list[Problem], list[Problem]]:
    return COUNTDOWN.problems("train"), COUNTDOWN.problems("test")


def test_countdown_splits_are_disjoint_and_cover_each_bucket_in_proportion(countdown_splits):
    train, test = countdown_splits
    assert not {p.id for p in train} & {p.id for p in test}
    assert not {p.prompt for p in train} & {p.prompt for p in test}
    assert len({p.id for p in train + test}) == len(train) + len(test)
    assert all(COUNTDOWN.split_of(p) == "train" for p in train)
    assert all(COUNTDOWN.split_of(p) == "test" for p in test)
    for d in COUNTDOWN.difficulties:
        n_test = sum(p.difficulty == d for p in test)
        n_all = n_test + sum(p.difficulty == d for p in train)
        assert TEST_FRACTION - 0.05 < n_test / n_all < TEST_FRACTION + 0.05


def test_arithmetic_splits_are_disjoint_whatever_the_seed():
    small = ArithmeticTask(max_digits=2)
    train, test = small.problems("train"), small.problems("test")
    assert len(train) + len(test) == 100 + 9900
    assert not {p.prompt for p in train} & {p.prompt for p in test}
    assert sum(p.difficulty == 1 for p in test) >= 10  # the 100 one-digit sums still get a test share
    # A sum and its mirror image share a split, so test sums are never trained on commuted.
    for p in test:
        a, _, b, _ = p.data
        assert small.split_of(sum_problem(b, a)) == "test"
    for seed in range(3):
        drawn_test = MIXED.problems("test", 800, seed=seed)
        drawn_train = MIXED.problems("train", 800, seed=seed)
        assert all(MIXED.split_of(p) == "test" for p in drawn_test)
        assert all(MIXED.split_of(p) == "train" for p in drawn_train)
        assert not {p.prompt for p in drawn_train} & {p.prompt for p in drawn_test}


@pytest.mark.parametrize("name", sorted(TASK_OBJECTS))
def test_draws_are_stratified_with_the_remainder_in_the_lowest_buckets(name):
    task = TASK_OBJECTS[name]
    assert task.difficulties == (1, 2, 3, 4)
    assert Counter(p.difficulty for p in task.problems("train", 10, seed=1)) == {1: 3, 2: 3, 3: 2, 4: 2}
    assert Counter(p.difficulty for p in task.problems("test", 100, seed=1)) == {1: 25, 2: 25, 3: 25, 4: 25}
    assert [p.difficulty for p in task.problems("test", 1)] == [1]
    assert task.problems("test", 0) == []
    assert len({p.difficulty for p in task.problems("train", 12, seed=2)[:6]}) > 1  # shuffled


@pytest.mark.parametrize("name", sorted(TASK_OBJECTS))
def test_a_draw_within_difficulties_is_stratified_over_those_buckets_alone(name):
    task = TASK_OBJECTS[name]
    assert Counter(p.difficulty for p in task.problems("train", 10, seed=1, difficulties=[2, 4])) == {2: 5, 4: 5}
    assert Counter(p.difficulty for p in task.problems("test", 7, seed=1, difficulties=(3,))) == {3: 7}
    # every bucket named is the draw without a selection, seed for seed
    assert task.problems("train", 10, seed=1, difficulties=[1, 2, 3, 4]) == task.problems("train", 10, seed=1)
    assert task.problems("train", 10, seed=1, difficulties=[4, 2, 2]) == task.problems("train", 10, seed=1,
                                                                                       difficulties=[2, 4])
    if name == "countdown":
        whole = task.problems("test", difficulties=[1])
        assert whole and {p.difficulty for p in whole} == {1}


@pytest.mark.parametrize("bad", [[5], [0, 1], [], "2", [True], [2.0]])
def test_difficulties_outside_the_tasks_buckets_are_refused_naming_them(bad):
    with pytest.raises(ValueError, match=r"difficulties must be buckets of task 'countdown' \(1, 2, 3, 4\), got "):
        COUNTDOWN.problems("train", 4, difficulties=bad)


def test_duplicates_only_once_a_bucket_is_exhausted():
    assert len({p.id for p in COUNTDOWN.problems("test", 400, seed=5)}) == 400
    drawn = ARITHMETIC.problems("train", 2000, seed=5)
    one_digit = Counter(p.id for p in drawn if p.difficulty == 1)
    assert set(one_digit) == {p.id for p in ArithmeticTask(max_digits=1).problems("train")}
    assert max(one_digit.values()) - min(one_digit.values()) <= 1
    assert len({p.id for p in drawn if p.difficulty > 1}) == 1500


@pytest.mark.parametrize("name", sorted(TASK_OBJECTS))
def test_reference_answers_verify_and_fit_the_declared_sizes(name, countdown_splits):
    task = TASK_OBJECTS[name]
    if name == "countdown":
        train, test = countdown_splits
        problems = test + random.Random(0).sample(train, 3000)
    else:
        problems = task.problems("train", 400) + task.problems("test", 400)
    assert task.alphabet == "".join(sorted(set(task.alphabet)))
    used = set()
    for p in problems:
        verdict = task.verify(p, p.answer)
        assert verdict.reason == "correct", (p, verdict)
        assert len(p.prompt) <= task.max_prompt_chars
        assert len(p.answer) <= task.max_answer_chars
        assert p.prompt.endswith(":" if name == "countdown" else "=")
        assert p.id == f"{task.name}/{p.prompt[:-1]}"
        used |= set(p.prompt + p.answer)
    assert used == set(task.alphabet)
    assert max(len(p.prompt) for p in problems) == task.max_prompt_chars


def carries_by_formula(a: int, op: str, b: int) -> int:
    """Column i carries out exactly when the numbers cut to their lowest i+1 digits overflow them."""

    def overflows(numbers, i, factor=1):
        return sum(x % 10 ** (i + 1) for x in numbers) * factor >= 10 ** (i + 1)

    if op == "+":
        return sum(overflows([a, b], i) for i in range(len(str(a + b))))
    top, bottom = max(a, b), min(a, b)
    digits = [int(c) for c in reversed(str(bottom))]
    rows = sum(overflows([top], i, y) for y in digits for i in range(len(str(top))))
    partials = [top * y * 10**j for j, y in enumerate(digits)]
    return rows + sum(overflows(partials, i) for i in range(len(str(a * b)) + 1))


def test_carries_formula_on_known_sums_and_products():
    assert carries_by_formula(37, "+", 485) == 2
    assert carries_by_formula(999, "+", 1) == 3
    assert carries_by_formula(0, "+", 0) == 0
    assert carries_by_formula(12, "*", 34) == 1  # 34*2, 34*1 carry-free; 68+340 carries once
    assert carries_by_formula(99, "*", 99) == 6  # two per row, then 891+8910 carries twice


def test_arithmetic_difficulty_is_the_digits_of_the_larger_operand():
    problems = MIXED.problems("train", 2000, seed=9) + MIXED.problems("test", 400, seed=9)
    for p in problems:
        a, op, b, carries = p.data
        assert p.difficulty == max(len(str(a)), len(str(b)))
        assert p.prompt == f"{a}{op}{b}="
        assert p.answer == str(a + b if op == "+" else a * b)
        assert carries == carries_by_formula(a, op, b)
    assert {p.data[1] for p in problems} == {"+", "*"}
    # Shorter second operands and carries both vary within a bucket.
    four = [p for p in problems if p.difficulty == 4]
    assert min(len(str(min(p.data[0], p.data[2]))) for p in four) < 4
    assert len({p.data[3] for p in four if p.data[1] == "+"}) >= 4


# ----------------------------------------------------------------------------------------------
# Countdown: buckets, solver and supervised answers

BUCKETS = {1: (3, 1, 20), 2: (3, 21, 99), 3: (4, 1, 20), 4: (4, 21, 99)}


def all_trees(numbers: tuple[int, ...]):
    """Every expression tree: each order of the numbers, each shape, each operator."""

    def shapes(seq):
        if len(seq) == 1:
            yield seq[0]
            return
        for k in range(1, len(seq)):
            for left in shapes(seq[:k]):
                for right in shapes(seq[k:]):
                    for op in "+-*":
                        yield (op, left, right)

    for order in itertools.permutations(numbers):
        yield from shapes(order)


def test_countdown_problems_follow_the_bucket_table_and_list_every_reachable_target(countdown_splits):
    problems = countdown_splits[0] + countdown_splits[1]
    by_numbers: dict[tuple[int, ...], set[int]] = {}
    for p in problems:
        numbers, target = p.data
        count, low, high = BUCKETS[p.difficulty]
        assert len(numbers) == count and low <= target <= high
        assert list(numbers) == sorted(numbers) and all(1 <= x <= 9 for x in numbers)
        assert p.prompt == f"{','.join(map(str, numbers))}>{target}:"
        by_numbers.setdefault(numbers, set()).add(target)
    rng = random.Random(0)
    for numbers in rng.sample(sorted(by_numbers), 12):
        reachable = {evaluate(t) for t in all_trees(numbers)}
        assert by_numbers[numbers] == {v for v in reachable if 1 <= v <= 99}


def test_countdown_solutions_match_a_brute_force_over_every_tree():
    for p in COUNTDOWN.problems("test", 8, seed=2):
        numbers, target = p.data
        found = {COUNTDOWN.verify(p, render(t)).canonical for t in all_trees(numbers) if evaluate(t) == target}
        assert found == set(COUNTDOWN.solutions(p))


def test_random_guessing_gets_harder_bucket_by_bucket():
    hit_rate = {}
    for d in COUNTDOWN.difficulties:
        rates = []
        for p in [q for q in COUNTDOWN.problems("test", 80, seed=0) if q.difficulty == d]:
            numbers, target = p.data
            values = [evaluate(t) for t in all_trees(numbers)]
            rates.append(values.count(target) / len(values))
        hit_rate[d] = sum(rates) / len(rates)
    assert hit_rate[1] > hit_rate[2] > hit_rate[3] > hit_rate[4] > 0


def test_sft_answers_are_correct_distinct_solutions_drawn_at_random():
    rng = random.Random(0)
    varied = 0
    for p in COUNTDOWN.problems("train", 200, seed=0):
        solutions = COUNTDOWN.solutions(p)
        assert solutions and p.answer in solutions
        for s in solutions:
            verdict = COUNTDOWN.verify(p, s)
            assert verdict.reason == "correct" and verdict.canonical == s
            assert len(s) <= COUNTDOWN.max_answer_chars
        answers = {COUNTDOWN.sft_answer(p, rng) for _ in range(4 * len(solutions) + 8)}
        assert answers <= set(solutions)
        varied += len(answers) > 1
    assert varied > 20
    p = sum_problem(37, 485)
    assert ARITHMETIC.sft_answer(p, rng) == "522"


@pytest.mark.parametrize("name", ["arithmetic", "countdown", "countdown_multi"])
def test_verify_many_is_verify_in_order(name):
    task = get_task(name)
    problems = task.problems("test", n=6, seed=3)
    texts = [p.answer for p in problems[:3]] + ["", "1+", "999"]
    assert task.verify_many(problems, texts) == [task.verify(p, t) for p, t in zip(problems, texts)]
    with pytest.raises(ValueError, match="as many of each"):
        task.verify_many(problems, texts[:5])


def test_countdown_multi_is_countdown_with_several_solutions_in_countdowns_split():
    multi = CountdownMultiTask()
    assert multi.base == "countdown" and COUNTDOWN.base is None
    for split in ("train", "test"):
        drawn = multi.problems(split, n=80, seed=1)
        assert Counter(p.difficulty for p in drawn) == {1: 20, 2: 20, 3: 20, 4: 20}
        for p in drawn:
            numbers, target = p.data
            solutions = multi.solutions(p)
            assert len(solutions) >= MULTI_MIN_SOLUTIONS and 1 <= target <= 99
            assert len(numbers) == (3 if p.difficulty == 1 else 4)
            assert {2: len(solutions) >= 4, 3: len(solutions) == 3, 4: len(solutions) == 2}.get(p.difficulty, True)
            # the same problem in countdown: same prompt, same split, same verdicts
            twin = COUNTDOWN._problem(numbers, target, 0)
            assert twin.prompt == p.prompt and COUNTDOWN.split_of(twin) == split
            assert multi.verify(p, p.answer).score == 1.0
            assert {multi.verify(p, s).canonical for s in solutions} == set(solutions)
