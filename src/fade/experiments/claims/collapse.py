"""Design check: no run ends far below its base, so no claim compares a collapsed run.

Applies to a task with a run that logged pass@1 at its base and last evaluations, of any arm (a
control's runs too: :class:`~fade.experiments.design.Arm`). A run whose last
evaluation's pass@1 is below :data:`COLLAPSE_FRACTION` of its base evaluation's collapsed (a
diverged step size, or an estimator that destroys the policy); the claims still count it, and
the check names it so that no verdict is read without knowing, and the report lists it among the
reasons a claim may not reproduce.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .base import Claim, Context, Figures, Reads, Table, VerdictLine, Words
from .sign_knob import REQUIREMENT_MET, REQUIREMENT_NOT_MET

COLLAPSE_FRACTION = 0.5


@dataclass(frozen=True)
class Collapsed:
    """A collapsed run: its seed, and its base and last pass@1."""

    seed: int
    base: float
    final: float


@dataclass(frozen=True)
class Collapse:
    """The runs measured, per arm (its text: the estimator spec when it sets nothing else) the
    collapsed runs and how many of its runs were measured, and the check's outcome."""

    task: str
    measured: int
    collapsed: dict[str, tuple[Collapsed, ...]]
    totals: dict[str, int]
    outcome: str

    @property
    def seeds(self) -> dict[str, list[int]]:
        """The collapsed seeds per arm."""
        return {spec: [c.seed for c in runs] for spec, runs in self.collapsed.items()}


def measure(task: str, context: Context) -> Collapse | None:
    measured = [s for s in sorted(context.of(task), key=lambda s: (s.run.arm.text, s.seed))
                if math.isfinite(s.scalars["base_pass1"]) and math.isfinite(s.scalars["final_pass1"])]
    if not measured:
        return None
    collapsed: dict[str, list[Collapsed]] = {}
    for s in measured:
        if s.scalars["final_pass1"] < COLLAPSE_FRACTION * s.scalars["base_pass1"]:
            collapsed.setdefault(s.run.arm.text, []).append(
                Collapsed(s.seed, s.scalars["base_pass1"], s.scalars["final_pass1"])
            )
    totals = {arm: sum(1 for s in measured if s.run.arm.text == arm) for arm in collapsed}
    return Collapse(task=task, measured=len(measured), collapsed={spec: tuple(r) for spec, r in collapsed.items()},
                    totals=totals, outcome=REQUIREMENT_NOT_MET if collapsed else REQUIREMENT_MET)


def verdict(r: Collapse) -> list[VerdictLine]:
    statement = (f"Every run ends with pass@1 at least {COLLAPSE_FRACTION:g} x its base evaluation's, so no claim "
                 "compares a collapsed run")
    if r.collapsed:
        names = "; ".join(f"{spec} seeds {', '.join(str(c.seed) for c in runs)}" for spec, runs in r.collapsed.items())
        detail = (f"{sum(map(len, r.collapsed.values()))} of {r.measured} runs collapsed ({names}); claims that "
                  "involve them measure the collapse, not the estimator")
    else:
        detail = f"{r.measured} runs, none collapsed"
    return [VerdictLine(statement, r.outcome, detail)]


def _caveat(r: Collapse):
    def caveat(verdicts) -> str:
        return (f"some runs collapsed (**{REQUIREMENT_NOT_MET}**), and every claim that compares them reads the "
                "collapse rather than the estimator. <sub>"
                + "; ".join(f"{spec}: seeds {', '.join(map(str, seeds))}" for spec, seeds in r.seeds.items())
                + "</sub>")

    return caveat


def words(r: Collapse) -> Words:
    said = Words("Collapse check: no run ends far below its base", caveat=_caveat(r) if r.collapsed else None)
    if r.collapsed:
        table = Table(
            ["estimator", "collapsed seeds", "pass@1 base -> last evaluation per collapsed seed"],
            caption=f"collapsed: the last evaluation's pass@1 below {COLLAPSE_FRACTION:g} x the base evaluation's",
        )
        for spec, runs in r.collapsed.items():
            table.rows.append([spec, f"{len(runs)} of {r.totals[spec]}", ", ".join(
                f"seed {c.seed}: {c.base:.3f} -> {c.final:.3f}" for c in runs)])
        said.tables.append(table)
    return said


CLAIM = Claim(
    "collapse",
    reads=Reads(overrides=True),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
