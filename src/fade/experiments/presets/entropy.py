"""The entropy preset: FADE against what practitioners use instead of it to keep entropy."""

from __future__ import annotations

from typing import Any

from fade.experiments.design import Control, Preset, TaskPlan, as_arm
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
# docs/results/entropy/TUNING.md.

#: The update schedule every arm shares: 4 optimizer steps a batch at a quarter of the paper preset's
#: learning rate (docs/results/entropy/TUNING.md says why).
ENTROPY_LR = PAPER_LR / 4
ENTROPY_TRAINER: tuple[tuple[str, Any], ...] = (("lr", ENTROPY_LR), ("minibatches", 4))
_RECIPE = "the 7B recipe of Cui et al. (arXiv 2505.22617; verl's recipe/entropy)"
ENTROPY_BASELINE = Control(
    "dr_grpo (no control)", as_arm("dr_grpo"),
    "the estimator each control is added to: balanced, without the std normalisation (Dr. GRPO, arXiv 2503.20783)")
ENTROPY_FADE = Control(
    "FADE", as_arm("fade:h_star_ratio=0.7"),
    "FADE at its best setting on the paper preset: H* = 0.7 x the first entropy, the arm with the highest pass@k "
    "mean there (docs/results/paper)")
#: dr_grpo with each control at its recommended and its tuned setting, and DAPO's combination (in
#: this order, so that the report's palette gives the two settings of a control one hue).
ENTROPY_CONTROLS: tuple[Control, ...] = (
    Control("entropy bonus, recommended", as_arm("dr_grpo", entropy="entropy_bonus:coef=0.001"),
            "coefficient 0.001: verl's default until v0.4 and its suggested value when enabling the bonus (verl "
            "PR 1770); Cui et al. report 0.0001-0.001 too weak and 0.01 exploding the entropy at 7B"),
    Control("entropy bonus, tuned", as_arm("dr_grpo", entropy="entropy_bonus:coef=0.01"),
            "coefficient x10 (the tuning rule)"),
    Control("adaptive entropy, recommended", as_arm("dr_grpo", entropy="adaptive_entropy"),
            "TRL 1.16's use_adaptive_entropy defaults (Skywork-OR1, arXiv 2505.22312): target 0.2 nats, step "
            "0.005, coefficient from 0 within [0, 1]"),
    Control("adaptive entropy, tuned", as_arm("dr_grpo", entropy="adaptive_entropy:target_ratio=0.7"),
            "target 0.7 x the first entropy, FADE's H* (the tuning rule); TRL's other defaults"),
    Control("clip-higher, recommended", as_arm("dr_grpo", policy_loss="ppo_clip:clip_ratio_high=0.28"),
            "DAPO (arXiv 2503.14476): clip_ratio_low 0.2, clip_ratio_high 0.28; verl's dual clip c = 3"),
    Control("clip-higher, tuned", as_arm("dr_grpo", policy_loss="ppo_clip:clip_ratio_high=1.0"),
            "room above the symmetric clip x10: clip_ratio_high 1.0 (the tuning rule)"),
    Control("Clip-Cov, recommended",
            as_arm("dr_grpo", policy_loss="clip_cov:clip_ratio_high=1.0:clip_ratio_low=1.0"),
            f"{_RECIPE}: clip_cov_ratio 0.0002, band (1, 5), ratio clip [0, 2]; at this scale one token per "
            "minibatch"),
    Control("Clip-Cov, tuned",
            as_arm("dr_grpo", policy_loss="clip_cov:clip_cov_ratio=0.02:clip_ratio_high=1.0:clip_ratio_low=1.0"),
            "the recipe with 10 tokens per minibatch: clip_cov_ratio 0.02 (the tuning rule)"),
    Control("KL-Cov, recommended", as_arm("dr_grpo", policy_loss="kl_cov:kl_cov_ratio=0.002:ppo_kl_coef=1.0"),
            f"{_RECIPE}: kl_cov_ratio 0.002, ppo_kl_coef 1; at this scale one token per minibatch"),
    Control("KL-Cov, tuned", as_arm("dr_grpo", policy_loss="kl_cov:kl_cov_ratio=0.02:ppo_kl_coef=1.0"),
            "the recipe with 10 tokens per minibatch: kl_cov_ratio 0.02 (the tuning rule)"),
    Control("DAPO: clip-higher + dynamic sampling",
            as_arm("dr_grpo", policy_loss="ppo_clip:clip_ratio_high=0.28", filter_zero_variance=True),
            "DAPO as it runs: clip_ratio_high 0.28, groups whose rewards all agree dropped and prompts resampled "
            "(at most 10 draws, verl's max_num_gen_batches in the DAPO and entropy recipes), token-mean"),
)
#: FADE's static twin: on this task FADE's alpha reaches its cap of 3 within about 60 steps and
#: stays there while delta stays near 1 (docs/results/paper), so Power(alpha = 3) is the static
#: estimator FADE mostly behaves as, and the control that tells what its schedule adds.
ENTROPY_STATIC_TWIN = Control(
    "Power(alpha=3), FADE's static twin", as_arm("power:alpha=3"),
    "the static estimator FADE's schedule settles at here: alpha at its cap of 3, delta near 1 (docs/results/paper)")
#: FADE with DAPO's clip-higher: whether the two add up.
ENTROPY_FADE_COMBINED = Control(
    "FADE + clip-higher", as_arm("fade:h_star_ratio=0.7", policy_loss="ppo_clip:clip_ratio_high=0.28"),
    "FADE's arm with DAPO's clip_ratio_high 0.28")

#: The arms FADE is compared with in the entropy preset, in the report's order.
ENTROPY_COMPARED: tuple[Control, ...] = (
    ENTROPY_BASELINE,
    ENTROPY_STATIC_TWIN,
    *ENTROPY_CONTROLS,
    ENTROPY_FADE_COMBINED,
)

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
