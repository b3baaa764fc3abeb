"""The estimator registry: names, parameters and the callable objects users hold.

An advantage estimator is a pure function of a batch of rewards and their grouping (plus named
per-rollout inputs such as response lengths), with parameters bound at construction. A stateful
estimator (FADE) adds training signals (``observe``) and explicit state (``state_dict``). Every
estimator is registered under a name with its default parameters, the per-rollout inputs it
needs, and the rewards it accepts; ``fade.estimator(name, **params)`` builds one.

The mechanism is generic and shared: the policy losses and entropy terms (``fade.losses``) are
entered, looked up and bound to their parameters by the same functions (:func:`enter`,
:func:`look_up`, :func:`bind`), so every registry of fade refuses a name or a parameter alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
import torch

from .segments import Groups, as_groups, as_rewards, as_tensor, check_finite, first_non_finite
from .validation import finite

__all__ = [
    "INPUTS",
    "SUCCESS_OPTIONS",
    "Estimator",
    "EstimatorSpec",
    "advantages",
    "available",
    "check_inputs",
    "check_real_valued",
    "estimator",
    "missing_inputs",
    "register",
    "spec",
]

#: Per-rollout inputs an estimator may take as keyword arguments, and what each one is.
INPUTS: dict[str, str] = {
    "lengths": "response length of each rollout in tokens (non-negative; an empty response weighs nothing)",
    "baseline_rewards": "reward of a baseline response for each rollout's prompt (e.g. ReMax's greedy decode)",
}

RewardKind = str  # "any" | "unit" (each in [0, 1]) | "binary" (each 0 or 1)

#: The parameters of every estimator that reads its rewards as successes (rewards "unit" or
#: "binary": FADE, maxrl, power, passk, ...): how a real-valued reward (a reward model's score,
#: partial credit) becomes one, chosen at construction. ``success_threshold=t``: a reward >= t is a
#: success (1), anything else a failure (0). ``reward_min=lo, reward_max=hi``: rewards are clipped to
#: [lo, hi] and mapped linearly onto [0, 1], in float64 so that hi maps to exactly 1 in every dtype
#: (binary estimators refuse it: it does not make 0 or 1; hi - lo must be a finite float64).
#: With none set, the rewards must already be in [0, 1] (0 or 1 for binary estimators).
SUCCESS_OPTIONS: dict[str, None] = {"success_threshold": None, "reward_min": None, "reward_max": None}

_SUCCESS_HINT = (
    "say what counts as a success with success_threshold=T (a reward >= T is a success) or "
    "reward_min=LO, reward_max=HI (rewards clipped to [LO, HI] and mapped onto [0, 1])"
)


@dataclass(frozen=True)
class EstimatorSpec:
    """What the registry knows about one estimator."""

    name: str
    fn: Callable[..., torch.Tensor]
    defaults: Mapping[str, Any]
    needs: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    centred: bool = False
    rewards: RewardKind = "any"
    check: Callable[[dict[str, Any]], None] | None = None
    cls: type[Estimator] | None = None
    summary: str = ""
    #: How a stateful estimator schedules its parameters from training signals (FADE's variants:
    #: "feedback", "entropy", "decay", "fixed"); None for a stateless one. The class reads it, so a
    #: variant describes itself instead of being looked up by name.
    schedule: str | None = None
    #: The parameter that is the run's length in steps (fade_decay's ``total_steps``): a runner that
    #: knows the length fills it when it is left unset. None: the estimator needs no run length.
    run_length: str | None = None

    @property
    def stateful(self) -> bool:
        """Whether the estimator carries state across batches (FADE and its variants): such an
        estimator is built from its own class (``cls``) and is fed signals through ``observe``."""
        return self.cls is not None

    @property
    def inputs(self) -> tuple[str, ...]:
        """The per-rollout inputs the estimator weighs with: those it ``needs``, then those it ``uses``.
        :func:`fade.weigh` gives it exactly these; :func:`check_inputs` refuses a missing need before a run."""
        return (*self.needs, *self.uses)


# -- the generic mechanism -----------------------------------------------------------------------


class Entry(Protocol):
    """What a registry holds: a spec with its name and the function registered under it."""

    @property
    def name(self) -> str: ...

    @property
    def fn(self) -> Callable[..., Any]: ...


E = TypeVar("E", bound=Entry)


def enter(entries: dict[str, E], entry: E, *, noun: str) -> None:
    """Put ``entry`` in ``entries`` under its name. The same function registered again (a module
    imported twice) replaces its entry; another function under a taken name is refused."""
    if entry.name in entries and entries[entry.name].fn is not entry.fn:
        raise ValueError(f"{noun} {entry.name!r} is already registered")
    entries[entry.name] = entry


def look_up(entries: Mapping[str, E], name: Any, *, noun: str, names: list[str]) -> E:
    """The entry registered as ``name``; an unknown one raises ValueError listing ``names``."""
    if not isinstance(name, str) or name not in entries:
        raise ValueError(f"unknown {noun} {name!r}; available: {', '.join(names)}")
    return entries[name]


def bind(who: str, defaults: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` over ``defaults``; a parameter ``defaults`` lacks is refused, naming ``who``
    and listing the accepted ones with their defaults."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        accepted = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "none"
        raise ValueError(f"{who} got unknown parameter(s) {unknown}; accepted (with defaults): {accepted}")
    return {**defaults, **params}


def summary_of(obj: Any) -> str:
    """The first line of ``obj``'s docstring: a registered entry's summary."""
    doc = (obj.__doc__ or "").strip().splitlines()
    return doc[0] if doc else ""


def refuse_state(who: str, state: Mapping[str, Any]) -> None:
    """A stateless entry loads only the empty state."""
    if state:
        raise ValueError(f"{who} is stateless: expected an empty state, got keys {sorted(state)}")


def call_repr(head: str, name: str, params: Mapping[str, Any]) -> str:
    """``head('name', k=v, ...)``: how a bound entry prints."""
    args = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return f"{head}({name!r}{', ' if args else ''}{args})"


# -- the estimators ------------------------------------------------------------------------------


_REGISTRY: dict[str, EstimatorSpec] = {}


def register(
    name: str,
    *,
    needs: tuple[str, ...] = (),
    uses: tuple[str, ...] = (),
    centred: bool = False,
    rewards: RewardKind = "any",
    check: Callable[[dict[str, Any]], None] | None = None,
    cls: type[Estimator] | None = None,
    schedule: str | None = None,
    run_length: str | None = None,
    **defaults: Any,
) -> Callable[[Callable[..., torch.Tensor]], Callable[..., torch.Tensor]]:
    """Register ``fn(rewards, groups, **params, **inputs) -> advantages`` under ``name``.

    Args:
        needs: per-rollout inputs that must be given (names from :data:`INPUTS`).
        uses: per-rollout inputs that are used when given.
        centred: advantages have zero mean within every group (when rollouts weigh equally).
        rewards: which rewards the formula is defined for: "any", "unit" or "binary". The last two
            add the parameters of :data:`SUCCESS_OPTIONS`.
        check: validates a full parameter dict, raising ValueError.
        cls: the :class:`Estimator` subclass to build (stateful estimators).
        schedule: how that class schedules this variant's parameters (see :class:`EstimatorSpec`).
        run_length: the parameter that is the run's length in steps, one of ``defaults``.
        **defaults: the parameters and their default values.
    """
    if rewards not in ("any", "unit", "binary"):
        raise ValueError(f"rewards must be 'any', 'unit' or 'binary', got {rewards!r}")
    for key in (*needs, *uses):
        if key not in INPUTS:
            raise ValueError(f"unknown per-rollout input {key!r}; known: {sorted(INPUTS)}")

    if run_length is not None and run_length not in defaults:
        raise ValueError(
            f"estimator {name!r}: run_length {run_length!r} is not one of its parameters {sorted(defaults)}"
        )
    clash = sorted(set(defaults) & set(SUCCESS_OPTIONS))
    if clash:
        raise ValueError(f"estimator {name!r}: parameter(s) {clash} are reserved for the success options")
    if rewards != "any":
        defaults = {**defaults, **SUCCESS_OPTIONS}

    def wrap(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        entry = EstimatorSpec(
            name=name,
            fn=fn,
            defaults=dict(defaults),
            needs=tuple(needs),
            uses=tuple(uses),
            centred=centred,
            rewards=rewards,
            check=check,
            cls=cls,
            summary=summary_of(fn),
            schedule=schedule,
            run_length=run_length,
        )
        enter(_REGISTRY, entry, noun="estimator")
        return fn

    return wrap


def available() -> list[str]:
    """Registered estimator names, sorted."""
    return sorted(_REGISTRY)


def spec(name: str) -> EstimatorSpec:
    """The registry entry for ``name``; unknown names raise ValueError listing the known ones."""
    return look_up(_REGISTRY, name, noun="estimator", names=available())


def check_inputs(
    est: Estimator | EstimatorSpec,
    available: Iterable[str],
    *,
    where: str,
    who: str | None = None,
    called: Mapping[str, str] | None = None,
) -> None:
    """Refuse, before any work starts, an estimator that needs a per-rollout input the caller cannot give.

    ``available`` names the inputs of :data:`INPUTS` the caller can give :func:`fade.weigh`. For the
    first input the estimator needs that is not among them, raises ValueError ``"{who} needs
    {called[key]}, which {where}"``: ``who`` is how the caller names the estimator (default
    ``estimator 'NAME'``), ``called`` how it names each input (its flag, its column, the engine's
    tensor; default ``KEY= (what INPUTS says it is)``), ``where`` why it lacks it ("GRPOTrainer does
    not generate"). An input it only ``uses`` is weighed without when missing, so it is never refused.
    """
    s = est if isinstance(est, EstimatorSpec) else est.spec
    for key in sorted(called or {}):
        if key not in INPUTS:
            raise ValueError(f"unknown per-rollout input {key!r}; known: {sorted(INPUTS)}")
    for key in missing_inputs(s, available):
        what = (called or {}).get(key) or f"{key}= ({INPUTS[key]})"
        raise ValueError(f"{who or f'estimator {s.name!r}'} needs {what}, which {where}")


def missing_inputs(est: Estimator | EstimatorSpec, available: Iterable[str]) -> tuple[str, ...]:
    """The per-rollout inputs the estimator needs that are not among ``available`` (names of :data:`INPUTS`,
    an unknown one refused): empty where the caller can weigh with it."""
    s = est if isinstance(est, EstimatorSpec) else est.spec
    given = set(available)
    for key in sorted(given):
        if key not in INPUTS:
            raise ValueError(f"unknown per-rollout input {key!r}; known: {sorted(INPUTS)}")
    return tuple(key for key in s.needs if key not in given)


def check_real_valued(est: Estimator, why: str | None, *, who: str, what: str = "reward", hint: str) -> None:
    """Refuse, before a run, an estimator that reads each reward as a success in [0, 1] with no success
    option set (:data:`SUCCESS_OPTIONS`) where the caller's rewards can leave [0, 1]: ``why`` says how
    (a reward model's scores, a KL penalty in the reward, weights whose sum can), None where they
    cannot. Raises ValueError ``"{who} reads each {what} as a success in [0, 1], but {why}: {hint}"``,
    ``hint`` saying how the caller sets a success option."""
    if why is None or est.spec.rewards == "any" or any(est.params[k] is not None for k in SUCCESS_OPTIONS):
        return
    raise ValueError(f"{who} reads each {what} as a success in [0, 1], but {why}: {hint}")


def missing_input(name: str, key: str) -> str:
    """The refusal of a call of estimator ``name`` without the input ``key`` it needs."""
    return f"estimator {name!r} needs {key}= ({INPUTS[key]}): pass one value per rollout"


def estimator(name: str, **params: Any) -> Estimator:
    """Build the estimator registered as ``name`` with ``params`` over its defaults."""
    s = spec(name)
    cls = s.cls or Estimator
    return cls(s, params)


def advantages(
    name: str,
    rewards: torch.Tensor | np.ndarray | list[float],
    groups: int | torch.Tensor | np.ndarray | list,
    *,
    lengths: Any = None,
    baseline_rewards: Any = None,
    **params: Any,
) -> torch.Tensor:
    """One-shot form of ``fade.estimator(name, **params)(rewards, groups, ...)``."""
    return estimator(name, **params)(rewards, groups, lengths=lengths, baseline_rewards=baseline_rewards)


@dataclass
class Estimator:
    """A registered advantage formula with its parameters bound.

    Call it as ``est(rewards, groups, lengths=..., baseline_rewards=...)`` to get one advantage per
    rollout (same dtype and device as the rewards). Stateless estimators ignore ``observe`` and
    have empty state; stateful ones (FADE) override :meth:`observe`, :meth:`state_dict`,
    :meth:`load_state_dict`, and :meth:`compute_at_state` beside :meth:`compute`, so that
    :meth:`peek` gives what a call would without advancing the state.

    ``last`` holds what the latest call scheduled (empty for stateless estimators), so a trainer
    can log it.
    """

    spec: EstimatorSpec
    params: dict[str, Any]
    last: dict[str, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.params = bind(f"estimator {self.spec.name!r}", self.spec.defaults, self.params)
        if self.spec.rewards != "any":
            _check_success_options(self.spec, self.params)
        if self.spec.check is not None:
            self.spec.check(self.params)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def stateful(self) -> bool:
        """Whether the estimator carries state across batches (:attr:`EstimatorSpec.stateful`)."""
        return self.spec.stateful

    @property
    def reads_entropy(self) -> bool:
        """Whether the advantage depends on the entropy fed through ``observe(entropy=...)``."""
        return False

    @property
    def awaiting_entropy(self) -> bool:
        """True while the estimator reads entropy and has been fed none: a trainer should feed it."""
        return False

    def __call__(
        self,
        rewards: torch.Tensor | np.ndarray | list[float],
        groups: int | torch.Tensor | np.ndarray | list,
        *,
        lengths: Any = None,
        baseline_rewards: Any = None,
    ) -> torch.Tensor:
        r, g, inputs = self._read(rewards, groups, lengths=lengths, baseline_rewards=baseline_rewards)
        out = self.compute(r, g, **inputs)
        _check_output(self.name, out, r)
        return out

    def peek(
        self,
        rewards: torch.Tensor | np.ndarray | list[float],
        groups: int | torch.Tensor | np.ndarray | list,
        *,
        lengths: Any = None,
        baseline_rewards: Any = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """What a call would give, leaving the estimator as it is: the advantages, and the record
        the call would leave in ``last``.

        A stateless estimator's call changes nothing anyway; a stateful one (FADE) weighs the batch
        at its present state, as a call would, without advancing it: how to score an evaluation
        batch, or probe an estimator, mid-run.
        """
        r, g, inputs = self._read(rewards, groups, lengths=lengths, baseline_rewards=baseline_rewards)
        out, record = self.compute_at_state(r, g, **inputs)
        _check_output(self.name, out, r)
        return out, record

    def _read(
        self, rewards: Any, groups: Any, **given: Any
    ) -> tuple[torch.Tensor, Groups, dict[str, torch.Tensor]]:
        """The validated rewards, as the formula reads them (:meth:`as_success`), the grouping, and
        the per-rollout inputs."""
        r = as_rewards(rewards)
        g = as_groups(groups, r.numel(), r.device)
        inputs = self._inputs(r, **given)
        r = self.as_success(r)
        _check_reward_kind(self.spec, r)
        return r, g, inputs

    def as_success(self, rewards: torch.Tensor) -> torch.Tensor:
        """The rewards as the formula reads them: with ``success_threshold`` 1 for a reward at or
        above it and 0 otherwise; with ``reward_min``/``reward_max`` clipped to that range and mapped
        onto [0, 1]; unchanged otherwise (and for estimators that take any reward)."""
        if self.spec.rewards == "any":
            return rewards
        t, lo, hi = (self.params[k] for k in SUCCESS_OPTIONS)
        if t is not None:
            return (rewards >= t).to(rewards.dtype)
        if lo is not None:
            # In float64, whatever the rewards' dtype: there x <= hi gives x - lo <= hi - lo (rounding
            # is monotone), so a reward at the top of the range maps to 1 exactly and none above it,
            # where float32 arithmetic can round (hi - lo) / (hi - lo) to 1.0000001. Values in [0, 1]
            # stay in [0, 1] when cast back.
            x = rewards.to(torch.float64).clamp(lo, hi)
            return ((x - lo) / (hi - lo)).to(rewards.dtype)
        return rewards

    @property
    def formula_params(self) -> dict[str, Any]:
        """The parameters the formula takes: ``params`` less the success options."""
        return {k: v for k, v in self.params.items() if k not in SUCCESS_OPTIONS}

    def compute(self, rewards: torch.Tensor, groups: Groups, **inputs: torch.Tensor) -> torch.Tensor:
        """The formula on validated inputs. Subclasses with state override this."""
        return self.spec.fn(rewards, groups, **self.formula_params, **inputs)

    def compute_at_state(
        self, rewards: torch.Tensor, groups: Groups, **inputs: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """:meth:`compute` without advancing any state: the advantages and the record the call would
        leave in ``last``. Subclasses with state override this too."""
        return self.compute(rewards, groups, **inputs), {}

    def observe(self, **signals: float) -> None:
        """Feed training signals (e.g. ``entropy=``). Stateless estimators validate and ignore them."""
        for key, value in signals.items():
            check_signal(key, value)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        refuse_state(f"estimator {self.name!r}", state)

    def _inputs(self, r: torch.Tensor, **given: Any) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        for key in self.spec.needs:
            if given.get(key) is None:
                raise ValueError(missing_input(self.name, key))
        for key in self.spec.inputs:
            value = given.get(key)
            if value is None:
                continue
            t = as_tensor(value, key).to(device=r.device, dtype=r.dtype)
            if t.dim() != 1 or t.numel() != r.numel():
                raise ValueError(f"{key} must have one value per rollout ({r.numel()}), got shape {tuple(t.shape)}")
            check_finite(t, key)
            if key == "lengths" and bool((t < 0).any()):
                raise ValueError(f"lengths must be non-negative, got minimum {t.min().item()}")
            out[key] = t
        return out

    def __repr__(self) -> str:
        return call_repr("fade.estimator", self.name, self.params)


def _check_output(name: str, adv: torch.Tensor, r: torch.Tensor) -> None:
    """Finite rewards must give finite advantages: the estimators compute in scaled form where
    an intermediate would overflow, so a non-finite value here is a true result beyond the dtype."""
    i = first_non_finite(adv)
    if i is not None:
        raise ValueError(
            f"estimator {name!r} gives advantage {adv[i].item()} at position {i} (reward {r[i].item()!r}): "
            f"the result exceeds the range of {adv.dtype} (max {torch.finfo(adv.dtype).max:.3g}); "
            "rescale the rewards or pass them as float64"
        )


def _check_success_options(s: EstimatorSpec, params: dict[str, Any]) -> None:
    """The success options of ``params`` make sense together and for the estimator."""
    for key in SUCCESS_OPTIONS:
        value = params[key]
        if isinstance(value, np.generic) and value.dtype.kind in "iuf":
            value = params[key] = value.item()
        if value is not None and not finite(value):
            raise ValueError(f"{key} must be a finite number or None, got {value!r}")
    t, lo, hi = (params[k] for k in SUCCESS_OPTIONS)
    if (lo is None) != (hi is None):
        raise ValueError(f"reward_min and reward_max are set together (the range mapped onto [0, 1]), got "
                         f"reward_min={lo!r}, reward_max={hi!r}")
    if lo is not None and not lo < hi:
        raise ValueError(f"reward_min must be below reward_max, got reward_min={lo!r}, reward_max={hi!r}")
    if lo is not None and not math.isfinite(float(hi) - float(lo)):
        raise ValueError(f"reward_max - reward_min must be a finite float64 (the width of the range mapped onto "
                         f"[0, 1]), got reward_min={lo!r}, reward_max={hi!r}, whose difference overflows")
    if t is not None and lo is not None:
        raise ValueError(f"estimator {s.name!r}: give success_threshold or reward_min/reward_max, not both")
    if lo is not None and s.rewards == "binary":
        raise ValueError(f"estimator {s.name!r} counts successes (rewards 0 or 1): a reward range maps onto [0, 1] "
                         "without making rewards 0 or 1; use success_threshold=T instead")


def _check_reward_kind(s: EstimatorSpec, r: torch.Tensor) -> None:
    if s.rewards == "any":
        return
    lo_t, hi_t = torch.aminmax(r)
    lo, hi = float(lo_t), float(hi_t)
    if lo < 0.0 or hi > 1.0:
        raise ValueError(
            f"estimator {s.name!r} expects rewards in [0, 1], got values in [{lo:.6g}, {hi:.6g}]: {_SUCCESS_HINT}"
        )
    # In [0, 1], r (1 - r) >= 0 with equality exactly at 0 and 1: one dot product checks binarity.
    if s.rewards == "binary" and float(torch.dot(r, 1 - r)) != 0.0:
        bad = r[(r != 0) & (r != 1)][0].item()
        raise ValueError(f"estimator {s.name!r} expects binary rewards (0 or 1), got {bad}: say what counts as a "
                         "success with success_threshold=T (a reward >= T is a success)")


#: Training signals ``observe`` accepts, and what each one is.
SIGNALS: dict[str, str] = {
    "entropy": "mean token entropy of the policy on the current (or last) batch, in nats, >= 0",
    "step": "the trainer's global step, an integer >= 0",
    "rank1_share": "rank-1 share of the output head's cumulative update, in [0, 1]",
}


def check_signal(key: str, value: Any) -> float:
    if key not in SIGNALS:
        raise ValueError(f"unknown training signal {key!r}; known: {', '.join(SIGNALS)}")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{key} must be a number ({SIGNALS[key]}), got {value!r}") from None
    ok = math.isfinite(x) and x >= 0
    if key == "step":
        ok = ok and x == int(x)
    if key == "rank1_share":
        ok = ok and x <= 1
    if not ok:
        raise ValueError(f"{key} must be the {SIGNALS[key]}; got {value!r}")
    return x
