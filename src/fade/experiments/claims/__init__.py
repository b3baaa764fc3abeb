"""The paper's claims measured on a sweep's runs: one module per claim, each a
:class:`~.base.Claim` (which runs it applies to, what it measures as a typed result, its verdicts).

:data:`CHECKS` are what must hold before the claims can be read (the regime is calibrated, FADE's
sign knob acts, FADE's schedule acts, no run collapsed); :data:`CLAIMS` are the claims, in the
report's order. Each is measured on every task it applies to, claim by claim (:func:`measure`); the results are numbers
and verdicts only, and :mod:`fade.experiments.sections` words them. Adding a claim: a module here
with its result and ``CLAIM = Claim(key, measure)``, one line below, and its wording in
:mod:`fade.experiments.sections` (docs/architecture.md, "How to add a claim").
"""

from __future__ import annotations

from collections.abc import Sequence

from ..design import Preset
from ..runs import SweepRun
from . import (
    ablations,
    ablations_engaged,
    collapse,
    comparisons,
    controls,
    controls_match,
    defaults,
    difficulty_axis,
    entropy_check,
    entropy_formula,
    fade_arms,
    fade_vs_baselines,
    regime,
    schedule,
    sign_axis,
    sign_knob,
    time_to_threshold,
)
from .base import Claim, Context, Finding, Judgement, fade_spec

__all__ = ["CHECKS", "CLAIMS", "Claim", "Context", "Finding", "Judgement", "fade_spec", "measure", "measure_checks"]

#: The design checks, in the report's order.
CHECKS: tuple[Claim, ...] = (regime.CLAIM, sign_knob.CLAIM, schedule.CLAIM, collapse.CLAIM)

#: The claims, in the report's order.
CLAIMS: tuple[Claim, ...] = (
    comparisons.CLAIM,
    sign_axis.CLAIM,
    entropy_check.CLAIM,
    entropy_formula.CLAIM,
    difficulty_axis.CLAIM,
    fade_vs_baselines.CLAIM,
    fade_arms.CLAIM,
    ablations.CLAIM,
    ablations_engaged.CLAIM,
    defaults.CLAIM,
    defaults.CONFIRM,
    controls.CLAIM,
    controls_match.CLAIM,
    time_to_threshold.CLAIM,
)


def _measure(claims: Sequence[Claim], summaries: Sequence[SweepRun], preset: Preset | None = None,
             choice: str | None = None) -> list[Finding]:
    """Each claim on its context: every run when it reads the arms with training of their own
    (``Claim.reads_overrides``), else only the runs trained as their plan says."""
    plain = [s for s in summaries if not s.run.overrides]
    contexts = {False: Context(plain, preset, choice), True: Context(summaries, preset, choice)}
    findings = []
    for claim in claims:
        context = contexts[claim.reads_overrides]
        findings += [Finding(claim.key, task, result) for task in claim.tasks(context)
                     if (result := claim.measure(task, context)) is not None]
    return findings


def measure(summaries: Sequence[SweepRun], preset: Preset | None = None, choice: str | None = None) -> list[Finding]:
    """Every claim of :data:`CLAIMS` the runs cover, measured on each task it applies to; where the
    preset names the claims its report reads (:attr:`Preset.claims`), only those."""
    chosen = CLAIMS if preset is None or preset.claims is None else tuple(c for c in CLAIMS if c.key in preset.claims)
    return _measure(chosen, summaries, preset, choice)


def measure_checks(summaries: Sequence[SweepRun]) -> list[Finding]:
    """Every design check of :data:`CHECKS` the runs cover, on each task."""
    return _measure(CHECKS, summaries)
