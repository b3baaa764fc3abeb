"""The entropy preset: FADE against what practitioners use instead of it to keep entropy."""

from __future__ import annotations

from typing import Any

from fade.experiments.claims.controls import (
    ENTROPY_BASELINE,
    ENTROPY_COMPARED,
    ENTROPY_CONTROLS,
    ENTROPY_FADE,
    ENTROPY_FADE_COMBINED,
    ENTROPY_STATIC_TWIN,
)
from fade.experiments.design import Preset, TaskPlan
from fade.experiments.presets.paper import PAPER_LR, PAPER_SCHEDULE, PAPER_SEEDS, PAPER_TASK

__all__ = [
    "ENTROPY",
    "ENTROPY_BASELINE",
    "ENTROPY_COMPARED",
    "ENTROPY_CONTROLS",
    "ENTROPY_FADE",
    "ENTROPY_FADE_COMBINED",
    "ENTROPY_LR",
    "ENTROPY_STATIC_TWIN",
    "ENTROPY_TRAINER",
]

# The paper preset's task and schedule with one update schedule for every arm, and each control at
# its recommended setting and at one tuned by a rule fixed before any run: how and why is in
# docs/results/entropy/TUNING.md. The arms are the controls claim's (fade.experiments.claims.controls:
# ENTROPY_BASELINE, ENTROPY_FADE, ENTROPY_CONTROLS, ENTROPY_STATIC_TWIN, ENTROPY_FADE_COMBINED and
# their order in the report, ENTROPY_COMPARED), named here as the preset trains them.

#: The update schedule every arm shares: 4 optimizer steps a batch at a quarter of the paper preset's
#: learning rate (docs/results/entropy/TUNING.md says why).
ENTROPY_LR = PAPER_LR / 4
ENTROPY_TRAINER: tuple[tuple[str, Any], ...] = (("lr", ENTROPY_LR), ("minibatches", 4))
ENTROPY = Preset(
    name="entropy",
    description=(
        "FADE against what practitioners use instead against entropy collapse, on the paper preset's task and "
        "schedule (countdown_multi, G = 16, 16 prompts a step, 200 steps, 5 seeds paired by seed): dr_grpo; FADE at "
        "h_star_ratio = 0.7; Power(alpha = 3), the static estimator FADE's schedule settles at; dr_grpo with an "
        "entropy bonus, TRL's adaptive entropy coefficient, clip-higher, Clip-Cov "
        "and KL-Cov, each at its recommended setting and at one setting tuned by a rule fixed in advance; DAPO's "
        "clip-higher with dynamic sampling; FADE with clip-higher. Every arm takes 4 optimizer steps a batch, so "
        "the clips act, at a quarter of the paper preset's learning rate. Verdicts from paired bootstrap intervals."
    ),
    seeds=PAPER_SEEDS,
    plans=(
        TaskPlan(
            task=PAPER_TASK,
            estimators=tuple(
                c.arm
                for c in (ENTROPY_BASELINE, ENTROPY_FADE, *ENTROPY_CONTROLS, ENTROPY_FADE_COMBINED, ENTROPY_STATIC_TWIN)
            ),
            **PAPER_SCHEDULE,
            trainer=ENTROPY_TRAINER,
        ),
    ),
)
