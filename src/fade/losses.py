"""Policy losses and entropy terms: the loss side of a policy-gradient step, as the engines define it.

An advantage estimator (``fade.registry``) says how strongly each rollout is reinforced; a policy
loss turns those advantages into the scalar a trainer differentiates, from each response token's
log-probability under the policy being updated and under the policy that sampled it. This module
holds the losses the engines offer against entropy collapse, each written as the engine that has
it writes it and tested next to that engine's code (tests/test_losses.py): PPO's clipped surrogate
with verl's dual clip (``ppo_clip``; with ``clip_ratio_high`` above ``clip_ratio_low`` it is
DAPO's clip-higher), Clip-Cov and KL-Cov (``clip_cov``, ``kl_cov``), the entropy bonus
(``entropy_bonus``) and TRL's adaptive entropy coefficient (``adaptive_entropy``), with verl's
five ways of reducing a token matrix to the loss (:func:`aggregate`; it and the validation of a
batch of tokens live in ``fade.tokens``). Every term is registered by name with its default
parameters, through the estimator registry's own mechanism (``fade.registry``), and built from a
name and parameters or from a spec in the grammar of ``fade.specs`` (``ppo_clip:clip_ratio_high=0.28``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .registry import bind, call_repr, enter, look_up, refuse_state, summary_of
from .specs import merge_params, parse_spec
from .tokens import AGGREGATIONS, Tokens, aggregate, as_mask, as_matrix, check_finite_on, token_batch
from .validation import in_range, require

__all__ = [
    "AGGREGATIONS",
    "KINDS",
    "AdaptiveEntropy",
    "EntropyTerm",
    "LossSpec",
    "LossTerm",
    "PolicyLoss",
    "Tokens",
    "adaptive_entropy_coef",
    "aggregate",
    "available",
    "entropy_term",
    "from_spec",
    "policy_loss",
    "register",
    "spec",
]

#: The kinds of loss term, and what each one is called with.
KINDS: dict[str, str] = {
    "policy": "a policy loss: (log_prob, old_log_prob, advantages, mask) -> (loss, metrics)",
    "entropy": "an entropy term: (entropy, mask) -> (term added to the loss, metrics)",
}
_NOUN = {"policy": "policy loss", "entropy": "entropy term", None: "loss term"}


def _check_kind(kind: Any) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")


# -- the registry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LossSpec:
    """What the registry knows about one loss term."""

    name: str
    kind: str
    fn: Callable[..., Any]
    defaults: Mapping[str, Any]
    check: Callable[[dict[str, Any]], None] | None = None
    cls: type[LossTerm] | None = None
    #: The metric names the term reports, each a float.
    metrics: tuple[str, ...] = ()
    #: True when rows whose advantages are all 0 add nothing to the loss or its gradient, so a
    #: trainer may leave them out of the forward pass (passing ``tokens``/``sequences`` for the
    #: whole batch); False when they take part (a covariance over every token, an entropy).
    zero_advantage_rows_inert: bool = False
    summary: str = ""


_REGISTRY: dict[str, LossSpec] = {}


def register(
    name: str,
    *,
    kind: str,
    metrics: tuple[str, ...] = (),
    check: Callable[[dict[str, Any]], None] | None = None,
    cls: type[LossTerm] | None = None,
    zero_advantage_rows_inert: bool = False,
    **defaults: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the loss term ``name`` of ``kind`` (see :data:`KINDS`).

    A policy loss is ``fn(tokens: Tokens, **params) -> (loss, metrics)``; an entropy term is
    ``fn(entropy, *, coef) -> term``, ``entropy`` the aggregated token entropy. ``defaults`` are
    the parameters and their default values; ``check`` validates a full parameter dict.
    """
    _check_kind(kind)

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        entry = LossSpec(
            name=name, kind=kind, fn=fn, defaults=dict(defaults), check=check, cls=cls, metrics=tuple(metrics),
            zero_advantage_rows_inert=zero_advantage_rows_inert, summary=summary_of(cls or fn),
        )
        enter(_REGISTRY, entry, noun="loss term")
        return fn

    return wrap


def available(kind: str | None = None) -> list[str]:
    """Registered loss terms (of ``kind``, when given), sorted."""
    if kind is not None:
        _check_kind(kind)
    return sorted(n for n, s in _REGISTRY.items() if kind is None or s.kind == kind)


