"""The full preset: every claim on arithmetic with 3 seeds, then FADE with the defaults chosen there on countdown."""

from __future__ import annotations

from fade.experiments.claims.ablations import ABLATIONS, H_STAR_LEVELS
from fade.experiments.claims.difficulty_axis import POWER_LEVELS
from fade.experiments.claims.sign_axis import FAILURE_BIASED, SUCCESS_BIASED
from fade.experiments.design import BALANCED, FADE, STATIC_BASELINES, Preset, TaskPlan, Tuning, ordered

__all__ = ["FULL"]

_FULL_ARITHMETIC = ordered(
    BALANCED, SUCCESS_BIASED, FAILURE_BIASED, [spec for _, spec in POWER_LEVELS], STATIC_BASELINES,
    [spec for _, spec in H_STAR_LEVELS], ABLATIONS,
)

FULL = Preset(
    name="full",
    description=(
        "Every claim on arithmetic with 3 seeds (sign axis, difficulty axis, FADE against the static "
        "baselines, ablations, H* sensitivity, FADE's defaults chosen among the H* candidates), then "
        "FADE with the defaults chosen on arithmetic against the static baselines on countdown."
    ),
    seeds=(0, 1, 2),
    plans=(
        TaskPlan(
            task="arithmetic", estimators=_FULL_ARITHMETIC, steps=300, eval_every=30, eval_prompts=64, eval_samples=64
        ),
        TaskPlan(
            task="countdown",
            estimators=STATIC_BASELINES,
            tuned=(FADE,),
            steps=250,
            eval_every=25,
            eval_prompts=64,
            eval_samples=64,
        ),
    ),
    tuning=Tuning(task="arithmetic", candidates=tuple(spec for _, spec in H_STAR_LEVELS)),
)
