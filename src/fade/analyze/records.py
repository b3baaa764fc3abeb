"""What a run's rollout dump is read into: one :class:`StepBatch` per training step, and the run.

Every reader (:mod:`fade.analyze.formats`) turns its engine's files into the same records, so the
statistics, the counterfactual estimators and the report never see a format. A step's rollouts
are columns: the reward of each rollout, its group as a dense id 0..G-1 in the order the groups
first appear, and the run's own advantage where the dump carries one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fade.jsonl import JsonlError

__all__ = ["DumpError", "RunRecords", "StepBatch", "dense_ids", "dump_errors"]


class DumpError(ValueError):
    """A rollout dump that cannot be read as it is: the message names the file (and line) and what
    was expected."""


@contextlib.contextmanager
def dump_errors() -> Iterator[None]:
    """A file :mod:`fade.jsonl` cannot read, as the :class:`DumpError` it is here (the same message)."""
    try:
        yield
    except JsonlError as exc:
        raise DumpError(str(exc)) from None


@dataclass
class StepBatch:
    """One training step's rollouts.

    Attributes:
        step: the engine's step number.
        rewards: float64, one per rollout.
        groups: int64 dense group ids, 0..num_groups-1 in first-appearance order.
        advantages: float64 sequence-level advantages the run applied, or None if not dumped.
        prompt_keys: a key per group that names the prompt across steps (its text or a stable id,
            text or an integer as the dump wrote it), or None where the dump has none.
        source: the file the step was read from.
    """

    step: int
    rewards: np.ndarray
    groups: np.ndarray
    advantages: np.ndarray | None = None
    prompt_keys: list[str | int] | None = None
    source: str = ""

    @property
    def num_rollouts(self) -> int:
        return int(self.rewards.size)

    @property
    def num_groups(self) -> int:
        return int(self.groups.max()) + 1 if self.groups.size else 0


@dataclass
class RunRecords:
    """A run read from its dump.

    Attributes:
        format: the layout it was read as (``verl``, ``verl-legacy``, ``trl``, ``nemo-rl``,
            ``prime-rl``, ``prime-rl-stream``, ``roll``, ``fade-eval``, ``generic``).
        path: what was read.
        steps: the steps in increasing step order.
        entropy: the mean token entropy the run logged, per step (from its metrics file), if any.
        estimator: the spec of the advantage the run used, where the dump says so, else None.
        filtered: why the run's dump may lack groups (DAPO-style filtering), or None.
        success: the rule that makes a reward a success (``(">=", 1.0)``: reward >= 1), or None
            when rewards are not binary and no threshold was given.
        notes: what the reader assumed, shown in the report.
        engine_metrics: per step, the engine's own logged numbers the report sets beside fade's
            (TRL's ``frac_reward_zero_std``, ...).
        entropy_feed: which logged entropy the run's engine fed FADE before it weighed the batch of
            step s, as the format knows its engine: a name of :data:`fade.analyze.stats.ENTROPY_FEEDS`
            (``"same-step"``, the default, or ``"previous-step"``), which says what the replay feeds.
    """

    format: str
    path: str
    steps: list[StepBatch]
    entropy: dict[int, float] = field(default_factory=dict)
    estimator: str | None = None
    filtered: str | None = None
    success: tuple[str, float] | None = None
    notes: list[str] = field(default_factory=list)
    engine_metrics: dict[int, dict[str, float]] = field(default_factory=dict)
    entropy_feed: str = "same-step"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format, "path": self.path, "num_steps": len(self.steps),
            "first_step": self.steps[0].step if self.steps else None,
            "last_step": self.steps[-1].step if self.steps else None,
            "estimator": self.estimator, "filtered": self.filtered,
            "success": None if self.success is None else f"reward {self.success[0]} {self.success[1]:g}",
            "entropy_logged": bool(self.entropy), "entropy_feed": self.entropy_feed, "notes": list(self.notes),
        }


def dense_ids(keys: list[Any] | np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Dense ids 0..G-1 for ``keys`` in first-appearance order, and the distinct keys in that order."""
    arr = np.asarray(keys, dtype=object) if not isinstance(keys, np.ndarray) else keys
    uniq, first, inverse = np.unique(arr, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.reshape(-1)].astype(np.int64), [uniq[i] for i in order]
