"""The quick preset: a first look at the sign axis and FADE on arithmetic in about 10 minutes."""

from __future__ import annotations

from fade.experiments.design import FADE, Preset, TaskPlan

__all__ = ["QUICK"]

QUICK = Preset(
    name="quick",
    description=(
        "A first look in about 10 minutes on 2 cores: the sign axis (psr, grpo, nsr) and FADE on "
        "arithmetic, 3 seeds, 120 steps, small evaluations. Verdicts at this length say little."
    ),
    seeds=(0, 1, 2),
    plans=(
        TaskPlan(
            task="arithmetic", estimators=("grpo", "psr", "nsr", FADE),
            steps=120, eval_every=20, eval_prompts=32, eval_samples=64, checkpoint_every=40,
        ),
    ),
)
