"""What a sweep's runs are expected to cost: a cost model measured on the 2-core development
machine (one torch thread per worker, two workers busy). The report states the CPU time each run
really took, beside the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from fade.experiments.design import RunSpec

__all__ = ["EVAL_ROLLOUT_SECONDS", "RUN_OVERHEAD_SECONDS", "STEP_SECONDS", "estimate_seconds",
           "estimate_wall_seconds", "format_minutes"]

#: CPU seconds per training step at 32 prompts x G = 8 with one torch thread while a second
#: worker runs, measured on the 2-core development machine with the shipped base policies.
STEP_SECONDS: Mapping[str, float] = {"arithmetic": 0.55, "countdown": 0.95, "countdown_multi": 0.95}
#: CPU seconds per evaluated rollout (one sampled completion, plus its share of the greedy decode).
EVAL_ROLLOUT_SECONDS: Mapping[str, float] = {"arithmetic": 0.0014, "countdown": 0.0022, "countdown_multi": 0.0022}
#: Loading the policy, writing the final policy, checkpoints and the run's own plots.
RUN_OVERHEAD_SECONDS = 5.0
_REFERENCE_ROLLOUTS = 32 * 8


def estimate_seconds(run: RunSpec) -> float:
    """Expected CPU seconds of ``run`` from the cost model (unknown tasks cost like countdown)."""
    step = STEP_SECONDS.get(run.testbed_task, max(STEP_SECONDS.values()))
    per_rollout = EVAL_ROLLOUT_SECONDS.get(run.testbed_task, max(EVAL_ROLLOUT_SECONDS.values()))
    rollouts = run.prompts_per_step * run.group_size
    train = run.steps * step * rollouts / _REFERENCE_ROLLOUTS
    evaluation = run.num_evals * run.eval_prompts * run.eval_samples * per_rollout
    return RUN_OVERHEAD_SECONDS + train + evaluation


def estimate_wall_seconds(costs: Sequence[float], workers: int) -> float:
    """Wall time of jobs of the given costs on ``workers`` workers, longest first (greedy)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    loads = [0.0] * workers
    for cost in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads) if costs else 0.0


def format_minutes(seconds: float) -> str:
    """``42 min`` or ``3 h 05 min``."""
    minutes = math.ceil(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
