"""Gradient mass: where an advantage puts its positive and negative weight.

For binary rewards and a prompt solved with probability p, an advantage that gives a+ to
successes and a- to failures yields the expected gradient m_S g_S - m_F g_F with positive mass
m_S = p a+ and negative mass m_F = q |a-| (FADE paper, section 2). :func:`mass_profile` computes
a+, a-, m_S and m_F at every solve rate k/G a group of G rollouts can show, by running the
estimator itself on one canonical group per k. :func:`decompose` measures the same quantities
on any batch of advantages, binary rewards or not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from .registry import Estimator, estimator
from .segments import Groups, as_groups, as_rewards, as_tensor, check_finite

__all__ = [
    "BALANCED_SIGN",
    "DIAGNOSTICS",
    "MassProfile",
    "MassReport",
    "batch_diagnostics",
    "carries_signal",
    "decompose",
    "mass_profile",
]


@dataclass(frozen=True)
class MassReport:
    """Batch diagnostics of a set of advantages (docs/method.md, section 1).

    Attributes:
        positive_mass: (1/N) sum max(A, 0).
        negative_mass: (1/N) sum max(-A, 0).
        total_mass: their sum, the scale axis.
        sign_balance: positive / total; 0.5 is balanced, NaN when the batch has no mass.
        difficulty: sum |A_i| p_g(i) / sum |A_i|, the mass-weighted mean group success rate
            (group mean reward); low means hard focus. NaN when the batch has no mass.
        effective_sample_fraction: (sum |A|)^2 / (N sum A^2), in [0, 1]; 0 when the batch has
            no mass (no rollout carries signal).
        num_rollouts, num_groups: batch shape.
    """

    positive_mass: float
    negative_mass: float
    total_mass: float
    sign_balance: float
    difficulty: float
    effective_sample_fraction: float
    num_rollouts: int
    num_groups: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def diagnostics(self) -> dict[str, float]:
        """The :data:`DIAGNOSTICS`, the values a trainer logs for a batch."""
        return {key: getattr(self, key) for key in DIAGNOSTICS}


#: The sign balance of an advantage with as much positive as negative mass (m_S = m_F).
BALANCED_SIGN = 0.5

#: The batch diagnostics every trainer and integration logs, as :class:`MassReport` names them.
DIAGNOSTICS = ("positive_mass", "negative_mass", "sign_balance", "difficulty", "effective_sample_fraction")


def decompose(
    advantages: torch.Tensor | np.ndarray | list[float],
    rewards: torch.Tensor | np.ndarray | list[float],
    groups: int | torch.Tensor | np.ndarray | list,
) -> MassReport:
    """Positive/negative mass, sign balance, difficulty and effective sample fraction of a batch.

    ``advantages`` holds one value per rollout (for token-level advantages pass each sequence's
    value); ``rewards`` and ``groups`` are as for the estimators.
    """
    r = as_rewards(rewards)
    a = as_tensor(advantages, "advantages")
    if a.dim() != 1:
        raise ValueError(
            f"advantages must be 1-D (one per rollout), got shape {tuple(a.shape)}; "
            "for token-level advantages pass one value per sequence"
        )
    if a.numel() != r.numel():
        raise ValueError(f"got {a.numel()} advantages for {r.numel()} rewards: expected one advantage per rollout")
    a = a.to(device=r.device, dtype=torch.float64)
    check_finite(a, "advantages")
    return decompose_grouped(a, r, as_groups(groups, r.numel(), r.device))


def decompose_grouped(
    a: torch.Tensor, r: torch.Tensor, g: Groups, group_mean: torch.Tensor | None = None
) -> MassReport:
    """:func:`decompose` on validated inputs with the grouping already built.

    ``group_mean`` (one reward mean per group) may be passed when the caller has it already.
    Sums run on advantages scaled by max |A|, so the diagnostics are exact ratios at any
    magnitude (no underflow of A^2 near 1e-170, no overflow near 1e170).
    """
    n = a.numel()
    peak = float(a.abs().max())
    if peak == 0.0:
        return MassReport(0.0, 0.0, 0.0, math.nan, math.nan, 0.0, n, g.num_groups)
    scale = 1.0 / peak
    a = a * scale if math.isfinite(scale) else a / peak
    u = a.abs()
    # Both sums use the same order over terms with a.clamp_min(0) <= |a| elementwise, so
    # pos_u <= s1 exactly and an all-positive (all-negative) batch has exactly zero negative
    # (positive) mass.
    s1 = float(u.sum(dtype=torch.float64))
    pos_u = float(a.clamp_min(0).sum(dtype=torch.float64))
    neg_u = s1 - pos_u
    s2 = float(torch.dot(u, u).to(torch.float64))
    if group_mean is None:
        group_mean = g.mean(r)
    per_group = g.sum(u)
    difficulty = float(torch.dot(per_group.to(torch.float64), group_mean.to(torch.float64))) / s1
    return MassReport(
        positive_mass=peak * pos_u / n,
        negative_mass=peak * neg_u / n,
        total_mass=peak * s1 / n,
        sign_balance=pos_u / s1,
        difficulty=difficulty,
        effective_sample_fraction=min(1.0, s1 * s1 / (n * s2)),
        num_rollouts=n,
        num_groups=g.num_groups,
    )


def batch_diagnostics(
    est: Estimator,
    advantages: torch.Tensor | np.ndarray | list[float],
    rewards: torch.Tensor | np.ndarray | list[float],
    groups: int | torch.Tensor | np.ndarray | list,
    record: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The :data:`DIAGNOSTICS` of ``est``'s call on (``rewards``, ``groups``) that gave ``advantages``.

    The one definition every trainer and engine integration logs: the batch measured by
    :func:`decompose` on the rewards as the estimator reads them (:meth:`Estimator.as_success`:
    successes under a ``success_threshold``, the mapped rewards under a reward range), not the raw
    ones. ``record`` is what the call recorded (``est.last`` when None, or the record of
    :meth:`Estimator.peek`); where it holds the diagnostics, the estimator measured the batch
    itself (FADE does) and they are taken from it. Empty advantages (nothing was scored) give {}.
    """
    record = est.last if record is None else record
    if all(key in record for key in DIAGNOSTICS):
        return {key: record[key] for key in DIAGNOSTICS}
    if not len(advantages):
        return {}
    return decompose(advantages, est.as_success(as_rewards(rewards)), groups).diagnostics()


