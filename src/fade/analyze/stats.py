"""Per-step statistics of a run's rollouts, and what other estimators would have done with them.

For every step: the groups and rollouts, the group sizes, the zero-spread share (the share of
the step's rollouts in groups whose rewards all agree: a centred estimator gives them no
gradient), the solve-rate histogram, the mean reward, unbiased pass@k from each group's (n, c),
and the gradient-mass diagnostics: of the run's own advantages where the dump carries them
(``fade.decompose``), and of each counterfactual estimator's weighing of the same rewards (the
:class:`fade.Weighing`'s, the ones a trainer logs). The estimators are
the registry's vectorised ones, one call per step; a stateful one (FADE) is replayed in step
order, fed before step s what the run's engine fed it (:func:`fed_entropy`, by the run's
``entropy_feed``) and s - 1 as its update count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fade.mass import DIAGNOSTICS, decompose
from fade.passk import pass_at_k
from fade.registry import Estimator, check_signal, estimator
from fade.series import mean_of
from fade.specs import parse_spec
from fade.weighing import Weighing, weigh

from .records import DumpError, RunRecords, StepBatch

__all__ = [
    "DEFAULT_ESTIMATORS", "ENTROPY_FEEDS", "SOLVE_BUCKETS", "ZERO_SPREAD_TOL", "Counterfactuals", "default_estimators",
    "fed_entropy", "step_stats",
]

#: A group's rewards "all agree" when max - min is at most this.
ZERO_SPREAD_TOL = 1e-9

#: The solve-rate histogram's buckets: all failed, five bins between, all solved.
SOLVE_BUCKETS = ("0", "(0,0.2)", "[0.2,0.4)", "[0.4,0.6)", "[0.6,0.8)", "[0.8,1)", "1")
_EDGES = np.array([0.2, 0.4, 0.6, 0.8])

#: The counterfactual estimators when --estimators is left out (besides the run's own, and FADE
#: where the run logged an entropy).
DEFAULT_ESTIMATORS = ("grpo", "dr_grpo", "maxrl")

#: Which logged entropy an engine fed FADE before it weighed the batch of step s, by the name a
#: format sets as its run's ``entropy_feed``: the entropy logged at step s minus this lag.
#:
#: - ``"same-step"`` (0): the entropy of that very batch, measured before its advantage and logged
#:   under its step. verl (fade.integrations.verl.trainer.FadeTrainer._compute_advantage hands FADE
#:   ``metrics["actor/entropy"]`` of the old-log-prob pass, logged under the same ``global_steps``),
#:   fade's testbed (``train`` feeds the policy pass's entropy, logged as step s's ``entropy``), TRL
#:   with ``FadeGRPOTrainer(entropy="current")``; and the default of every other format.
#: - ``"previous-step"`` (1): the entropy of the previous batch's loss pass, logged under step s - 1;
#:   TRL's default (``FadeGRPOTrainer(entropy="previous")``), which measures the first batch itself.
ENTROPY_FEEDS: dict[str, int] = {"same-step": 0, "previous-step": 1}


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
        if self.run.entropy_feed not in ENTROPY_FEEDS:
            raise ValueError(f"entropy_feed {self.run.entropy_feed!r} of the {self.run.format} run: expected one of "
                             f"{', '.join(ENTROPY_FEEDS)}")

    def weigh(self, batch: StepBatch) -> dict[str, Weighing]:
        """Each estimator's weighing of ``batch`` (:func:`fade.weigh`), a stateful one first fed what
        the run's engine fed it before this batch (:func:`fed_entropy`) and s - 1, the updates before
        it, as its step: the rule every engine fade integrates follows (:func:`fade.weigh`). Call it
        once per step, in step order."""
        out = {}
        for spec, est in list(self.estimators.items()):
            entropy = fed_entropy(self.run, batch.step, awaiting=est.awaiting_entropy) if est.reads_entropy else None
            step = max(batch.step - 1, 0) if est.stateful else None
            for key, value in (("entropy", entropy), ("step", step)):
                if value is not None:
                    check_signal(key, value)  # a bad logged signal stops the analysis; it skips no estimator
            try:
                out[spec] = weigh(est, batch.rewards, batch.groups, entropy=entropy, step=step)
            except ValueError as exc:
                if self.strict:
                    raise DumpError(f"--estimators {spec!r} at step {batch.step} ({batch.source}): {exc}") from None
                self.skipped[spec] = f"{exc}".split("\n")[0]
                del self.estimators[spec]
        return out

    def step(self, batch: StepBatch) -> dict[str, dict[str, float]]:
        """The diagnostics of each estimator's weighing of ``batch`` (:meth:`weigh`)."""
        out = {}
        for spec, weighing in self.weigh(batch).items():
            entry = {k: float(v) for k, v in weighing.diagnostics.items()}
            if batch.advantages is not None and spec == self.run.estimator:
                adv = weighing.advantages.double().numpy()
                entry["max_abs_diff_to_run"] = float(np.abs(adv - batch.advantages).max())
            out[spec] = entry
        return out


def fed_entropy(run: RunRecords, step: int, *, awaiting: bool) -> float | None:
    """The entropy the run's engine fed FADE before it weighed the batch of ``step``: the one logged
    at step - lag (:data:`ENTROPY_FEEDS` by ``run.entropy_feed``); where none is logged there and the
    estimator has no entropy yet (``awaiting``, the first batch), the batch's own, as TRL's
    integration measures it then; else None, and the state carries on as the engine's did."""
    h = run.entropy.get(step - ENTROPY_FEEDS[run.entropy_feed])
    if h is None and awaiting:
        h = run.entropy.get(step)
    return h


def run_diagnostics(batch: StepBatch) -> dict[str, float] | None:
    """The diagnostics of the advantages the run itself applied, where the dump carries them."""
    if batch.advantages is None:
        return None
    report = decompose(batch.advantages, batch.rewards, batch.groups)
    return {k: float(v) for k, v in report.diagnostics().items()}


__all__ += ["DIAGNOSTICS", "run_diagnostics"]
