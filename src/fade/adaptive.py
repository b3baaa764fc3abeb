"""FADE, Focal Advantage with Dynamic Entropy, and its ablations (docs/method.md, section 3).

FADE is the focal, sign-weighted advantage of :func:`fade.estimators.focal` with its two knobs
scheduled from training dynamics:

    A_i   = (1 - rbar)^(alpha - 1) (r_i - rbar)            if r_i >= rbar
    A_i   = (1 - rbar)^(alpha - 1) (r_i - rbar) / delta    if r_i <  rbar
    alpha = clip(3 (1 - p_hat) / (2 p_hat), 1, alpha_max)  difficulty, from the solve rate
    delta = clip(1 + H_hat - H_star, delta_min, 1)         sign, from the entropy

p_hat is an EMA of the batch solve rate, updated by every call before alpha is computed, so a
batch is weighed with its own solve rate already in p_hat. It starts at ``p_init``
(``p_start="p_init"``, the paper's reading and the default) or, with ``p_start="debiased"``, it
is corrected for its start as Adam corrects its moments: m_0 = 0, m_t = (1 - ema) m_{t-1} +
ema x_t, p_hat_t = m_t / (1 - (1 - ema)^t), so that the first batch's p_hat is its own solve
rate and ``p_init`` is only what p_hat reads before any batch. H_hat is an EMA of the mean token
entropy fed through ``observe(entropy=...)`` (starting at the first value); H_star the target,
``h_star`` or ``h_star_ratio`` times the first entropy. Until an entropy is observed delta stays
1. alpha = delta = 1 is exactly dr_grpo.

Registered variants: ``fade``; ``fade_alpha`` (delta fixed at 1); ``fade_delta`` (alpha fixed
at 1); ``fade_entropy_only`` (alpha also from entropy: alpha_max while the entropy is at its
initial value, falling linearly to 1 as it reaches H_star); ``fade_decay`` (no feedback: both
knobs follow log(1 + t) / log(1 + total_steps) from exploration, alpha_max and 1, to
exploitation, 1 and delta_min); ``fade_fixed`` (no feedback: both knobs follow a path written
in advance, ``path=NAME`` of :data:`FIXED_PATHS`, linear between its knots). Passing ``alpha=`` or
``delta=`` fixes that knob in any variant.

Beyond the paper, off by default: ``rank_guard=x`` holds delta at 1 while the observed
``rank1_share`` of the output head's cumulative update exceeds x.

The state (p_hat, H_hat, the first entropy, H_star, step, rank1_share, and the debiased start's
weight p_weight) is a frozen record, :class:`FadeState`, in optax's shape: pure functions start
it (:func:`init`), feed it signals (:func:`observe`), read the knobs from it (:func:`schedule`)
and move it past a batch (:func:`advance`, :func:`update`). :class:`FadeEstimator` holds one and
delegates to them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch

from .estimators import check_delta_value, focal
from .mass import decompose_grouped
from .registry import Estimator, check_signal, register
from .segments import Groups
from .validation import in_range, plain, require

__all__ = [
    "FIXED_PATHS", "P_STARTS", "SCHEDULE", "VARIANTS", "FadeEstimator", "FadeState", "advance", "fixed_knobs", "init",
    "observe", "schedule", "update",
]

#: The schedule FADE reports in ``last`` beside the batch's :data:`~fade.mass.DIAGNOSTICS`: what
#: trainers and the engine integrations log for it.
SCHEDULE = ("alpha", "delta", "p_hat", "h_hat", "h_star")


@dataclass(frozen=True)
class FadeState:
    """FADE's state between batches: all a resumed run needs to go on exactly as it would have.

    Built, it is valid: a field outside its range, or fields that contradict each other, raise
    ValueError naming the field, what it must be and the value given. Numpy numbers are accepted
    and stored as Python numbers. ``asdict`` of it is the estimator's ``state_dict``.
    """

    p_hat: float = field(metadata={"what": "the EMA of the batch solve rate, in [0, 1]", "high": 1.0})
    h_hat: float | None = field(default=None, metadata={"what": "the EMA of the mean token entropy, >= 0, or None"})
    h_first: float | None = field(default=None, metadata={"what": "the first observed entropy, >= 0, or None"})
    h_star: float | None = field(default=None, metadata={"what": "the entropy target, >= 0, or None"})
    step: int = field(default=0, metadata={"what": "an integer in [0, 2^63)"})
    rank1_share: float | None = field(
        default=None, metadata={"what": "the observed rank-1 share, in [0, 1], or None", "high": 1.0}
    )
    #: The weight the EMA has put on observed solve rates, 1 - (1 - ema)^t after t batches, under
    #: ``p_start="debiased"`` (p_hat is the EMA divided by it); None under ``p_start="p_init"``.
    p_weight: float | None = field(
        default=None, metadata={"what": "the weight of the observed solve rates, in [0, 1], or None", "high": 1.0}
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "step":
                value = _state_step(value)
            else:
                value = _state_number(f.name, value, f.metadata["what"], optional=f.default is None,
                                      high=f.metadata.get("high"))
            object.__setattr__(self, f.name, value)
        if (self.h_hat is None) != (self.h_first is None):
            raise ValueError(
                f"FADE state h_hat and h_first are set together (by the first entropy), got "
                f"h_hat={self.h_hat!r}, h_first={self.h_first!r}"
            )
        if self.h_hat is not None and self.h_star is None:
            raise ValueError(
                f"FADE state h_star must be set once an entropy is observed (h_hat={self.h_hat!r}), got None"
            )

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> FadeState:
        """The record of a ``state_dict``: a mapping with exactly the record's keys, less any of
        :data:`_ADDED_KEYS` (a state saved before that key existed), which reads as its default."""
        keys = [f.name for f in fields(cls)]
        if not isinstance(state, Mapping):
            raise ValueError(f"FADE state must be a mapping with keys {keys}, got {type(state).__name__}")
        state = {**{k: v for k, v in _ADDED_KEYS.items() if k not in state}, **state}
        missing = sorted(set(keys) - set(state))
        extra = sorted(set(state) - set(keys), key=repr)
        if missing or extra:
            raise ValueError(f"FADE state must have keys {keys}; missing {missing}, unexpected {extra}")
        return cls(**state)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _state_number(key: str, v: Any, what: str, *, optional: bool, high: float | None) -> float | None:
    """``v`` as a float in [0, high], or None where ``optional``; else ValueError."""
    if v is None and optional:
        return None
    if isinstance(v, np.generic) and v.dtype.kind in "iuf":
        v = v.item()
    if not in_range(v, low=0.0, high=high):
        raise ValueError(f"FADE state {key} must be {what}, got {v!r}")
    return float(v)


def _state_step(step: Any) -> int:
    if isinstance(step, np.integer):
        step = int(step)
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < 2**63:
        raise ValueError(f"FADE state step must be an integer in [0, 2^63), got {step!r}")
    return step


# -- the pure functions: init, observe, schedule, advance, update -------------------------------
#
# ``params`` is an estimator's full parameter dict (the variant's defaults and what was passed);
# ``mode`` its variant's :attr:`~fade.registry.EstimatorSpec.schedule` ("feedback", "entropy",
# "decay" or "fixed"). None of them changes its arguments.


def init(params: Mapping[str, Any]) -> FadeState:
    """The state before any batch or signal: p_hat = p_init, H_star where it is absolute, and with
    ``p_start="debiased"`` no weight yet on any solve rate."""
    return FadeState(
        p_hat=float(params["p_init"]), h_star=None if params["h_star"] is None else float(params["h_star"]),
        p_weight=0.0 if params["p_start"] == "debiased" else None,
    )


def observe(state: FadeState, params: Mapping[str, Any], **signals: float) -> FadeState:
    """The state after the training signals ``entropy=``, ``step=``, ``rank1_share=``.

    The first entropy starts H_hat and, with ``h_star_ratio``, sets H_star; each later one moves
    H_hat one EMA step (weight ``ema``). Every signal is checked before any is applied.
    """
    values = {key: check_signal(key, value) for key, value in signals.items()}
    changes: dict[str, Any] = {}
    if "entropy" in values:
        h = values["entropy"]
        if state.h_hat is None:
            changes.update(h_hat=h, h_first=h)
            if state.h_star is None:
                changes["h_star"] = params["h_star_ratio"] * h
        else:
            w = params["ema"]
            changes["h_hat"] = (1 - w) * state.h_hat + w * h
    if "step" in values:
        changes["step"] = int(values["step"])
    if "rank1_share" in values:
        changes["rank1_share"] = values["rank1_share"]
    return replace(state, **changes) if changes else state


def schedule(state: FadeState, params: Mapping[str, Any], mode: str) -> tuple[float, float]:
    """(alpha, delta) at ``state``: the formulas of the module docstring for the variant's ``mode``,
    then the knobs ``params`` fixes and the rank guard."""
    if mode == "decay":
        t = min(1.0, math.log1p(state.step) / math.log1p(params["total_steps"]))
        alpha = params["alpha_max"] - (params["alpha_max"] - 1) * t
        delta = 1 - (1 - params["delta_min"]) * t
    elif mode == "fixed":
        alpha, delta = fixed_knobs(params["path"], state.step + 1)
    else:
        alpha = _alpha_from_solve_rate(state, params) if mode == "feedback" else _alpha_from_entropy(state, params)
        delta = _delta_from_entropy(state, params)
    if params["alpha"] is not None:
        alpha = float(params["alpha"])
    if params["delta"] is not None:
        delta = float(params["delta"])
    elif (
        params["rank_guard"] is not None and state.rank1_share is not None and state.rank1_share > params["rank_guard"]
    ):
        delta = 1.0
    return alpha, delta


def fixed_knobs(path: str, step: int) -> tuple[float, float]:
    """(alpha, delta) of the written path ``path`` (a name of :data:`FIXED_PATHS`) at the trainer's
    step ``step`` (1 for the first batch): linear between the knots around it, the first knot's
    values before it and the last one's after it."""
    knots = FIXED_PATHS[path]
    steps = [k[0] for k in knots]
    return (float(np.interp(step, steps, [k[1] for k in knots])),
            float(np.interp(step, steps, [k[2] for k in knots])))