@dataclass(frozen=True)
class MassProfile:
    """An estimator's advantages and gradient mass at each solve rate p = k/G, k = 0..G.

    Attributes (float64 tensors of length G + 1):
        p: solve rates k/G.
        adv_pos: a+, the mean advantage of a success (0 at k = 0, where there is none).
        adv_neg: a-, the mean advantage of a failure, signed (0 at k = G).
        positive: m_S = p a+.
        negative: m_F = q |a-|.
        weight: w(p) = a+ - a-, the weight of grad p in the group's expected gradient: the
            derivative of the objective the estimator implicitly ascends.
    Scalars, for a uniform spread of p (one group per k, which is the expected batch when
    p ~ Uniform(0, 1)): ``sign_balance``, ``difficulty``, ``effective_sample_fraction``.
    """

    name: str
    group_size: int
    params: dict[str, Any]
    p: torch.Tensor
    adv_pos: torch.Tensor
    adv_neg: torch.Tensor
    positive: torch.Tensor
    negative: torch.Tensor
    weight: torch.Tensor
    sign_balance: float
    difficulty: float
    effective_sample_fraction: float

    def rows(self) -> list[dict[str, float]]:
        """One dict per k, for tables and JSON."""
        return [
            {
                "k": k,
                "p": float(self.p[k]),
                "adv_pos": float(self.adv_pos[k]),
                "adv_neg": float(self.adv_neg[k]),
                "positive": float(self.positive[k]),
                "negative": float(self.negative[k]),
                "weight": float(self.weight[k]),
            }
            for k in range(self.group_size + 1)
        ]


