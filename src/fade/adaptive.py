"""FADE, Focal Advantage with Dynamic Entropy, and its ablations (docs/method.md, section 3).

FADE is the focal, sign-weighted advantage of :func:`fade.estimators.focal` with its two knobs
scheduled from training dynamics:

    A_i   = (1 - rbar)^(alpha - 1) (r_i - rbar)            if r_i >= rbar
    A_i   = (1 - rbar)^(alpha - 1) (r_i - rbar) / delta    if r_i <  rbar
    alpha = clip(3 (1 - p_hat) / (2 p_hat), 1, alpha_max)  difficulty, from the solve rate
    delta = clip(1 + H_hat - H_star, delta_min, 1)         sign, from the entropy

p_hat is an EMA of the batch solve rate (starting at ``p_init``), updated by every call before
alpha is computed; H_hat an EMA of the mean token entropy fed through ``observe(entropy=...)``
(starting at the first value); H_star the target, ``h_star`` or ``h_star_ratio`` times the first
entropy. Until an entropy is observed delta stays 1. alpha = delta = 1 is exactly dr_grpo.

Registered variants: ``fade``; ``fade_alpha`` (delta fixed at 1); ``fade_delta`` (alpha fixed
at 1); ``fade_entropy_only`` (alpha also from entropy: alpha_max while the entropy is at its
initial value, falling linearly to 1 as it reaches H_star); ``fade_decay`` (no feedback: both
knobs follow log(1 + t) / log(1 + total_steps) from exploration, alpha_max and 1, to
exploitation, 1 and delta_min). Passing ``alpha=`` or ``delta=`` fixes that knob in any variant.

Beyond the paper, off by default: ``rank_guard=x`` holds delta at 1 while the observed
``rank1_share`` of the output head's cumulative update exceeds x.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from .estimators import _check_delta_value, _number, _plain, focal
from .mass import DIAGNOSTICS, decompose_grouped
from .registry import Estimator, _check_signal, register
from .segments import Groups

__all__ = ["SCHEDULE", "VARIANTS", "FadeEstimator"]

_STATE_KEYS = ("p_hat", "h_hat", "h_first", "h_star", "step", "rank1_share")

#: The schedule FADE reports in ``last`` beside the batch's :data:`~fade.mass.DIAGNOSTICS`: what
#: trainers and the engine integrations log for it.
SCHEDULE = ("alpha", "delta", "p_hat", "h_hat", "h_star")


class FadeEstimator(Estimator):
    """The stateful FADE estimator; see the module docstring for the schedule.

    After each call ``last`` holds the schedule it used (alpha, delta, p_hat, h_hat, h_star,
    step, batch_solve_rate) and the batch diagnostics of :func:`fade.decompose`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.p_hat: float = float(self.params["p_init"])
        self.h_hat: float | None = None
        self.h_first: float | None = None
        self._h_star: float | None = None if self.params["h_star"] is None else float(self.params["h_star"])
        self.step: int = 0
        self.rank1_share: float | None = None

    @property
    def stateful(self) -> bool:
        return True

    @property
    def reads_entropy(self) -> bool:
        """Whether this variant's schedule, with the knobs this instance fixes, reads the entropy.

        The feedback variants read it for delta, ``fade_entropy_only`` for both knobs, and the
        decay schedule not at all; a knob fixed by ``alpha=`` or ``delta=`` reads nothing.
        """
        mode = self.spec.schedule
        if mode == "decay":
            return False
        if mode == "entropy":
            return self.params["alpha"] is None or self.params["delta"] is None
        return self.params["delta"] is None

    @property
    def awaiting_entropy(self) -> bool:
        return self.reads_entropy and self.h_hat is None

    # -- signals and state ------------------------------------------------------------------

    def observe(self, **signals: float) -> None:
        """Feed ``entropy=`` (mean token entropy, nats), ``step=`` or ``rank1_share=``."""
        values = {key: _check_signal(key, value) for key, value in signals.items()}
        if "entropy" in values:
            h = values["entropy"]
            if self.h_hat is None:
                self.h_hat = self.h_first = h
                if self._h_star is None:
                    self._h_star = self.params["h_star_ratio"] * h
            else:
                w = self.params["ema"]
                self.h_hat = (1 - w) * self.h_hat + w * h
        if "step" in values:
            self.step = int(values["step"])
        if "rank1_share" in values:
            self.rank1_share = values["rank1_share"]

    @property
    def h_star(self) -> float:
        """The entropy target. With ``h_star_ratio`` it exists only once an entropy is observed."""
        if self._h_star is None:
            raise ValueError(
                "H_star is not set yet: with h_star_ratio it is a fraction of the first observed entropy; "
                "call observe(entropy=...) first, or pass h_star="
            )
        return self._h_star

    def state_dict(self) -> dict[str, Any]:
        return {"p_hat": self.p_hat, "h_hat": self.h_hat, "h_first": self.h_first, "h_star": self._h_star,
                "step": self.step, "rank1_share": self.rank1_share}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict`. Impossible state raises ValueError and changes nothing."""
        if not isinstance(state, Mapping):
            raise ValueError(f"FADE state must be a mapping with keys {list(_STATE_KEYS)}, got {type(state).__name__}")
        missing = sorted(set(_STATE_KEYS) - set(state))
        extra = sorted(set(state) - set(_STATE_KEYS), key=repr)
        if missing or extra:
            raise ValueError(f"FADE state must have keys {list(_STATE_KEYS)}; missing {missing}, unexpected {extra}")
        # Validate everything first, as observe() and the constructor would, then assign.
        p_hat = _state_number(state, "p_hat", "the EMA of the batch solve rate, in [0, 1]", high=1.0)
        h_hat = _state_number(state, "h_hat", "the EMA of the mean token entropy, >= 0, or None", optional=True)
        h_first = _state_number(state, "h_first", "the first observed entropy, >= 0, or None", optional=True)
        h_star = _state_number(state, "h_star", "the entropy target, >= 0, or None", optional=True)
        rank1_share = _state_number(
            state, "rank1_share", "the observed rank-1 share, in [0, 1], or None", optional=True, high=1.0
        )
        step = state["step"]
        if isinstance(step, np.integer):
            step = int(step)
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < 2**63:
            raise ValueError(f"FADE state step must be an integer in [0, 2^63), got {step!r}")
        if (h_hat is None) != (h_first is None):
            raise ValueError(
                f"FADE state h_hat and h_first are set together (by the first entropy), got "
                f"h_hat={h_hat!r}, h_first={h_first!r}"
            )
        if h_hat is not None and h_star is None:
            raise ValueError(f"FADE state h_star must be set once an entropy is observed (h_hat={h_hat!r}), got None")
        if h_star is None and self.params["h_star"] is not None:
            raise ValueError(f"FADE state h_star is None, but this estimator has h_star={self.params['h_star']!r}")
        self.p_hat, self.h_hat, self.h_first, self._h_star = p_hat, h_hat, h_first, h_star
        self.step, self.rank1_share = step, rank1_share

    # -- the schedule -----------------------------------------------------------------------

    def schedule(self) -> tuple[float, float]:
        """(alpha, delta) for the current state."""
        p = self.params
        mode = self.spec.schedule
        if mode == "decay":
            t = min(1.0, math.log1p(self.step) / math.log1p(p["total_steps"]))
            alpha = p["alpha_max"] - (p["alpha_max"] - 1) * t
            delta = 1 - (1 - p["delta_min"]) * t
        else:
            alpha = self._alpha_from_solve_rate() if mode == "feedback" else self._alpha_from_entropy()
            delta = self._delta_from_entropy()
        if p["alpha"] is not None:
            alpha = float(p["alpha"])
        if p["delta"] is not None:
            delta = float(p["delta"])
        elif p["rank_guard"] is not None and self.rank1_share is not None and self.rank1_share > p["rank_guard"]:
            delta = 1.0
        return alpha, delta

    def _alpha_from_solve_rate(self) -> float:
        if self.p_hat <= 0:
            return float(self.params["alpha_max"])
        return min(max(3 * (1 - self.p_hat) / (2 * self.p_hat), 1.0), float(self.params["alpha_max"]))

    def _alpha_from_entropy(self) -> float:
        amax = float(self.params["alpha_max"])
        if self.h_hat is None:
            return amax
        span = self.h_first - self._h_star
        if span <= 0:
            return amax if self.h_hat > self._h_star else 1.0
        u = min(max((self.h_hat - self._h_star) / span, 0.0), 1.0)
        return 1 + (amax - 1) * u

    def _delta_from_entropy(self) -> float:
        if self.h_hat is None:
            return 1.0
        return min(max(1 + self.h_hat - self._h_star, float(self.params["delta_min"])), 1.0)

    # -- the advantage ----------------------------------------------------------------------

    def compute(self, rewards: torch.Tensor, groups: Groups, **inputs: torch.Tensor) -> torch.Tensor:
        solve_rate = float(rewards.mean())
        w = self.params["ema"]
        self.p_hat = (1 - w) * self.p_hat + w * solve_rate
        alpha, delta = self.schedule()
        if self.params["baseline"] == "group":
            adv = focal(rewards, groups.mean(rewards), alpha, delta, groups)
        else:
            adv = focal(rewards, rewards.mean(), alpha, delta)
        self.last = {
            "alpha": alpha,
            "delta": delta,
            "p_hat": self.p_hat,
            "h_hat": math.nan if self.h_hat is None else self.h_hat,
            "h_star": math.nan if self._h_star is None else self._h_star,
            "step": float(self.step),
            "batch_solve_rate": solve_rate,
        }
        # Measured in float64, as a trainer measures a batch, so that it can log these as they are.
        rep = decompose_grouped(adv.double(), rewards, groups)
        for key in DIAGNOSTICS:
            self.last[key] = getattr(rep, key)
        self.step += 1
        return adv


def _state_number(
    state: Mapping[str, Any], key: str, what: str, *, optional: bool = False, high: float | None = None
) -> float | None:
    """``state[key]`` as a float in [0, high], or None where ``optional``; else ValueError."""
    v = state[key]
    if v is None and optional:
        return None
    if isinstance(v, np.generic) and v.dtype.kind in "iuf":
        v = v.item()
    x = math.nan
    if not isinstance(v, bool) and isinstance(v, (int, float)):
        try:
            x = float(v)
        except OverflowError:  # an int beyond float range, such as 10**400
            pass
    if not (math.isfinite(x) and x >= 0 and (high is None or x <= high)):
        raise ValueError(f"FADE state {key} must be {what}, got {v!r}")
    return x


def _check_fade(p: dict[str, Any]) -> None:
    _number(p, "alpha_max", low=1.0)
    _check_delta_value(p, "delta_min")
    if p["delta_min"] > 1:
        raise ValueError(f"delta_min must be in (0, 1], got {p['delta_min']!r}")
    _number(p, "ema", low=0.0, strict=True)
    if p["ema"] > 1:
        raise ValueError(f"ema (the new value's weight) must be in (0, 1], got {p['ema']!r}")
    _number(p, "p_init", low=0.0)
    if p["p_init"] > 1:
        raise ValueError(f"p_init must be in [0, 1], got {p['p_init']!r}")
    _number(p, "h_star_ratio", low=0.0, strict=True)
    if p["h_star"] is not None:
        _number(p, "h_star", low=0.0)
    if p["alpha"] is not None:
        _number(p, "alpha", low=0.0)
    if p["delta"] is not None:
        _check_delta_value(p, "delta")
    if p["rank_guard"] is not None:
        _number(p, "rank_guard", low=0.0)
    if p["baseline"] not in ("group", "batch"):
        raise ValueError(f"baseline must be 'group' or 'batch', got {p['baseline']!r}")
    if "total_steps" in p and p["total_steps"] is not None:
        _plain(p, "total_steps")
    if "total_steps" in p and (isinstance(p["total_steps"], bool) or not isinstance(p["total_steps"], int) or p["total_steps"] < 1):
        raise ValueError(f"fade_decay needs total_steps=, a positive integer (the run's length), got {p['total_steps']!r}")


_DEFAULTS: dict[str, Any] = dict(
    h_star=None,
    h_star_ratio=0.5,
    alpha_max=3.0,
    delta_min=0.3,
    ema=0.02,
    baseline="group",
    p_init=0.5,
    alpha=None,
    delta=None,
    rank_guard=None,
)

#: FADE's variants: how each schedules its knobs (:attr:`EstimatorSpec.schedule`) and the
#: parameters it adds to or fixes among the defaults.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "fade": ("feedback", {}),
    "fade_alpha": ("feedback", {"delta": 1.0}),
    "fade_delta": ("feedback", {"alpha": 1.0}),
    "fade_entropy_only": ("entropy", {}),
    "fade_decay": ("decay", {"total_steps": None}),
}


def _register_variants() -> None:
    for name, (schedule, extra) in VARIANTS.items():
        register(name, rewards="unit", check=_check_fade, cls=FadeEstimator, schedule=schedule,
                 **{**_DEFAULTS, **extra})(_fade_formula)


def _fade_formula(r: torch.Tensor, g: Groups, **params: Any) -> torch.Tensor:
    """FADE (Focal Advantage with Dynamic Entropy): focal advantage with alpha, delta scheduled.

    See :mod:`fade.adaptive`. Called directly (without the stateful estimator) it evaluates the
    formula at ``alpha`` and ``delta`` (default 1: dr_grpo) with the group mean as baseline.
    """
    alpha = 1.0 if params.get("alpha") is None else params["alpha"]
    delta = 1.0 if params.get("delta") is None else params["delta"]
    return focal(r, g.mean(r), alpha, delta, g)


_register_variants()