def _alpha_from_solve_rate(state: FadeState, params: Mapping[str, Any]) -> float:
    if state.p_hat <= 0:
        return float(params["alpha_max"])
    return min(max(3 * (1 - state.p_hat) / (2 * state.p_hat), 1.0), float(params["alpha_max"]))


def _alpha_from_entropy(state: FadeState, params: Mapping[str, Any]) -> float:
    amax = float(params["alpha_max"])
    if state.h_hat is None:
        return amax
    span = state.h_first - state.h_star
    if span <= 0:
        return amax if state.h_hat > state.h_star else 1.0
    u = min(max((state.h_hat - state.h_star) / span, 0.0), 1.0)
    return 1 + (amax - 1) * u


def _delta_from_entropy(state: FadeState, params: Mapping[str, Any]) -> float:
    if state.h_hat is None:
        return 1.0
    return min(max(1 + state.h_hat - state.h_star, float(params["delta_min"])), 1.0)


def advance(state: FadeState, params: Mapping[str, Any], solve_rate: float) -> FadeState:
    """The state after a batch with this solve rate: p_hat one EMA step toward it, and the step
    count one further.

    The step's gain is ``ema`` from the start at ``p_init``. Debiased, it is ema / p_weight after
    the weight's own step (p_weight <- (1 - ema) p_weight + ema): then p_hat stays m_t / (1 - (1 -
    ema)^t), since m_t = p_hat_t p_weight_t, and the first batch's gain is exactly 1.
    """
    w = params["ema"]
    weight = state.p_weight
    gain = w
    if weight is not None:
        weight = (1 - w) * weight + w
        gain = w / weight  # <= 1, as weight >= ema
    # A convex combination with the gain: in [0, 1] after rounding too.
    return replace(state, p_hat=(1 - gain) * state.p_hat + gain * solve_rate, step=state.step + 1, p_weight=weight)


