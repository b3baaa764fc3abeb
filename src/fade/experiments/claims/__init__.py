"""The paper's claims measured on a sweep's runs: one module per claim, each holding its
:class:`~.base.Claim` as ``CLAIM`` (what it reads, what it measures as a typed result, its
verdict, its words and its figures), registered by its module's name below.

:data:`CHECKS` are what must hold before the claims can be read (the regime is calibrated, FADE's
sign knob acts, FADE's schedule acts, no run collapsed); :data:`CLAIMS` are the claims, in the
report's order. Each is measured on every task it reads, claim by claim (:func:`measure`,
:func:`measure_checks`), and put in words (:func:`report_sections`, :func:`design_checks`). Adding a
claim: its module here and its name below (docs/architecture.md, "How to add a claim").
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module

from ..design import Preset
from ..runs import SweepRun
from .base import Claim, ClaimSection, Context, Finding, Judgement, fade_spec, section

__all__ = [
    "CHECKS",
    "CHECK_MODULES",
    "CLAIMS",
    "CLAIM_MODULES",
    "Claim",
    "ClaimSection",
    "Context",
    "Finding",
    "Judgement",
    "design_checks",
    "fade_spec",
    "measure",
    "measure_checks",
    "report_sections",
]

#: The design checks, each a module of this package, in the report's order.
CHECK_MODULES = ("regime", "sign_knob", "schedule", "collapse")
#: The claims, each a module of this package, in the report's order.
CLAIM_MODULES = (
    "comparisons",
    "sign_axis",
    "entropy_check",
    "entropy_formula",
    "difficulty_axis",
    "fade_vs_baselines",
    "fade_arms",
    "ablations",
    "ablations_engaged",
    "defaults",
    "carry_over",
    "controls",
    "controls_match",
    "time_to_threshold",
)

#: The design checks, in the report's order.
CHECKS: tuple[Claim, ...] = tuple(import_module(f"{__name__}.{name}").CLAIM for name in CHECK_MODULES)
#: The claims, in the report's order.
CLAIMS: tuple[Claim, ...] = tuple(import_module(f"{__name__}.{name}").CLAIM for name in CLAIM_MODULES)


def _measure(claims: Sequence[Claim], summaries: Sequence[SweepRun], preset: Preset | None = None,
             choice: str | None = None) -> list[Finding]:
    """Each claim on its context: every run when it reads the arms with training of their own
    (``Reads.overrides``), else only the runs trained as their plan says."""
    plain = [s for s in summaries if not s.run.overrides]
    contexts = {False: Context(plain, preset, choice), True: Context(summaries, preset, choice)}
    findings = []
    for claim in claims:
        context = contexts[claim.reads.overrides]
        findings += [Finding(claim, task, result) for task in claim.reads.tasks(context)
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


def report_sections(
    summaries: Sequence[SweepRun], preset: Preset | None = None, choice: str | None = None
) -> list[ClaimSection]:
    """Every claim the runs can answer, per task, in the report's order, in words (the design
    checks that come before them: :func:`design_checks`)."""
    return [section(f) for f in measure(summaries, preset, choice)]


def design_checks(summaries: Sequence[SweepRun]) -> list[ClaimSection]:
    """What must hold before the claims can be read, per task: the regime check on every task
    first, then FADE's sign knob, its schedule, then the collapse check, each with its ``check``
    line whose outcome is one of its module's outcome words or ``not measured``; a section is
    absent where nothing it needs ran."""
    return [section(f, check=True) for f in measure_checks(summaries)]
