"""FADE against the controls practitioners use for entropy collapse instead: for each arm of the
entropy comparison, FADE minus that arm on the final pass@k mean, the peak pass@1, the final
entropy and the distinct correct answers, paired by seed.

The arms are the entropy preset's (:data:`~fade.experiments.presets.entropy.ENTROPY_COMPARED`): dr_grpo alone, FADE's
static twin Power(alpha = 3), dr_grpo with each control at its recommended and its tuned setting,
DAPO's clip-higher with dynamic sampling, and FADE with clip-higher. Applies to a task where
FADE's arm (:data:`~fade.experiments.presets.entropy.ENTROPY_FADE`) and at least one control ran, so a
sweep without the controls (the paper preset, whose FADE and dr_grpo arms are the same specs) has
no such section. Each measure is its own verdict, "FADE is higher", read by
:func:`~fade.experiments.stats.compare`: a control that keeps more entropy than FADE and less
pass@k shows as one verdict of each sign, not as one mixed answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..design import Control
from ..presets.entropy import ENTROPY_COMPARED, ENTROPY_CONTROLS, ENTROPY_FADE
from ..runs import Runs
from ..stats import compare
from .base import Claim, Context, Judgement, Reads, StatTable, judge, stat_table

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
