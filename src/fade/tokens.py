"""A batch of response tokens as a policy loss reads it: its validation and verl's aggregations.

A policy loss (``fade.losses``) reads each response token's log-probability under the policy being
updated and under the one that sampled it, an advantage per response or per token, and a mask of
the response tokens; an entropy term reads the token entropies. This module checks those matrices
once (shapes, devices, a mask of 0/1, finite values under the mask) and holds verl's five ways of
reducing a token matrix to the loss (:func:`aggregate`), so every loss term reads the same
validated :class:`Tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .validation import in_range

__all__ = ["AGGREGATIONS", "Tokens", "aggregate", "as_mask", "as_matrix", "check_agg", "check_finite_on", "token_batch"]

#: verl's ``loss_agg_mode`` values (trainer/ppo/core_algos.py ``agg_loss``), in its order.
AGGREGATIONS: tuple[str, ...] = (
    "token-mean",
    "token-sum",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)


def check_agg(agg: Any) -> None:
    """``agg`` is one of :data:`AGGREGATIONS`."""
    if agg not in AGGREGATIONS:
        raise ValueError(f"agg must be one of {', '.join(map(repr, AGGREGATIONS))}, got {agg!r}")


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    agg: str = "token-mean",
    *,
    tokens: float | None = None,
    sequences: float | None = None,
    horizon: float | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) matrix of per-token values to one scalar, as verl's ``agg_loss`` does.

    With m the mask, n_b = sum_t m_bt the tokens of row b and s_b = sum_t m_bt v_bt its sum:

    - ``token-mean``: sum_b s_b / N, N = ``tokens`` (default: sum_b n_b), every token weighs the same;
    - ``token-sum``: sum_b s_b;
    - ``seq-mean-token-sum``: sum_b s_b / S, S = ``sequences`` (default: the rows with n_b > 0);
    - ``seq-mean-token-mean``: sum_{b: n_b > 0} (s_b / n_b) / S, every response weighs the same;
    - ``seq-mean-token-sum-norm``: ``seq-mean-token-sum`` / L, L = ``horizon`` (default T, the
      padded width; Dr. GRPO, arXiv 2503.20783, divides by a constant such as the generation limit).

    ``tokens``, ``sequences`` and ``horizon`` are verl's ``batch_num_tokens``, ``global_batch_size``
    and ``loss_scale_factor``: give them when ``values`` holds part of the batch the loss is an
    average over (a minibatch split into pieces, or rows left out because they add nothing).
    Values outside the mask are never read (padding may hold inf or NaN). With no token under the
    mask the result is 0, where verl divides 0 by 0.

    Source: verl 0.9.1, trainer/ppo/core_algos.py ``agg_loss`` (with ``dp_size`` 1).
    """
    check_agg(agg)
    values = as_matrix(values, "values")
    mask = as_mask(mask, values, "values")
    for key, given in (("tokens", tokens), ("sequences", sequences), ("horizon", horizon)):
        if given is not None and not in_range(given, low=0.0, low_open=True):
            raise ValueError(f"{key} must be a finite number > 0 (or None to count it from the mask), got {given!r}")
    masked = torch.where(mask, values, 0.0)
    if agg == "token-mean":
        return masked.sum() / (tokens if tokens is not None else max(int(mask.sum()), 1))
    if agg == "token-sum":
        return masked.sum()
    counts = mask.sum(-1)
    per_row = masked.sum(-1)
    if agg == "seq-mean-token-mean":
        per_row = per_row / counts.clamp_min(1)
    present = counts > 0
    total = torch.where(present, per_row, 0.0).sum()
    total = total / (sequences if sequences is not None else max(int(present.sum()), 1))
    if agg == "seq-mean-token-sum-norm":
        total = total / (horizon if horizon is not None else values.shape[-1])
    return total


@dataclass(frozen=True)
class Tokens:
    """One batch of response tokens as a policy loss reads it, validated and on one device.

    ``advantages`` is (B, T) (a per-rollout advantage repeated over the row's tokens); ``mask`` is
    bool; ``count`` is the number of tokens under it. :meth:`reduce` is the loss's aggregation and
    :meth:`mean` the token mean the metrics are (verl's ``masked_mean``).
    """

    log_prob: torch.Tensor
    old_log_prob: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor
    count: int
    agg: str = "token-mean"
    tokens: float | None = None
    sequences: float | None = None
    horizon: float | None = None
    generator: torch.Generator | None = None

    def reduce(self, values: torch.Tensor) -> torch.Tensor:
        return aggregate(
            values, self.mask, self.agg, tokens=self.tokens, sequences=self.sequences, horizon=self.horizon
        )

    def mean_of(self, values: torch.Tensor) -> torch.Tensor:
        """Mean of ``values`` over the tokens under the mask (0 when there are none)."""
        if values.dtype == torch.bool:
            values = values.float()
        return torch.where(self.mask, values, 0.0).sum() / max(self.count, 1)

    def mean(self, values: torch.Tensor) -> float:
        return float(self.mean_of(values.detach()))


