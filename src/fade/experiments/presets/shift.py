"""The shift preset: FADE where its schedule acts, against its static twins and a fixed schedule."""

from __future__ import annotations

from fade.experiments.design import FADE, Preset, TaskPlan, comparisons
from fade.experiments.presets.confirm import CONFIRM_MEASURES

__all__ = ["SHIFT", "SHIFT_ARMS", "SHIFT_FADE", "SHIFT_OTHERS", "SHIFT_SEEDS", "SHIFT_TASK"]

#: Seeds no other preset has used (the pilot ran on 0-4, confirm on 5-14).
SHIFT_SEEDS: tuple[int, ...] = tuple(range(15, 25))
#: The setting the pilot chose (docs/results/shift/PILOT.md, ``arith-d2-400``): arithmetic with
#: training draws and held-out set from difficulty bucket 2 only, 400 steps of 32 prompts x G = 8 at
#: lr 1e-4 (the trainer's defaults), evaluated every 40 steps on 64 prompts x 64 samples.
SHIFT_TASK = "arithmetic"
#: The two FADE arms whose schedule reads the run: the paper's start of p_hat, and the debiased
#: start (docs/method.md, section 3).
SHIFT_FADE: tuple[str, ...] = (FADE, "fade:p_start=debiased")
#: The balanced baselines, FADE's static twin Power(alpha = 3), pass@k training at k = 4, the paper's
#: fixed log-decay schedule, and the fixed two-phase control: the median path of the pilot's FADE
#: runs (alpha and delta by step, :data:`fade.adaptive.FIXED_PATHS`), followed without reading the
#: run. The last decides whether adapting matters or only the schedule's shape.
SHIFT_OTHERS: tuple[str, ...] = ("dr_grpo", "grpo", "power:alpha=3", "passk:k=4", "fade_decay", "fade_fixed:path=shift")
SHIFT_ARMS: tuple[str, ...] = (*SHIFT_OTHERS[:4], *SHIFT_FADE, *SHIFT_OTHERS[4:])

SHIFT = Preset(
    name="shift",
    description=(
        "FADE where its schedule acts (docs/results/shift/PILOT.md): arithmetic, difficulty bucket 2 only, 400 steps "
        "of 32 prompts x G = 8, evaluated every 40 steps, on 10 seeds no other preset used (15-24). FADE at its "
        "defaults and with the debiased start of p_hat, each against every other arm: dr_grpo, grpo, Power(alpha = 3), "
        "pass@k training at k = 4, the fixed log-decay schedule and a fixed two-phase control that follows the "
        "pilot's median FADE path without reading the run; every comparison was fixed in the preset before any run, "
        "and every run comes from one version of the training code."
    ),
    seeds=SHIFT_SEEDS,
    plans=(TaskPlan(task=SHIFT_TASK, estimators=SHIFT_ARMS, steps=400, eval_every=40, eval_prompts=64, eval_samples=64,
                    checkpoint_every=50, trainer=(("difficulties", (2,)),)),),
    comparisons=(
        comparisons(SHIFT_FADE[:1], (*SHIFT_OTHERS, SHIFT_FADE[1]), CONFIRM_MEASURES)
        + comparisons(SHIFT_FADE[1:], SHIFT_OTHERS, CONFIRM_MEASURES)
    ),
    claims=("comparisons", "time_to_threshold"),
    pins_code=True,
)
