"""The testbed's policy update: the optimizer steps one scored batch is trained with.

:func:`update_policy` takes ``epochs`` passes over the batch, each pass in ``minibatches``
minibatches of shuffled rows (a new order every pass), one optimizer step per minibatch. A step
is a forward pass of the minibatch's rows with the gradient on, the loss

    policy loss (``TrainConfig.policy_loss``, a term of :mod:`fade.losses`)
    + entropy term (``TrainConfig.entropy``, if any)
    + kl_coef * the k3 estimate of KL(pi || pi_base) (if ``kl_coef`` > 0)

each aggregated as ``TrainConfig.loss_agg`` says with the whole minibatch's token and sequence
counts, then a gradient clipped to ``grad_clip`` and the optimizer's step; after it the entropy
term observes the step's token-mean entropy (the adaptive coefficient moves once per optimizer
step, as TRL moves it). With one pass of one minibatch the policy is still the one that sampled
the batch when the loss is taken (the ratio is 1 and no clip acts); every further step is off
policy, where the clip variants differ.

Rows whose advantages are all 0 add nothing to a loss whose spec says so
(``zero_advantage_rows_inert``: ``ppo_clip``) and are then left out of the forward pass, unless a
KL or entropy term, which every token feeds, is on. The step's metrics are the means over the
optimizer steps, each step weighted by the tokens its loss saw (:func:`update_policy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from fade import losses

from .config import TrainConfig
from .runlog import ENTROPY_TERM_KEYS, LOSS_KEYS
from .sampling import sequence_logprobs

__all__ = ["UpdateBatch", "update_policy"]


@dataclass(frozen=True)
class UpdateBatch:
    """One scored batch as the update reads it, every tensor on the model's device.

    ``prompt_ids``/``prompt_mask`` (B, P) left-padded and ``completion_ids``/``completion_mask``
    (B, T) right-padded, as :class:`~fade.testbed.sampling.Rollouts` holds them; ``old_logprobs``
    (B, T) under the policy that sampled them and ``ref_logprobs`` under the base policy (None
    without a KL term); ``advantages`` (B,).
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    old_logprobs: torch.Tensor
    ref_logprobs: torch.Tensor | None
    advantages: torch.Tensor


class _Means:
    """Token-weighted means of named values over the optimizer steps."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.tokens = 0.0

    def add(self, values: dict[str, float], tokens: float) -> None:
        self.tokens += tokens
        for key, value in values.items():
            self.sums[key] = self.sums.get(key, 0.0) + value * tokens

    def mean(self, key: str) -> float | None:
        if key not in self.sums:
            return None
        return self.sums[key] / self.tokens if self.tokens else 0.0


def update_policy(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: UpdateBatch,
    *,
    config: TrainConfig,
    loss: losses.PolicyLoss,
    entropy: losses.EntropyTerm | None,
    horizon: float,
    order: torch.Generator,
    draws: torch.Generator | None = None,
) -> dict[str, Any]:
    """Train ``model`` on ``batch``: ``config.epochs`` passes of ``config.minibatches`` optimizer steps.

    Args:
        horizon: the constant ``seq-mean-token-sum-norm`` divides by (the completion length cap).
        order: draws each pass's order of the rows.
        draws: the random draws of a loss that makes any (Clip-Cov's choice of tokens).

    Returns:
        The update's metrics: ``grad_norm`` (the mean over the optimizer steps of the gradient
        norm before clipping) and ``grad_norm_last`` (the last step's); each of
        :data:`LOSS_KEYS` the loss reports (null otherwise), ``entropy_coef`` (the entropy
        term's coefficient applied) and ``update_entropy`` (the token-mean entropy it observed;
        both null without an entropy term): means over the optimizer steps weighted by the tokens
        each step's loss saw (0 when it saw none: every advantage was 0); ``kl``, the mean k3
        estimate of KL to the base policy over every token of every step (null without it).
    """
    adv = batch.advantages
    mask = batch.completion_mask
    inert = loss.spec.zero_advantage_rows_inert and batch.ref_logprobs is None and entropy is None
    agg = config.aggregation
    means, kl_sum, grad_norms = _Means(), 0.0, []
    for _ in range(config.epochs):
        shuffled = torch.randperm(adv.numel(), generator=order)
        for rows in torch.tensor_split(shuffled, config.minibatches):
            rows = rows.to(adv.device)
            scale = dict(agg=agg, tokens=max(float(mask[rows].sum()), 1.0), sequences=max(float(rows.numel()), 1.0),
                         horizon=horizon)
            active = rows[adv[rows] != 0] if inert else rows
            optimizer.zero_grad(set_to_none=True)
            observed = None
            if active.numel() > 0:
                new_lp, new_h = sequence_logprobs(
                    model, batch.prompt_ids[active], batch.prompt_mask[active], batch.completion_ids[active],
                    mask[active], temperature=config.temperature, with_entropy=entropy is not None,
                )
                m = mask[active]
                total, metrics = loss(new_lp, batch.old_logprobs[active], adv[active], m, generator=draws, **scale)
                if batch.ref_logprobs is not None:
                    # k3 estimator of KL(pi || pi_ref): non-negative, unbiased, low variance.
                    log_r = batch.ref_logprobs[active] - new_lp
                    kl = torch.exp(log_r) - log_r - 1
                    total = total + config.kl_coef * losses.aggregate(kl, m, **scale)
                    kl_sum += float((kl.detach() * m).sum())
                if entropy is not None:
                    term, applied = entropy(new_h, m, **scale)
                    total = total + term
                    observed = float(torch.where(m, new_h.detach(), 0.0).sum()) / max(int(m.sum()), 1)
                    metrics = {**metrics, "entropy_coef": applied["entropy_coef"], "update_entropy": observed}
                total.backward()
                means.add(metrics, float(m.sum()))
            grad_norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)))
            optimizer.step()
            if observed is not None:
                entropy.observe(observed)  # type: ignore[union-attr]
    record: dict[str, Any] = {
        "grad_norm": sum(grad_norms) / len(grad_norms),
        "grad_norm_last": grad_norms[-1],
        **{key: means.mean(key) for key in LOSS_KEYS},
        "kl": kl_sum / max(means.tokens, 1.0) if batch.ref_logprobs is not None else None,
    }
    if inert and means.tokens == 0:  # nothing went through the loss: it clipped nothing
        record.update({key: 0.0 for key in loss.spec.metrics})
    record.update({key: means.mean(key) for key in ENTROPY_TERM_KEYS})
    return record