def as_matrix(x: Any, name: str) -> torch.Tensor:
    """``x`` (called ``name``) checked to be a floating-point (B, T) tensor, one value per token."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch tensor of shape (B, T), got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be (B, T), one value per response token, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must hold floating-point values, got dtype {x.dtype}")
    return x


def as_mask(mask: Any, like: torch.Tensor, name: str) -> torch.Tensor:
    """``mask`` as a bool tensor of ``like``'s shape and device (``like`` is called ``name``)."""
    if not isinstance(mask, torch.Tensor):
        raise ValueError(
            f"mask must be a torch tensor of {name}'s shape {tuple(like.shape)}, got {type(mask).__name__}"
        )
    if mask.shape != like.shape:
        raise ValueError(f"mask must have {name}'s shape {tuple(like.shape)}, got {tuple(mask.shape)}")
    if mask.device != like.device:
        raise ValueError(f"mask is on {mask.device}, {name} on {like.device}: expected one device")
    if mask.dtype == torch.bool:
        return mask
    if mask.is_complex():
        raise ValueError(f"mask must be bool or 0/1, got dtype {mask.dtype}")
    bad = (mask != 0) & (mask != 1)
    if bool(bad.any()):
        i, j = (int(v) for v in bad.nonzero()[0])
        raise ValueError(f"mask must be bool or 0/1 (True on the response tokens), got {mask[i, j].item()!r} at "
                         f"row {i}, token {j}")
    return mask != 0


def check_finite_on(x: torch.Tensor, mask: torch.Tensor, name: str) -> None:
    """``x`` (called ``name``) is finite under ``mask``; padding may hold anything."""
    bad = mask & ~torch.isfinite(x.detach())
    if bool(bad.any()):
        i, j = (int(v) for v in bad.nonzero()[0])
        raise ValueError(f"{name} must be finite on the response tokens, got {x[i, j].item()} at row {i}, token {j} "
                         f"({int(bad.sum())} such value(s))")


def token_batch(
    log_prob: Any, old_log_prob: Any, advantages: Any, mask: Any, *, agg: str, tokens: float | None,
    sequences: float | None, horizon: float | None, generator: torch.Generator | None,
) -> Tokens:
    """A policy loss's inputs validated and read as one :class:`Tokens` (a (B,) advantage repeated
    over its row's tokens)."""
    log_prob = as_matrix(log_prob, "log_prob")
    old_log_prob = as_matrix(old_log_prob, "old_log_prob")
    if old_log_prob.shape != log_prob.shape:
        raise ValueError(
            f"old_log_prob must have log_prob's shape {tuple(log_prob.shape)}, got {tuple(old_log_prob.shape)}"
        )
    device = log_prob.device
    if old_log_prob.device != device:
        raise ValueError(f"old_log_prob is on {old_log_prob.device}, log_prob on {device}: expected one device")
    mask = as_mask(mask, log_prob, "log_prob")
    if not isinstance(advantages, torch.Tensor) or not advantages.is_floating_point():
        raise ValueError(f"advantages must be a floating-point tensor, (B,) or (B, T), got "
                         f"{getattr(advantages, 'dtype', type(advantages).__name__)}")
    if advantages.device != device:
        raise ValueError(f"advantages are on {advantages.device}, log_prob on {device}: expected one device")
    if advantages.shape == log_prob.shape[:1]:
        advantages = advantages.unsqueeze(1).expand(log_prob.shape)
    elif advantages.shape != log_prob.shape:
        raise ValueError(f"advantages must be (B,) = {tuple(log_prob.shape[:1])} or (B, T) = {tuple(log_prob.shape)}, "
                         f"got {tuple(advantages.shape)}")
    for x, name in ((log_prob, "log_prob"), (old_log_prob, "old_log_prob"), (advantages, "advantages")):
        check_finite_on(x, mask, name)
    check_agg(agg)
    return Tokens(log_prob=log_prob, old_log_prob=old_log_prob, advantages=advantages, mask=mask,
                  count=int(mask.sum()), agg=agg, tokens=tokens, sequences=sequences, horizon=horizon,
                  generator=generator)
