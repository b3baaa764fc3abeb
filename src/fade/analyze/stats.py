"""Per-step statistics of a run's rollouts, and what other estimators would have done with them.

For every step: the groups and rollouts, the group sizes, the zero-spread share (the share of
the step's rollouts in groups whose rewards all agree: a centred estimator gives them no
gradient), the solve-rate histogram, the mean reward, unbiased pass@k from each group's (n, c),
and the gradient-mass diagnostics of ``fade.decompose``: of the run's own advantages where the
dump carries them, and of each counterfactual estimator on the same rewards. The estimators are
the registry's vectorised ones, one call per step; a stateful one (FADE) is replayed in step
order, fed before step s the entropy the run logged at step s - 1 and s - 1 as its update count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fade.mass import DIAGNOSTICS, decompose
from fade.passk import pass_at_k
from fade.registry import Estimator, estimator
from fade.specs import parse_spec

from .records import DumpError, RunRecords, StepBatch

__all__ = [
    "DEFAULT_ESTIMATORS", "SOLVE_BUCKETS", "ZERO_SPREAD_TOL", "Counterfactuals", "default_estimators", "step_stats",
]

#: A group's rewards "all agree" when max - min is at most this.
ZERO_SPREAD_TOL = 1e-9

#: The solve-rate histogram's buckets: all failed, five bins between, all solved.
SOLVE_BUCKETS = ("0", "(0,0.2)", "[0.2,0.4)", "[0.4,0.6)", "[0.6,0.8)", "[0.8,1)", "1")
_EDGES = np.array([0.2, 0.4, 0.6, 0.8])

#: The counterfactual estimators when --estimators is left out (besides the run's own, and FADE
#: where the run logged an entropy).
DEFAULT_ESTIMATORS = ("grpo", "dr_grpo", "maxrl")


def default_estimators(run: RunRecords) -> list[str]:
    """The run's estimator if known, then :data:`DEFAULT_ESTIMATORS`, then ``fade`` if the run
    logged an entropy to replay it with."""
    specs = [run.estimator] if run.estimator else []
    names = {parse_spec(s)[0] for s in specs}
    specs += [s for s in DEFAULT_ESTIMATORS if s not in names]
    if run.entropy:
        specs.append("fade")
    return specs


def _success(batch: StepBatch, rule: tuple[str, float] | None) -> np.ndarray | None:
    if rule is None:
        return None
    op, t = rule
    return batch.rewards >= t if op == ">=" else batch.rewards > t


def step_stats(batch: StepBatch, success: tuple[str, float] | None) -> dict[str, Any]:
    """The statistics of one step that need no estimator."""
    r, g = batch.rewards, batch.groups
    n_groups = batch.num_groups
    sizes = np.bincount(g, minlength=n_groups)
    hi = np.full(n_groups, -np.inf)
    lo = np.full(n_groups, np.inf)
    np.maximum.at(hi, g, r)
    np.minimum.at(lo, g, r)
    zero = (hi - lo) <= ZERO_SPREAD_TOL
    out: dict[str, Any] = {
        "step": batch.step, "num_groups": n_groups, "num_rollouts": batch.num_rollouts,
        "group_sizes": sorted(set(sizes.tolist())),
        "zero_spread_share": float(sizes[zero].sum() / max(batch.num_rollouts, 1)),
        "zero_spread_groups": int(zero.sum()),
        "mean_reward": mean_of(r),
    }
    s = _success(batch, success)
    if s is not None:
        c = np.bincount(g, weights=s.astype(np.float64), minlength=n_groups).round().astype(np.int64)
        rate = c / sizes
        bucket = np.where(rate == 0, 0, np.where(rate == 1, len(SOLVE_BUCKETS) - 1,
                                                 1 + np.searchsorted(_EDGES, rate, side="right")))
        counts = np.bincount(bucket, minlength=len(SOLVE_BUCKETS))
        out["solve_rate"] = float(rate.mean())
        out["solve_rate_histogram"] = {b: float(k / n_groups) for b, k in zip(SOLVE_BUCKETS, counts)}
        out["pass_at_k"] = {str(k): float(np.mean(pass_at_k(sizes, c, k))) for k in range(1, int(sizes.min()) + 1)}
    return out


def _diagnostics(adv, batch: StepBatch) -> dict[str, float]:
    report = decompose(adv, batch.rewards, batch.groups)
    return {k: float(v) for k, v in report.diagnostics().items()}


@dataclass
class Counterfactuals:
    """The estimators replayed on a run's rewards, kept across steps (a stateful one's state moves)."""

    specs: list[str]
    run: RunRecords
    strict: bool = True
    estimators: dict[str, Estimator] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for spec in self.specs:
            name, params = parse_spec(spec)
            try:
                self.estimators[spec] = estimator(name, **params)
            except (KeyError, ValueError, TypeError) as exc:
                raise DumpError(f"--estimators {spec!r}: {exc}") from None

    def step(self, batch: StepBatch) -> dict[str, dict[str, float]]:
        out = {}
        for spec, est in list(self.estimators.items()):
            if est.reads_entropy:
                h = self.run.entropy.get(batch.step - 1)
                if h is not None:
                    est.observe(entropy=h)
            if est.stateful:
                est.observe(step=max(batch.step - 1, 0))
            try:
                adv = est(batch.rewards, batch.groups)
            except ValueError as exc:
                if self.strict:
                    raise DumpError(f"--estimators {spec!r} at step {batch.step} ({batch.source}): {exc}") from None
                self.skipped[spec] = f"{exc}".split("\n")[0]
                del self.estimators[spec]
                continue
            entry = _diagnostics(adv, batch)
            if batch.advantages is not None and spec == self.run.estimator:
                entry["max_abs_diff_to_run"] = float(np.abs(adv.double().numpy() - batch.advantages).max())
            out[spec] = entry
        return out


def run_diagnostics(batch: StepBatch) -> dict[str, float] | None:
    """The diagnostics of the advantages the run itself applied, where the dump carries them."""
    if batch.advantages is None:
        return None
    return _diagnostics(batch.advantages, batch)


def mean_of(values: np.ndarray) -> float:
    """The mean of finite ``values``, finite too: where their sum overflows (rewards near 1e308),
    they are summed scaled by a power of two (exact) below their largest magnitude."""
    with np.errstate(over="ignore"):
        mean = float(np.mean(values))
    if math.isfinite(mean) or not np.isfinite(values).all():
        return mean
    _, exponent = np.frexp(np.abs(values).max())
    return float(np.ldexp(np.mean(np.ldexp(values, -int(exponent))), int(exponent)))


def finite_mean(values: list[float]) -> float | None:
    """The mean of the finite ones of ``values`` (None and NaN, a step's missing number, left out)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return mean_of(np.asarray(vals, dtype=np.float64)) if vals else None


__all__ += ["DIAGNOSTICS", "finite_mean", "mean_of", "run_diagnostics"]