def update(
    state: FadeState, params: Mapping[str, Any], mode: str, solve_rate: float
) -> tuple[tuple[float, float], FadeState]:
    """The knobs (alpha, delta) a batch with this solve rate is weighed with, and the state after it.

    A batch is weighed with its own solve rate already in p_hat, at its own step: the knobs are
    :func:`schedule` at the advanced state with the step not yet counted.
    """
    after = advance(state, params, solve_rate)
    return schedule(replace(after, step=state.step), params, mode), after


def _or_nan(x: float | None) -> float:
    return math.nan if x is None else x


class FadeEstimator(Estimator):
    """The stateful FADE estimator; see the module docstring for the schedule.

    ``state`` is its :class:`FadeState`; the module's pure functions of the same names do the
    work of :meth:`observe`, :meth:`schedule` and each call, which keeps the new state. The
    state's fields read as attributes too (``est.p_hat``, ``est.step``, ...).

    After each call ``last`` holds the schedule it used (alpha, delta, p_hat, h_hat, h_star,
    step, batch_solve_rate) and the batch diagnostics of :func:`fade.decompose`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.state: FadeState = init(self.params)

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the instance and class lack: the state's fields.
        state = self.__dict__.get("state")
        if state is not None and name in _STATE_KEYS:
            return getattr(state, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        # est.p_hat reads the state record; writing it would either shadow the record or replace it
        # behind the caller's back, so the record changes only as a whole, in one visible place.
        if name in _STATE_KEYS:
            raise AttributeError(
                f"{name} is a field of FADE's state record and is read-only on the estimator; replace the record "
                f"(est.state = dataclasses.replace(est.state, {name}=...)) or load one with est.load_state_dict(...)"
            )
        if name == "state" and not isinstance(value, FadeState):
            raise TypeError(f"state must be a FadeState record, got {type(value).__name__}")
        object.__setattr__(self, name, value)

    @property
    def reads_entropy(self) -> bool:
        """Whether this variant's schedule, with the knobs this instance fixes, reads the entropy.

        The feedback variants read it for delta, ``fade_entropy_only`` for both knobs, and the
        decay and fixed schedules not at all; a knob fixed by ``alpha=`` or ``delta=`` reads nothing.
        """
        mode = self.spec.schedule
        if mode in ("decay", "fixed"):
            return False
        if mode == "entropy":
            return self.params["alpha"] is None or self.params["delta"] is None
        return self.params["delta"] is None

    @property
    def awaiting_entropy(self) -> bool:
        return self.reads_entropy and self.state.h_hat is None

    # -- signals and state ------------------------------------------------------------------

    def observe(self, **signals: float) -> None:
        """Feed ``entropy=`` (mean token entropy, nats), ``step=`` or ``rank1_share=``."""
        self.state = observe(self.state, self.params, **signals)

    @property
    def h_star(self) -> float:
        """The entropy target. With ``h_star_ratio`` it exists only once an entropy is observed."""
        if self.state.h_star is None:
            raise ValueError(
                "H_star is not set yet: with h_star_ratio it is a fraction of the first observed entropy; "
                "call observe(entropy=...) first, or pass h_star="
            )
        return self.state.h_star

    def state_dict(self) -> dict[str, Any]:
        return self.state.to_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict`. Impossible state raises ValueError and changes nothing, as
        does a state saved with the other ``p_start`` (its p_hat means another thing). A state
        saved before ``p_start`` existed, without ``p_weight``, is a ``p_start="p_init"`` one."""
        loaded = FadeState.from_dict(state)
        if loaded.h_star is None and self.params["h_star"] is not None:
            raise ValueError(f"FADE state h_star is None, but this estimator has h_star={self.params['h_star']!r}")
        saved_start = "p_init" if loaded.p_weight is None else "debiased"
        if saved_start != self.params["p_start"]:
            raise ValueError(
                f"FADE state p_weight is {loaded.p_weight!r}, a state saved with p_start={saved_start!r}, but this "
                f"estimator has p_start={self.params['p_start']!r}: resume with the p_start the state was saved with"
            )
        self.state = loaded

    # -- the schedule and the advantage -----------------------------------------------------

    def schedule(self) -> tuple[float, float]:
        """(alpha, delta) for the current state."""
        return schedule(self.state, self.params, self.spec.schedule)

    def compute(self, rewards: torch.Tensor, groups: Groups, **inputs: torch.Tensor) -> torch.Tensor:
        adv, self.last, self.state = self._weigh(rewards, groups)
        return adv

    def compute_at_state(
        self, rewards: torch.Tensor, groups: Groups, **inputs: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, float]]:
        adv, record, _ = self._weigh(rewards, groups)
        return adv, record

    def _weigh(self, rewards: torch.Tensor, groups: Groups) -> tuple[torch.Tensor, dict[str, float], FadeState]:
        """The batch's advantages, the record of the call (``last``), and the state after it."""
        solve_rate = float(rewards.mean())
        (alpha, delta), after = update(self.state, self.params, self.spec.schedule, solve_rate)
        adv = self.spec.fn(rewards, groups, alpha=alpha, delta=delta, baseline=self.params["baseline"])
        record = {
            "alpha": alpha,
            "delta": delta,
            "p_hat": after.p_hat,
            "h_hat": _or_nan(after.h_hat),
            "h_star": _or_nan(after.h_star),
            "step": float(self.state.step),
            "batch_solve_rate": solve_rate,
        }
        # Measured in float64, as a trainer measures a batch, so that it can log these as they are.
        record.update(decompose_grouped(adv.double(), rewards, groups).diagnostics())
        return adv, record, after


