"""Countdown's expression algebra: a normal form, a parser and a solver.

Expressions over ``+``, ``-``, ``*`` and parentheses get one normal form (:class:`Form`) up to
commutativity and associativity of ``+`` and ``*``, so answers that differ only in order or
grouping share one ``canonical`` text and distinct correct answers can be counted. :class:`Parser`
reads an expression into its form and records the numbers it uses (it raises :class:`Malformed`);
:func:`reachable`, :func:`witness` and :func:`solutions` enumerate what a multiset of numbers
reaches. :class:`~fade.testbed.tasks.CountdownTask` verifies and writes answers with these.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import NamedTuple

__all__ = ["EXPRESSION_CHARS", "Form", "Malformed", "Parser", "canonical", "reachable", "solutions", "witness"]



class Form(NamedTuple):
    """An expression in normal form: sums flattened into sorted lists of added and subtracted
    terms, products into sorted lists of factors, and every difference that is a factor turned
    to the orientation with non-negative value (``(3-5)*2`` is ``-(5-3)*2``), its sign kept on
    the product. So forms are equal exactly when the expressions are equal up to commutativity
    and associativity of ``+`` and ``*`` and the rewriting of subtraction (``a-(b-c)`` is
    ``a+c-b``); distributivity is not applied, so ``3*(5+7)`` and ``3*5+3*7`` stay apart."""

    value: int
    kind: str  # "n" number, "+" sum, "*" product
    text: str  # canonical text; a product's leaves out its sign
    sign: int = 1  # a product's sign
    pos: tuple[str, ...] = ()  # a sum's added terms, a product's factors
    neg: tuple[str, ...] = ()  # a sum's subtracted terms


def _leaf(number: int) -> Form:
    return Form(number, "n", str(number))


def _sum_text(pos: tuple[str, ...], neg: tuple[str, ...]) -> str:
    return "+".join(pos) + "".join("-" + t for t in neg)


def _terms(f: Form) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if f.kind == "+":
        return f.pos, f.neg
    if f.kind == "*" and f.sign < 0:
        return (), (f.text,)
    return (f.text,), ()


def _sum(value: int, pos: tuple[str, ...], neg: tuple[str, ...]) -> Form:
    pos, neg = tuple(sorted(pos)), tuple(sorted(neg))
    return Form(value, "+", _sum_text(pos, neg), 1, pos, neg)


def _add(a: Form, b: Form) -> Form:
    (pa, na), (pb, nb) = _terms(a), _terms(b)
    return _sum(a.value + b.value, pa + pb, na + nb)


def _sub(a: Form, b: Form) -> Form:
    (pa, na), (pb, nb) = _terms(a), _terms(b)
    return _sum(a.value - b.value, pa + nb, na + pb)


def _factors(f: Form) -> tuple[int, tuple[str, ...]]:
    if f.kind == "*":
        return f.sign, f.pos
    if f.kind == "+":
        flipped = _sum_text(f.neg, f.pos)
        if f.value < 0 or (f.value == 0 and flipped < f.text):
            return -1, (f"({flipped})",)
        return 1, (f"({f.text})",)
    return 1, (f.text,)


def _mul(a: Form, b: Form) -> Form:
    (sa, fa), (sb, fb) = _factors(a), _factors(b)
    factors = tuple(sorted(fa + fb))
    return Form(a.value * b.value, "*", "*".join(factors), sa * sb, factors)


def canonical(f: Form) -> str:
    """The normal form as text. For a positive value with positive numbers it is itself a valid
    answer with the fewest parentheses; a negative product is marked with a leading ``-``."""
    return "-" + f.text if f.kind == "*" and f.sign < 0 else f.text


class Malformed(Exception):
    pass


class Parser:
    """Recursive descent over ``expression := term (("+" | "-") term)*``,
    ``term := factor ("*" factor)*``, ``factor := number | "(" expression ")"``, building the
    normal form and recording the numbers used. Numbers are decimal without leading zeros."""

    def __init__(self, text: str) -> None:
        self.tokens = re.findall(r"[0-9]+|.", text)
        self.at = 0
        self.numbers: list[int] = []

    def parse(self) -> Form:
        form = self.expression()
        if self.at != len(self.tokens):
            raise Malformed(f"unexpected {self.tokens[self.at]!r}")
        return form

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def expression(self) -> Form:
        form = self.term()
        while self.peek() in ("+", "-"):
            op = self.tokens[self.at]
            self.at += 1
            form = (_add if op == "+" else _sub)(form, self.term())
        return form

    def term(self) -> Form:
        form = self.factor()
        while self.peek() == "*":
            self.at += 1
            form = _mul(form, self.factor())
        return form

    def factor(self) -> Form:
        token = self.peek()
        self.at += 1
        if token == "(":
            form = self.expression()
            if self.peek() != ")":
                raise Malformed("unclosed parenthesis")
            self.at += 1
            return form
        if token[:1] in set("0123456789") and (token == "0" or token[0] != "0"):
            self.numbers.append(int(token))
            return _leaf(int(token))
        raise Malformed(f"expected a number or '(', got {token!r}")


EXPRESSION_CHARS = frozenset("0123456789+-*()")


def _splits(numbers: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Each split of the sorted multiset ``numbers`` into two non-empty parts, once."""
    seen = set()
    n = len(numbers)
    for mask in range(1, 2**n - 1):
        left = tuple(numbers[i] for i in range(n) if mask >> i & 1)
        right = tuple(numbers[i] for i in range(n) if not mask >> i & 1)
        key = min(left, right), max(left, right)
        if key not in seen:
            seen.add(key)
            yield key


def _rsub(a: Form, b: Form) -> Form:
    return _sub(b, a)


# The four ways to combine two operands, in the order of the values in ``reachable``.
_COMBINE = (_add, _sub, _rsub, _mul)


@cache
def reachable(numbers: tuple[int, ...]) -> dict[int, tuple]:
    """Every value an expression using each of ``numbers`` once reaches, with how the first
    expression found for it combines two parts: ``(combine index, left numbers, left value,
    right numbers, right value)``, or ``()`` for a single number.

    Only integers are enumerated here, which is fast enough to list every problem up front;
    ``witness`` builds the expression for the few values that become targets."""
    if len(numbers) == 1:
        return {numbers[0]: ()}
    found: dict[int, tuple] = {}
    for left, right in _splits(numbers):
        right_values = reachable(right)
        for a in reachable(left):
            for b in right_values:
                for i, value in enumerate((a + b, a - b, b - a, a * b)):
                    if value not in found:
                        found[value] = (i, left, a, right, b)
    return found


def witness(numbers: tuple[int, ...], value: int) -> Form:
    step = reachable(numbers)[value]
    if not step:
        return _leaf(value)
    i, left, a, right, b = step
    return _COMBINE[i](witness(left, a), witness(right, b))


@cache
def _expressions(numbers: tuple[int, ...]) -> dict[str, Form]:
    """Every distinct normal form of an expression using each of ``numbers`` once.

    Forms combine from the forms of their two operands alone, so deduplicating at every level
    loses nothing."""
    if len(numbers) == 1:
        return {str(numbers[0]): _leaf(numbers[0])}
    found: dict[str, Form] = {}
    for left, right in _splits(numbers):
        for fa in _expressions(left).values():
            for fb in _expressions(right).values():
                for combine in _COMBINE:
                    f = combine(fa, fb)
                    found.setdefault(canonical(f), f)
    return found


@cache
def solutions(numbers: tuple[int, ...], target: int) -> tuple[str, ...]:
    return tuple(sorted(c for c, f in _expressions(numbers).items() if f.value == target))