def spec(name: str, kind: str | None = None) -> LossSpec:
    """The registry entry for ``name``; an unknown name, or one of another kind, raises ValueError."""
    names = available(kind)
    s = look_up(_REGISTRY, name, noun=_NOUN[kind], names=names)
    if kind is not None and s.kind != kind:
        raise ValueError(f"{name!r} is {KINDS[s.kind].split(':')[0]}, not {KINDS[kind].split(':')[0]}; "
                         f"available: {', '.join(names)}")
    return s


def policy_loss(name: str, **params: Any) -> PolicyLoss:
    """Build the policy loss registered as ``name`` with ``params`` over its defaults."""
    s = spec(name, "policy")
    return (s.cls or PolicyLoss)(s, params)  # type: ignore[return-value]


def entropy_term(name: str, **params: Any) -> EntropyTerm:
    """Build the entropy term registered as ``name`` with ``params`` over its defaults."""
    s = spec(name, "entropy")
    return (s.cls or EntropyTerm)(s, params)  # type: ignore[return-value]


def from_spec(text: str, kind: str, **params: Any) -> LossTerm:
    """Build the term a spec names (``ppo_clip:clip_ratio_high=0.28``); ``params`` add to the
    spec's (a clash is an error). Errors quote the spec."""
    _check_kind(kind)
    what = _NOUN[kind]
    name, given = parse_spec(text, what=what)
    build = policy_loss if kind == "policy" else entropy_term
    try:
        return build(name, **merge_params(given, params))
    except ValueError as exc:
        raise ValueError(f"{what} spec {text!r}: {exc}") from None


@dataclass
class LossTerm:
    """A registered loss term with its parameters bound. Stateless unless a subclass says otherwise."""

    spec: LossSpec
    params: dict[str, Any]

    def __post_init__(self) -> None:
        self.params = bind(repr(self.spec.name), self.spec.defaults, self.params)
        if self.spec.check is not None:
            self.spec.check(self.params)

    @property
    def name(self) -> str:
        return self.spec.name

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        refuse_state(repr(self.name), state)

    def __repr__(self) -> str:
        return call_repr(type(self).__name__, self.name, self.params)