#: The fields of :class:`FadeState`, which a :class:`FadeEstimator` also reads as attributes.
_STATE_KEYS = frozenset(f.name for f in fields(FadeState))
#: State keys added after state dicts were first saved, with what a state dict without one means.
_ADDED_KEYS: dict[str, Any] = {"p_weight": None}

#: Schedules written in advance for ``fade_fixed:path=NAME``: knots (step, alpha, delta), the step
#: the trainer's (1 for the first batch) and increasing, alpha >= 1, delta in (0, 1]. A control
#: that follows the path FADE took without reading the run it trains.
#:
#: ``shift``: the `shift` preset's fixed two-phase control (docs/results/shift/PILOT.md), the median
#: over seeds 0-4 of FADE's logged alpha and delta (``fade:p_start=debiased`` on the pilot's
#: ``arith-d2-400`` setting), read every 10 steps; written before any run of the preset.
FIXED_PATHS: dict[str, tuple[tuple[int, float, float], ...]] = {
    "shift": (
        (1, 3.0, 1.0), (10, 2.698, 1.0), (20, 2.4229, 1.0), (30, 2.1458, 1.0), (40, 1.973, 1.0), (50, 1.812, 1.0),
        (60, 1.7079, 1.0), (70, 1.5569, 1.0), (80, 1.4492, 1.0), (90, 1.3677, 1.0), (100, 1.2739, 1.0),
        (110, 1.2054, 1.0), (120, 1.1476, 1.0), (130, 1.0899, 1.0), (140, 1.0417, 1.0), (150, 1.0, 1.0),
        (160, 1.0, 1.0), (170, 1.0, 1.0), (180, 1.0, 1.0), (190, 1.0, 1.0), (200, 1.0, 1.0), (210, 1.0, 1.0),
        (220, 1.0, 0.9971), (230, 1.0, 0.9909), (240, 1.0, 0.9874), (250, 1.0, 0.9824), (260, 1.0, 0.9765),
        (270, 1.0, 0.9711), (280, 1.0, 0.9679), (290, 1.0, 0.9633), (300, 1.0, 0.9594), (310, 1.0, 0.9562),
        (320, 1.0, 0.9513), (330, 1.0, 0.9471), (340, 1.0, 0.9439), (350, 1.0, 0.9384), (360, 1.0, 0.9327),
        (370, 1.0, 0.9323), (380, 1.0, 0.9304), (390, 1.0, 0.9268), (400, 1.0, 0.9221),
    ),
}