def canonical_batch(group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rewards and group ids of G + 1 groups of G rollouts, group k holding k successes first."""
    g = group_size
    j = torch.arange(g, dtype=torch.float64)
    rewards = (j.unsqueeze(0) < torch.arange(g + 1, dtype=torch.float64).unsqueeze(1)).to(torch.float64).reshape(-1)
    return rewards, torch.arange(g + 1).repeat_interleave(g)


def carries_signal(name_or_estimator: str | Estimator, group_size: int, **params: Any) -> bool:
    """Whether any group of ``group_size`` binary rewards gets a non-zero advantage from the estimator.

    False means a trainer using it with groups of this size would compute advantage 0 for every
    rollout of every batch and learn nothing: every centred estimator at ``group_size = 1`` (one
    rollout has nobody to compare with), and pass@k estimators at ``k = group_size`` (the group is
    the only subset of k, so no rollout changes its pass@k). Each of the G + 1 solve counts is
    tried (:func:`canonical_batch`), with response lengths 1 and a baseline reward of 0 and of 1 (each
    read by the estimators that weigh with it), through :meth:`Estimator.peek`, so a stateful
    estimator is not advanced.
    An estimator that cannot take groups of this size at all raises its ValueError.
    """
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    if isinstance(name_or_estimator, Estimator):
        if params:
            raise ValueError(
                f"parameters {sorted(params)} were given with an estimator object; set them when building it"
            )
        template = name_or_estimator
    else:
        template = estimator(name_or_estimator, **params)
    rewards, ids = canonical_batch(int(group_size))
    for baseline in (0.0, 1.0):  # the estimator reads the inputs it weighs with, and no other
        adv, _ = template.peek(rewards, ids, lengths=torch.ones_like(rewards),
                                   baseline_rewards=torch.full_like(rewards, baseline))
        if bool((adv != 0).any()):
            return True
    return False


def mass_profile(
    name_or_estimator: str | Estimator,
    group_size: int,
    *,
    lengths: float = 1.0,
    baseline_rewards: float | None = None,
    **params: Any,
) -> MassProfile:
    """The gradient-mass profile of an estimator over the solve rates of a group of ``group_size``.

    Args:
        name_or_estimator: a registered name (built with ``params``) or an estimator, read with
            :meth:`Estimator.peek` so that a stateful one is not advanced.
        group_size: G >= 2.
        lengths: the response length every rollout gets (for length-aware estimators).
        baseline_rewards: the baseline reward every rollout gets (needed by ``remax``).
        **params: estimator parameters, e.g. ``alpha=3, delta=0.3`` for ``fade``.
    """
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 2:
        raise ValueError(f"group_size must be an integer >= 2, got {group_size!r}")
    g = int(group_size)
    if isinstance(name_or_estimator, Estimator):
        if params:
            raise ValueError(
                f"parameters {sorted(params)} were given with an estimator object; set them when building it"
            )
        est = name_or_estimator
    else:
        est = estimator(name_or_estimator, **params)
    rewards, ids = canonical_batch(g)
    inputs: dict[str, torch.Tensor] = {"lengths": torch.full_like(rewards, float(lengths))}
    if baseline_rewards is not None:
        inputs["baseline_rewards"] = torch.full_like(rewards, float(baseline_rewards))
    adv = est.peek(rewards, ids, **inputs)[0].to(torch.float64)  # the estimator reads the inputs it weighs with
    check_finite(adv, f"{est.name} advantages")

    grid = adv.view(g + 1, g)
    success = rewards.view(g + 1, g) > 0.5
    k = torch.arange(g + 1, dtype=torch.float64)
    p = k / g
    sum_pos = torch.where(success, grid, torch.zeros_like(grid)).sum(1)
    sum_neg = torch.where(~success, grid, torch.zeros_like(grid)).sum(1)
    adv_pos = torch.where(k > 0, sum_pos / k.clamp_min(1), torch.zeros_like(k))
    adv_neg = torch.where(k < g, sum_neg / (g - k).clamp_min(1), torch.zeros_like(k))
    rep = decompose(adv, rewards, ids)
    return MassProfile(
        name=est.name,
        group_size=g,
        params=dict(est.params),
        p=p,
        adv_pos=adv_pos,
        adv_neg=adv_neg,
        positive=p * adv_pos,
        negative=(1 - p) * adv_neg.abs(),
        weight=adv_pos - adv_neg,
        sign_balance=rep.sign_balance,
        difficulty=rep.difficulty,
        effective_sample_fraction=rep.effective_sample_fraction,
    )
