"""Weighing a batch: the one way a trainer, an engine or a command turns a batch into advantages.

:func:`weigh` feeds the estimator the step's training signals, gives it exactly the per-rollout
inputs its spec names (:attr:`fade.registry.EstimatorSpec.inputs`), computing one that costs work
(the testbed's greedy-decode baseline) only when the estimator wants it, and returns a
:class:`Weighing`: the advantages, the record the call left (FADE's schedule) and the batch's
diagnostics (:data:`fade.mass.DIAGNOSTICS`), with the ``fade/<key>`` metrics the engines log. The
testbed trainer, TRL, verl, ``fade decompose`` and ``fade analyze`` weigh through it; the engines
and commands refuse an estimator whose inputs they cannot give with
:func:`fade.registry.check_inputs` before any work starts. Which signals a stateful estimator
(FADE) observes before a batch is one rule, written in :func:`weigh`'s docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np
import torch

from .adaptive import SCHEDULE
from .mass import DIAGNOSTICS, batch_diagnostics
from .registry import INPUTS, Estimator, missing_input

__all__ = ["Weighing", "measure", "observe", "weigh"]


@dataclass(frozen=True)
class Weighing:
    """What weighing a batch gave.

    Attributes:
        advantages: one per rollout, the estimator's output (same dtype and device as the rewards).
        record: what the call recorded (``Estimator.last``): FADE's schedule (alpha, delta, p_hat,
            h_hat, h_star, step, batch_solve_rate) and its own measure of the batch; empty for a
            stateless estimator.
        diagnostics: the batch's :data:`~fade.mass.DIAGNOSTICS`, by :func:`fade.mass.batch_diagnostics`
            (on the rewards as the estimator reads them), measured the first time they are read: a
            caller that wants only the advantages (a replay, a per-function normalisation) does not
            pay for them. They are of the batch as weighed: :func:`measure` keeps its own copy of the
            tensors, so a caller that changes them in place afterwards does not change the diagnostics.
    """

    advantages: torch.Tensor
    record: Mapping[str, float]
    _diagnose: Callable[[], dict[str, float]] = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(self._diagnose):
            raise TypeError(f"Weighing's third field is a function of no arguments that measures the diagnostics, "
                            f"got {type(self._diagnose).__name__}: build a Weighing with fade.weighing.measure")

    @cached_property
    def diagnostics(self) -> Mapping[str, float]:
        return self._diagnose()

    def metrics(self) -> dict[str, float]:
        """``fade/<key>``: the schedule of the record (:data:`fade.adaptive.SCHEDULE`) and the
        diagnostics, what the engine integrations log. Undefined values (the sign balance of a batch
        with no signal, h_hat before any entropy) are left out rather than logged as NaN."""
        values = {**self.record, **self.diagnostics}
        out = {}
        for key in (*SCHEDULE, *DIAGNOSTICS):
            value = values.get(key)
            if value is not None and math.isfinite(value):
                out[f"fade/{key}"] = float(value)
        return out


def weigh(
    est: Estimator,
    rewards: torch.Tensor | np.ndarray | list[float],
    groups: int | torch.Tensor | np.ndarray | list,
    *,
    entropy: float | None = None,
    step: int | None = None,
    inputs: Mapping[str, Any | Callable[[], Any]] | None = None,
    advance: bool = True,
) -> Weighing:
    """Weigh one batch with ``est``: the step's signals observed, then the advantages of (``rewards``,
    ``groups``), the record of the call and the batch's diagnostics.

    The rule of the signals, the same in every engine (docs/method.md, section 3): before the batch
    of step s (1 for a run's first batch), ``step`` is the count of the trainer's updates before
    this batch, s - 1 (the testbed's logged step s - 1, verl's ``global_steps - 1``, TRL's
    ``state.global_step``: its optimizer steps done, s - 1 where one generation is one optimizer
    step), and ``entropy`` is the policy's mean token entropy most recently measured before this
    weighing. The engines differ only in which entropy they can measure by then: the testbed (its
    policy pass) and verl's ``trainer_mode=fade`` (its old-log-prob pass) measure this very batch
    under the policy about to be updated, as TRL does with ``entropy="current"`` (one extra no-grad
    pass); TRL's default, ``entropy="previous"``, has the mean entropy of its loss passes since the
    previous generation, the previous batch's (and measures its first batch itself). Where an
    engine has no entropy to feed (TRL before its first loss pass of a resumed run, or at the first
    generation of an estimator that reads none), it feeds neither signal and the state carries on.
    ``fade analyze`` replays a run by the same rule, reading from the run's metrics the entropy its
    engine fed (``fade.analyze.stats.ENTROPY_FEEDS``).

    Args:
        est: the estimator (``fade.estimator(name, **params)``).
        rewards, groups: as for the estimator's call; a batch holds at least one rollout.
        entropy, step: this step's training signals, observed (``est.observe``) before the batch is
            weighed, each where given, by the rule above. A stateless estimator checks and ignores them.
        inputs: per-rollout inputs by name (:data:`fade.registry.INPUTS`): the values, or a function
            of no arguments that computes them, called only when the estimator weighs with that
            input; None or left out where the caller has none. The estimator gets exactly those of
            its spec's :attr:`~fade.registry.EstimatorSpec.inputs`. A missing input it needs is
            refused in one line naming the estimator and the input, before anything is observed or
            computed; an unknown input name is refused too.
        advance: True (a training step): observe, weigh, and advance a stateful estimator's state
            (``est(...)``). False: weigh at the present state and leave the estimator as it is
            (``est.peek(...)``), to score an evaluation batch or probe mid-run; signals are then
            refused.
    """
    given = dict(inputs or {})
    unknown = sorted(set(given) - set(INPUTS))
    if unknown:
        raise ValueError(f"unknown per-rollout input(s) {unknown}; known: {sorted(INPUTS)}")
    for key in est.spec.needs:
        if given.get(key) is None:
            raise ValueError(missing_input(est.name, key))
    if not advance and (entropy is not None or step is not None):
        signals = sorted(k for k, v in (("entropy", entropy), ("step", step)) if v is not None)
        raise ValueError(f"signals {signals} are observed only by a weighing that advances (advance=True): "
                         "a weighing at the present state leaves the estimator as it is")
    observe(est, entropy=entropy, step=step)
    wanted = {}
    for key in est.spec.inputs:
        value = given.get(key)
        value = value() if callable(value) else value
        if value is not None:
            wanted[key] = value
    if advance:
        adv = est(rewards, groups, **wanted)
        record = dict(est.last)
    else:
        adv, record = est.peek(rewards, groups, **wanted)
    return measure(est, adv, rewards, groups, record)


def observe(est: Estimator, *, entropy: float | None = None, step: int | None = None) -> None:
    """Feed ``est`` the step's training signals, each where given, by :func:`weigh`'s rule: how
    :func:`weigh` begins, and what an engine does for a step whose batch it cannot weigh (TRL's
    generation whose every completion was declined) so that the schedule still hears the step."""
    signals = {key: value for key, value in (("entropy", entropy), ("step", step)) if value is not None}
    if signals:
        est.observe(**signals)


def measure(
    est: Estimator,
    advantages: torch.Tensor,
    rewards: torch.Tensor | np.ndarray | list[float],
    groups: int | torch.Tensor | np.ndarray | list,
    record: Mapping[str, float],
) -> Weighing:
    """The :class:`Weighing` of ``advantages`` that ``est``'s call recording ``record`` led to, on
    (``rewards``, ``groups``): how :func:`weigh` ends, and how an engine that applies other
    advantages than the estimator's output measures what it applies (verl's per-token returns and
    ``f_norm``, TRL's normalise-then-sum recipe): its diagnostics by
    :func:`fade.mass.batch_diagnostics`, taken from ``record`` where the estimator measured the
    batch itself (FADE)."""
    kept = [_kept(x) for x in (advantages, rewards, groups)]
    return Weighing(advantages, dict(record), partial(batch_diagnostics, est, *kept, dict(record)))


def _kept(value: Any) -> Any:
    """A copy of a batch's tensor or array (a list: its items), so that what a :class:`Weighing`
    measures later is the batch as it was weighed."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return list(value)
    return value