def _check_paths(paths: Mapping[str, tuple[tuple[int, float, float], ...]]) -> None:
    for name, knots in paths.items():
        steps = [k[0] for k in knots]
        if not knots or steps[0] < 1 or any(b <= a for a, b in zip(steps, steps[1:])):
            raise ValueError(f"fixed path {name!r}: knot steps must be increasing integers from >= 1, got {steps}")
        bad = [k for k in knots if not (k[1] >= 1 and 0 < k[2] <= 1)]
        if bad:
            raise ValueError(f"fixed path {name!r}: knots need alpha >= 1 and delta in (0, 1], got {bad[:3]}")


#: How p_hat starts (the ``p_start`` parameter): at ``p_init``, the paper's reading; or corrected
#: for its start, so that it is the first batch's solve rate after that batch.
P_STARTS = ("p_init", "debiased")


def _check_fade(p: dict[str, Any]) -> None:
    require(p, "alpha_max", low=1.0)
    check_delta_value(p, "delta_min")
    if p["delta_min"] > 1:
        raise ValueError(f"delta_min must be in (0, 1], got {p['delta_min']!r}")
    require(p, "ema", low=0.0, low_open=True)
    if p["ema"] > 1:
        raise ValueError(f"ema (the new value's weight) must be in (0, 1], got {p['ema']!r}")
    require(p, "p_init", low=0.0)
    if p["p_init"] > 1:
        raise ValueError(f"p_init must be in [0, 1], got {p['p_init']!r}")
    if p["p_start"] not in P_STARTS:
        raise ValueError(f"p_start must be 'p_init' (p_hat starts at p_init) or 'debiased' (an EMA corrected for its "
                         f"start, as Adam's moments), got {p['p_start']!r}")
    require(p, "h_star_ratio", low=0.0, low_open=True)
    if p["h_star"] is not None:
        require(p, "h_star", low=0.0)
    if p["alpha"] is not None:
        require(p, "alpha", low=0.0)
    if p["delta"] is not None:
        check_delta_value(p, "delta")
    if p["rank_guard"] is not None:
        require(p, "rank_guard", low=0.0)
    if p["baseline"] not in ("group", "batch"):
        raise ValueError(f"baseline must be 'group' or 'batch', got {p['baseline']!r}")
    if "path" in p and p["path"] not in FIXED_PATHS:
        raise ValueError(f"fade_fixed needs path=, the name of a written schedule ({', '.join(FIXED_PATHS)}), got "
                         f"{p['path']!r}")
    if "total_steps" in p and p["total_steps"] is not None:
        plain(p, "total_steps")
    if "total_steps" in p and (
        isinstance(p["total_steps"], bool) or not isinstance(p["total_steps"], int) or p["total_steps"] < 1
    ):
        raise ValueError(
            f"fade_decay needs total_steps=, a positive integer (the run's length), got {p['total_steps']!r}"
        )


