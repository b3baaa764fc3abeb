"""DAPO's dynamic sampling: which groups of rollouts carry no reward contrast, so a trainer can drop
and resample them.

A group whose rollouts all earned the same reward gives every group-baselined estimator nothing to
learn from (GRPO's advantage is 0 in it), yet it dilutes the batch. DAPO (arXiv 2503.14476,
section 3.2) drops such groups and samples more prompts until the batch is full; verl implements it
as ``algorithm.filter_groups``. This module holds the rule; the resampling is the trainer's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .segments import as_groups, as_rewards, as_tensor

__all__ = ["kept_groups", "zero_variance_mask"]


def zero_variance_mask(
    rewards: torch.Tensor | np.ndarray | Sequence[float],
    groups: int | torch.Tensor | np.ndarray | Sequence,
) -> torch.Tensor:
    """True for every rollout of a group whose rewards all agree: the rollouts DAPO's filter drops.

    A group is dropped when it holds two rollouts or more and all its rewards are the same number:
    max = min, compared exactly (integer rewards in float64, so exactly up to 2^53). A group of one
    rollout is kept, as verl and DAPO keep it: it has no spread to measure, and whether it carries
    signal is the estimator's business (a leave-one-out baseline gives it 0). Pass the raw outcome
    rewards (the verifier's score), not shaped ones: a length penalty would make equal outcomes
    look different.

    verl's rule is ``len(values) > 1 and np.std(values) == 0`` per prompt uid on the reward (verl
    0.9.1, trainer/ppo/v1/replay_buffer.py ``ReplayBuffer._dapo_filtered_keys``; DAPO's recipe keeps
    a uid when ``std > 0 or len == 1``). The two agree on every group whose mean numpy computes
    exactly (binary and integer rewards, sums of powers of two); on other equal floats numpy's mean
    can round off the common value, so its std comes out a little above 0 (three rewards of 0.1 give
    1.4e-17) and verl keeps a group fade drops.

    Args:
        rewards: (n,) the raw outcome reward of each rollout, finite.
        groups: an int G (consecutive groups of G) or one group id per rollout (ragged groups,
            any order), as every estimator takes them.

    Returns:
        A bool tensor (n,) on the rewards' device: True where the rollout's group would be dropped.
    """
    r = as_tensor(rewards, "rewards")
    if not r.is_floating_point():
        r = r.to(torch.float64)
    r = as_rewards(r)
    g = as_groups(groups, r.numel(), r.device)
    flat = (g.max(r) == -g.max(-r)) & (g.counts >= 2)
    return g.expand(flat)


def kept_groups(
    rewards: torch.Tensor | np.ndarray | Sequence[float],
    groups: int | torch.Tensor | np.ndarray | Sequence,
    limit: int | None = None,
) -> list:
    """The groups DAPO's filter keeps (those :func:`zero_variance_mask` does not drop), in the order
    of their first rollout, the first ``limit`` of them (all with None): what a trainer trains on
    when it needs ``limit`` more groups.

    Args:
        rewards, groups: as for :func:`zero_variance_mask` (ragged groups and any ids allowed).
        limit: the most groups to return, an integer >= 0, or None.

    Returns:
        The kept groups' ids as ``groups`` gives them (for an int G, the group numbers 0, 1, ...).
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be an integer >= 0 (the most groups to keep) or None, got {limit!r}")
    dropped = zero_variance_mask(rewards, groups).tolist()
    if isinstance(groups, int) and not isinstance(groups, bool):
        ids: list = [i // groups for i in range(len(dropped))]
    else:
        ids = groups.tolist() if isinstance(groups, (torch.Tensor, np.ndarray)) else list(groups)
    kept: list = []
    seen: set = set()
    for group, drop in zip(ids, dropped):
        if limit is not None and len(kept) >= limit:
            break
        if group not in seen:
            seen.add(group)
            if not drop:
                kept.append(group)
    return kept