class PolicyLoss(LossTerm):
    """A policy loss: call it on a batch of response tokens to get ``(loss, metrics)``.

    Args (of the call):
        log_prob: (B, T) log-probability of each response token under the policy being updated
            (differentiable).
        old_log_prob: (B, T) the same under the policy that sampled the tokens.
        advantages: (B,) one advantage per response, or (B, T) one per token.
        mask: (B, T) bool (or 0/1), True on the response tokens.
        agg: how the token losses become one scalar (:data:`AGGREGATIONS`).
        tokens, sequences, horizon: the normalisers of :func:`aggregate`, for part of a batch.
        generator: the random draws of a loss that makes any (Clip-Cov); None uses torch's global
            generator, as verl does.

    Returns:
        ``(loss, metrics)``: a scalar tensor and the floats named in ``spec.metrics``.
    """

    def __call__(
        self,
        log_prob: torch.Tensor,
        old_log_prob: torch.Tensor,
        advantages: torch.Tensor,
        mask: torch.Tensor,
        *,
        agg: str = "token-mean",
        tokens: float | None = None,
        sequences: float | None = None,
        horizon: float | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        batch = token_batch(log_prob, old_log_prob, advantages, mask, agg=agg, tokens=tokens, sequences=sequences,
                        horizon=horizon, generator=generator)
        return self.spec.fn(batch, **self.params)


class EntropyTerm(LossTerm):
    """An entropy term: call it on the token entropies to get ``(term, metrics)``; add the term to
    the policy loss. ``coefficient`` is the one this step applies; a trainer calls
    :meth:`observe` with the measured entropy after each optimizer step (a constant coefficient
    ignores it)."""

    @property
    def coefficient(self) -> float:
        return float(self.params["coef"])

    def __call__(
        self,
        entropy: torch.Tensor,
        mask: torch.Tensor,
        *,
        agg: str = "token-mean",
        tokens: float | None = None,
        sequences: float | None = None,
        horizon: float | None = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        entropy = as_matrix(entropy, "entropy")
        mask = as_mask(mask, entropy, "entropy")
        check_finite_on(entropy, mask, "entropy")
        h = aggregate(entropy, mask, agg, tokens=tokens, sequences=sequences, horizon=horizon)
        coef = self.coefficient
        return self.spec.fn(h, coef=coef), {"entropy": float(h.detach()), "entropy_coef": coef}

    def observe(self, entropy: float) -> None:
        """Feed the mean token entropy measured over one optimizer step's tokens (in nats)."""
        _check_entropy(entropy)


class AdaptiveEntropy(EntropyTerm):
    """TRL's adaptive entropy coefficient: an entropy bonus whose weight steers toward a target entropy.

    TRL's ``use_adaptive_entropy`` (Skywork-OR1's rule). Its state is the coefficient c and the
    entropy H measured at the last optimizer step. The coefficient a step applies is c when
    H <= target and 0 otherwise (0 before the first measurement); after the step, :meth:`observe`
    with the step's entropy moves c by :func:`adaptive_entropy_coef`. ``state_dict`` holds c and
    H, as TRL's checkpoint does (``entropy_ctrl_state.json``).

    fade's extension, ``target_ratio`` (in place of ``target``): the target is ``target_ratio``
    times the first entropy observed, as FADE's ``h_star_ratio`` sets its H*; the resolved target
    is then part of the state (``state_dict()["target"]``, None before the first observation).
    """

    def __post_init__(self) -> None:
        given = dict(self.params)
        super().__post_init__()
        if self.params["target_ratio"] is not None and "target" in given:
            raise ValueError(f"give target or target_ratio, not both: target={given['target']!r} is an absolute "
                             f"entropy, target_ratio={given['target_ratio']!r} a share of the first one observed")
        if self.relative:
            del self.params["target"]  # resolved at the first observation; a spec of the term reads back
        self.coef = float(self.params["coef"])
        self.last_entropy: float | None = None
        self.target: float | None = None if self.relative else float(self.params["target"])

    @property
    def relative(self) -> bool:
        """Whether the target is a share of the first observed entropy (``target_ratio``)."""
        return self.params["target_ratio"] is not None

    @property
    def coefficient(self) -> float:
        on = self.last_entropy is not None and self.target is not None and self.last_entropy <= self.target
        return self.coef if on else 0.0

    def observe(self, entropy: float) -> None:
        h = _check_entropy(entropy)
        p = self.params
        if self.target is None:
            self.target = p["target_ratio"] * h
        self.coef = adaptive_entropy_coef(self.coef, h, target=self.target, delta=p["delta"], coef_min=p["coef_min"],
                                          coef_max=p["coef_max"])
        self.last_entropy = h

    def _state_keys(self) -> tuple[str, ...]:
        return ("coef", "last_entropy", "target") if self.relative else ("coef", "last_entropy")

    def state_dict(self) -> dict[str, Any]:
        state = {"coef": self.coef, "last_entropy": self.last_entropy}
        return {**state, "target": self.target} if self.relative else state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        keys = self._state_keys()
        if set(state) != set(keys):
            names = ", ".join(map(repr, keys[:-1])) + f" and {keys[-1]!r}"
            raise ValueError(f"{self.name!r} state must hold {names}, got keys {sorted(state)}")
        coef, last = state["coef"], state["last_entropy"]
        if not in_range(coef):
            raise ValueError(f"{self.name!r} state: coef must be a finite number, got {coef!r}")
        target = self.target
        if self.relative:
            target = state["target"]
            if (target is None) != (last is None) or not (target is None or in_range(target, low=0.0)):
                raise ValueError(f"{self.name!r} state: target must be an entropy >= 0 set with the first "
                                 f"measurement (None before it), got target={target!r}, last_entropy={last!r}")
        self.coef = float(coef)
        self.last_entropy = None if last is None else _check_entropy(last)
        self.target = None if target is None else float(target)


def adaptive_entropy_coef(
    coef: float, entropy: float, *, target: float, delta: float, coef_min: float, coef_max: float
) -> float:
    """One step of the adaptive entropy coefficient (Skywork-OR1, arXiv 2505.22312, as TRL applies it):

        c <- min(c + delta, coef_max)   if H <= target
        c <- max(c - delta, coef_min)   otherwise

    with H the mean token entropy of the optimizer step just taken. Source: TRL 1.16,
    ``GRPOTrainer._compute_loss`` (``use_adaptive_entropy``).
    """
    if entropy <= target:
        return min(coef + delta, coef_max)
    return max(coef - delta, coef_min)


# -- the policy losses ---------------------------------------------------------------------------


def _check_clip(params: dict[str, Any]) -> None:
    require(params, "clip_ratio_low", low=0.0, high=1.0, what="a number in [0, 1] (the ratio is kept above 1 - it)")
    require(params, "clip_ratio_high", low=0.0, what="a finite number >= 0 (the ratio is kept below 1 + it)")


def _check_ppo_clip(params: dict[str, Any]) -> None:
    _check_clip(params)
    if params["clip_ratio_c"] is not None:
        require(params, "clip_ratio_c", low=1.0, low_open=True,
                 what="a finite number > 1 (dual clip's bound, verl's requirement), or None for no dual clip")


@register("ppo_clip", kind="policy", check=_check_ppo_clip, metrics=("clip_fraction", "clip_fraction_lower", "ppo_kl"),
          zero_advantage_rows_inert=True, clip_ratio_low=0.2, clip_ratio_high=0.2, clip_ratio_c=3.0)
def ppo_clip(
    t: Tokens, *, clip_ratio_low: float, clip_ratio_high: float, clip_ratio_c: float | None
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate with the dual clip: verl's ``vanilla`` policy loss.

    Per token, with r = exp(clamp(log_prob - old_log_prob, -20, 20)) and advantage A:

        l = max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high))
        l = min(l, -A c)   where A < 0 (the dual clip, c = ``clip_ratio_c`` > 1; None: no dual clip)

    and the loss is l aggregated (:func:`aggregate`). With ``clip_ratio_high`` above
    ``clip_ratio_low`` it is DAPO's clip-higher (arXiv 2503.14476: eps_low 0.2, eps_high 0.28),
    which leaves a rare token more room to gain probability. Metrics, token means over the mask:
    ``clip_fraction`` (tokens where the clipped term is the larger, verl's ``pg_clipfrac``),
    ``clip_fraction_lower`` (tokens where the dual clip binds, ``pg_clipfrac_lower``) and
    ``ppo_kl`` (the mean of old_log_prob - log_prob, ``ppo_kl``).

    Sources: PPO, arXiv 1707.06347; dual clip, arXiv 1912.09729; verl 0.9.1,
    trainer/ppo/core_algos.py ``compute_policy_loss_vanilla`` (defaults of its ``ActorConfig``:
    clip_ratio_low = clip_ratio_high = 0.2, clip_ratio_c = 3).
    """
    log_ratio = torch.clamp(t.log_prob - t.old_log_prob, min=-20.0, max=20.0)
    ratio = torch.exp(log_ratio)
    a = t.advantages
    surrogate = -a * ratio
    clipped = -a * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    loss = torch.maximum(surrogate, clipped)
    metrics = {"clip_fraction": t.mean(clipped > surrogate), "clip_fraction_lower": 0.0, "ppo_kl": t.mean(-log_ratio)}
    if clip_ratio_c is not None:
        floor = -a * clip_ratio_c
        metrics["clip_fraction_lower"] = t.mean((loss > floor) & (a < 0))
        loss = torch.where(a < 0, torch.minimum(floor, loss), loss)
    return t.reduce(loss), metrics


def _check_clip_cov(params: dict[str, Any]) -> None:
    _check_clip(params)
    require(params, "clip_cov_ratio", low=0.0, high=1.0, low_open=True, what="a number in (0, 1] (the share of tokens)")
    require(params, "clip_cov_lb", what="a finite number")
    require(params, "clip_cov_ub", what="a finite number")
    if not params["clip_cov_lb"] < params["clip_cov_ub"]:
        raise ValueError(f"clip_cov_lb must be below clip_cov_ub (the covariance band a token is drawn from), got "
                         f"clip_cov_lb={params['clip_cov_lb']!r}, clip_cov_ub={params['clip_cov_ub']!r}")


@register("clip_cov", kind="policy", check=_check_clip_cov, metrics=("clip_fraction", "cov_clip_fraction", "ppo_kl"),
          clip_ratio_low=0.2, clip_ratio_high=0.2, clip_cov_ratio=0.0002, clip_cov_lb=1.0, clip_cov_ub=5.0)
def clip_cov(
    t: Tokens, *, clip_ratio_low: float, clip_ratio_high: float, clip_cov_ratio: float, clip_cov_lb: float,
    clip_cov_ub: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clip-Cov: PPO's clipped surrogate with the gradient of a few high-covariance tokens cut.

    Per token, with r = exp(log_prob - old_log_prob) (no clamp, no dual clip) and advantage A,
    the clipped surrogate l = max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high)) and the centred
    covariance term cov = (A - mean A)(log_prob - mean log_prob) (means over the mask). Among the
    tokens the ratio clip leaves alone whose cov lies strictly inside (``clip_cov_lb``,
    ``clip_cov_ub``), max(1, floor(``clip_cov_ratio`` N)) are drawn uniformly at random (N the
    tokens under the mask; all of them when fewer) and their l is set to 0, so they carry no
    gradient. The loss is l aggregated. Metrics: ``cov_clip_fraction`` (the share of tokens cut,
    verl's ``pg_clipfrac``), ``ppo_kl`` (mean of old_log_prob - log_prob) and ``clip_fraction``
    (the share the ratio clip binds on, defined as in ``ppo_clip``; fade's, not verl's).

    Sources: Cui et al., "The Entropy Mechanism of Reinforcement Learning for Reasoning Language
    Models", arXiv 2505.22617; verl 0.9.1, trainer/ppo/core_algos.py ``compute_policy_loss_clip_cov``
    (defaults of its ``PolicyLossConfig``; its 7B recipe sets clip_ratio_low = clip_ratio_high = 1).
    """
    log_ratio = t.log_prob - t.old_log_prob
    ratio = torch.exp(log_ratio)
    a = t.advantages
    surrogate = -a * ratio
    clipped = -a * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    by_ratio = (clipped > surrogate) & t.mask
    # The draw is discontinuous in cov, so cov is computed as verl computes it (same reductions).
    lp = t.log_prob.detach()
    cov = (a - t.mean_of(a)) * (lp - t.mean_of(lp))
    where = torch.nonzero(t.mask & ~by_ratio & (cov > clip_cov_lb) & (cov < clip_cov_ub))
    keep = torch.ones(a.shape, dtype=a.dtype, device=a.device)
    if len(where) > 0:
        budget = max(int(clip_cov_ratio * t.count), 1)
        device = t.generator.device if t.generator is not None else "cpu"
        order = torch.randperm(len(where), generator=t.generator, device=device)
        where = where[order[: min(budget, len(where))].to(where.device)]
        keep[where[:, 0], where[:, 1]] = 0
    loss = torch.maximum(surrogate, clipped) * keep
    metrics = {"clip_fraction": t.mean(by_ratio), "cov_clip_fraction": t.mean(keep == 0), "ppo_kl": t.mean(-log_ratio)}
    return t.reduce(loss), metrics


def _check_kl_cov(params: dict[str, Any]) -> None:
    require(params, "kl_cov_ratio", low=0.0, high=1.0, low_open=True, what="a number in (0, 1] (the share of tokens)")
    require(params, "ppo_kl_coef", low=0.0, what="a finite number >= 0")


@register("kl_cov", kind="policy", check=_check_kl_cov, metrics=("ppo_kl_abs",), kl_cov_ratio=0.0002, ppo_kl_coef=0.1)
def kl_cov(t: Tokens, *, kl_cov_ratio: float, ppo_kl_coef: float) -> tuple[torch.Tensor, dict[str, float]]:
    """KL-Cov: the unclipped surrogate, with a KL penalty on the highest-covariance tokens.

    Per token, with r = exp(log_prob - old_log_prob) and advantage A, l = -A r. Over the N tokens
    under the mask, cov = (A - mean A)(log_prob - mean log_prob); the max(1, floor(``kl_cov_ratio``
    N)) tokens of largest cov get l = -A r + ``ppo_kl_coef`` |log_prob - old_log_prob| instead.
    The loss is l aggregated; there is no ratio clip. Metric: ``ppo_kl_abs``, the mean of
    |log_prob - old_log_prob| (what verl's kl_cov reports as ``ppo_kl``).

    Sources: Cui et al., arXiv 2505.22617; verl 0.9.1, trainer/ppo/core_algos.py
    ``compute_policy_loss_kl_cov`` (defaults of its ``PolicyLossConfig``: kl_cov_ratio 0.0002,
    ppo_kl_coef 0.1; its 7B recipe uses kl_cov_ratio 0.002, ppo_kl_coef 1).
    """
    log_ratio = t.log_prob - t.old_log_prob
    abs_kl = log_ratio.abs()
    ratio = torch.exp(log_ratio)
    a = t.advantages
    surrogate = -a * ratio
    penalised = -a * ratio + ppo_kl_coef * abs_kl
    chosen = torch.zeros(t.mask.shape, dtype=torch.bool, device=t.mask.device)
    if t.count > 0:
        # verl ranks on the CPU; the same reductions there give the same choice among near-ties.
        adv = a.detach()[t.mask].cpu()
        lp = t.log_prob.detach()[t.mask].cpu()
        cov = (adv - adv.mean()) * (lp - lp.mean())
        top = torch.topk(cov, max(1, int(len(cov) * kl_cov_ratio)), largest=True).indices
        positions = torch.nonzero(t.mask.reshape(-1), as_tuple=True)[0]
        chosen.view(-1)[positions[top.to(positions.device)]] = True
    loss = torch.where(chosen, penalised, surrogate)
    return t.reduce(loss), {"ppo_kl_abs": t.mean(abs_kl)}


# -- the entropy terms ---------------------------------------------------------------------------


def _check_bonus(params: dict[str, Any]) -> None:
    require(params, "coef", what="a finite number (the weight of the entropy in the loss)")


@register("entropy_bonus", kind="entropy", check=_check_bonus, metrics=("entropy", "entropy_coef"), coef=0.0)
def entropy_bonus(entropy: torch.Tensor, *, coef: float) -> torch.Tensor:
    """The entropy bonus: the term -c H added to the policy loss, H the aggregated token entropy.

    With c > 0 minimising the loss raises the entropy. H is aggregated as the policy loss is
    (:func:`aggregate`, the same mode and normalisers): verl's sign and aggregation, ``ppo_loss``
    subtracting ``entropy_coeff * agg_loss(entropy, response_mask, loss_agg_mode)``. TRL's
    ``entropy_coef`` is the same term with H always the token mean. The metrics are H
    (``entropy``) and the coefficient applied (``entropy_coef``).

    Sources: verl 0.9.1, workers/utils/losses.py ``ppo_loss`` (``entropy_coeff``, default 0);
    TRL 1.16, ``GRPOConfig.entropy_coef``.
    """
    return -coef * entropy


def _check_adaptive(params: dict[str, Any]) -> None:
    for key in ("coef", "coef_min", "coef_max"):
        require(params, key, what="a finite number")
    require(params, "target", low=0.0, what="a finite entropy >= 0 (nats per token)")
    if params["target_ratio"] is not None:
        require(params, "target_ratio", low=0.0, low_open=True,
                 what="a finite number > 0 (the target as a share of the first entropy), or None")
    require(params, "delta", low=0.0, what="a finite number >= 0 (the coefficient's step)")
    lo, hi, c = params["coef_min"], params["coef_max"], params["coef"]
    if not lo <= c <= hi:
        raise ValueError(f"coef (the initial coefficient) must lie in [coef_min, coef_max], got coef={c!r}, "
                         f"coef_min={lo!r}, coef_max={hi!r}")


register("adaptive_entropy", kind="entropy", check=_check_adaptive, cls=AdaptiveEntropy,
         metrics=("entropy", "entropy_coef"), target=0.2, coef=0.0, delta=0.005, coef_min=0.0, coef_max=1.0,
         target_ratio=None)(entropy_bonus)


# -- validation ----------------------------------------------------------------------------------


def _check_entropy(value: Any) -> float:
    try:
        h = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"entropy must be a number (mean token entropy in nats, >= 0), got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(h) or h < 0:
        raise ValueError(f"entropy must be the mean token entropy in nats, a finite number >= 0; got {value!r}")
    return h