_DEFAULTS: dict[str, Any] = dict(
    h_star=None,
    h_star_ratio=0.5,
    alpha_max=3.0,
    delta_min=0.3,
    ema=0.02,
    baseline="group",
    p_init=0.5,
    p_start="p_init",
    alpha=None,
    delta=None,
    rank_guard=None,
)

#: FADE's variants: how each schedules its knobs (:attr:`EstimatorSpec.schedule`) and the
#: parameters it adds to or fixes among the defaults. The decay schedule's ``total_steps`` is the
#: run's length (:attr:`EstimatorSpec.run_length`).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "fade": ("feedback", {}),
    "fade_alpha": ("feedback", {"delta": 1.0}),
    "fade_delta": ("feedback", {"alpha": 1.0}),
    "fade_entropy_only": ("entropy", {}),
    "fade_decay": ("decay", {"total_steps": None}),
    "fade_fixed": ("fixed", {"path": None}),
}


def _register_variants() -> None:
    for name, (schedule, extra) in VARIANTS.items():
        register(name, rewards="unit", check=_check_fade, cls=FadeEstimator, schedule=schedule,
                 run_length="total_steps" if "total_steps" in extra else None, **{**_DEFAULTS, **extra})(_fade_formula)


def _fade_formula(r: torch.Tensor, g: Groups, *, alpha: float, delta: float, baseline: str) -> torch.Tensor:
    """FADE (Focal Advantage with Dynamic Entropy): focal advantage with alpha, delta scheduled.

    The formula at the knobs the schedule chose for this batch (:meth:`FadeEstimator._weigh` calls
    it; see :mod:`fade.adaptive`): the focal advantage centred on the group mean (``baseline``
    "group") or on the batch mean ("batch").
    """
    if baseline == "group":
        return focal(r, g.mean(r), alpha, delta, g)
    return focal(r, r.mean(), alpha, delta)


_check_paths(FIXED_PATHS)
_register_variants()
