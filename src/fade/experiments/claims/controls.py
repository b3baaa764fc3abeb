"""FADE against the controls practitioners use for entropy collapse instead: for each arm of the
entropy comparison, FADE minus that arm on the final pass@k mean, the peak pass@1, the final
entropy and the distinct correct answers, paired by seed.

The arms are :data:`ENTROPY_COMPARED`, which the entropy preset trains
(:mod:`fade.experiments.presets.entropy`): dr_grpo alone, FADE's static twin Power(alpha = 3),
dr_grpo with each control at its recommended and its tuned setting, DAPO's clip-higher with dynamic
sampling, and FADE with clip-higher, each a :class:`Control` (the arm and where its setting comes
from). Applies to a task where FADE's arm (:data:`ENTROPY_FADE`) and at least one control ran, so a
sweep without the controls (the paper preset, whose FADE and dr_grpo arms are the same specs) has
no such section. Each measure is its own verdict, "FADE is higher", read by
:func:`~fade.experiments.stats.compare`: a control that keeps more entropy than FADE and less
pass@k shows as one verdict of each sign, not as one mixed answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..design import Arm, as_arm
from ..runs import Runs
from ..stats import compare
from .base import Claim, Context, Judgement, Reads, StatTable, judge, stat_table


@dataclass(frozen=True)
class Control:
    """One arm of the entropy comparison in words: its ``name`` (the control and its setting), the
    :class:`~fade.experiments.design.Arm` it trains, and the ``source`` of the setting."""

    name: str
    arm: Arm
    source: str


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

#: The measures, each (scalar of the run summaries, its name in a comparison, its name in words).
MEASURES: tuple[tuple[str, str, str], ...] = (
    ("passk_mean", "pass@k mean", "final pass@k mean"),
    ("peak_pass1", "peak", "peak pass@1"),
    ("entropy_final", "entropy", "final entropy"),
    ("distinct_correct_final", "distinct", "number of distinct correct answers per problem"),
)


def compared(runs: Runs) -> list[Control]:
    """The arms FADE is compared with that these runs trained: dr_grpo, FADE's static twin
    Power(alpha = 3), the controls, FADE with clip-higher; none unless FADE's arm and at least one
    control ran."""
    if not runs.has(ENTROPY_FADE.arm) or not any(runs.has(c.arm) for c in ENTROPY_CONTROLS):
        return []
    return [c for c in ENTROPY_COMPARED if runs.has(c.arm)]


@dataclass(frozen=True)
class Controls:
    """FADE's arm and the arms it is compared with (each a :class:`~fade.experiments.design.Control`,
    keyed in ``stats`` and ``verdicts`` by its arm's text), the final pass@k of each at every logged
    k (``ks``), the measures over seeds, and per arm one verdict per measure, "FADE is higher"."""

    task: str
    fade: Control
    arms: tuple[Control, ...]
    ks: tuple[int, ...]
    stats: StatTable
    verdicts: dict[str, dict[str, Judgement]]


def measure(task: str, context: Context) -> Controls | None:
    runs = context.runs(task)
    arms = compared(runs)
    if not arms:
        return None
    everyone = [ENTROPY_FADE, *arms]
    ks = sorted({k for c in everyone for s in runs.of(c.arm) for k in s.passk(s.final)})
    keys = (*(key for key, _, _ in MEASURES), *(f"pass@{k}" for k in ks))
    stats = stat_table(runs, [c.arm.text for c in everyone], keys)
    fade = stats[ENTROPY_FADE.arm.text]
    verdicts = {
        c.arm.text: {
            key: judge([(f"{short} vs {c.name}", compare(fade[key], stats[c.arm.text][key], greater=True))])
            for key, short, _ in MEASURES
        }
        for c in arms
    }
    return Controls(task=task, fade=ENTROPY_FADE, arms=tuple(arms), ks=tuple(ks), stats=stats, verdicts=verdicts)


CLAIM = Claim("controls", Reads(overrides=True), measure)
