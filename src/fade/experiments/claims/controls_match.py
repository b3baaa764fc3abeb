"""Does any control match FADE's pass@k at equal pass@1? The question behind "is FADE better than
clip-higher or an entropy bonus": a control that buys pass@k with pass@1 makes another trade, so
only the arms whose accuracy equals FADE's are asked about diversity.

- **Equal pass@1**: the 95% paired interval of the peak pass@1 difference (arm - FADE) lies inside
  [-:data:`EQUAL_PASS1_MARGIN`, +:data:`EQUAL_PASS1_MARGIN`]. The margin, 0.045, is the minimum
  detectable peak-pass@1 difference of the paper preset's design at 5 seeds (its report): the arm is
  shown to lie within what the design tells apart, not merely not shown to differ (an interval that
  contains 0 but reaches past the margin does not count).
- **Matches FADE's pass@k**: at equal pass@1, the verdict on "FADE's final pass@k mean is higher"
  (:func:`~fade.experiments.stats.compare`) is not supported: unresolved (the arm matches within what
  the seeds resolve) or contradicted (the arm's is higher).

The claim "FADE's pass@k is unmatched at equal pass@1" combines the pass@k verdicts of the arms at
equal pass@1 (:func:`~fade.experiments.stats.combine`): supported when FADE is ahead of each,
contradicted when one is ahead of FADE, unresolved when one matches it within its interval; it has
no verdict when no arm's pass@1 equals FADE's. The arms asked are dr_grpo and every control of
:mod:`.controls` (FADE's own combination with clip-higher is FADE). Applies where that claim does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..stats import CONTRADICTED, SUPPORTED, Verdict, compare
from .base import Claim, Context, Figures, Judgement, Reads, Table, VerdictLine, Words, difference, judge, line
from .controls import ENTROPY_FADE, ENTROPY_FADE_COMBINED, Control, compared

#: Half-width of the band "equal pass@1": the paper preset's minimum detectable peak-pass@1 difference.
EQUAL_PASS1_MARGIN = 0.045
#: Each arm's answer: at equal pass@1 its pass@k matches, exceeds or falls below FADE's; or its pass@1
#: is not equal to FADE's; or the two share too few seeds for an interval.
MATCHES, EXCEEDS, BELOW, NOT_EQUAL, NOT_PAIRED = (
    "matches FADE's pass@k (not resolved apart)",
    "exceeds FADE's pass@k",
    "below FADE's pass@k",
    "pass@1 not equal",
    "too few paired seeds",
)


@dataclass(frozen=True)
class Match:
    """One arm: its peak pass@1 against FADE's (``pass1``, whose interval is arm - FADE), FADE's
    final pass@k mean against the arm's (``passk``, "FADE is higher") and the arm's answer."""

    control: Control
    pass1: Verdict
    passk: Verdict
    answer: str

    @property
    def equal_pass1(self) -> bool:
        return self.answer in (MATCHES, EXCEEDS, BELOW)


@dataclass(frozen=True)
class MatchedPassk:
    """FADE's arm, the margin of equal pass@1, one :class:`Match` per arm asked, and the verdict
    "FADE's pass@k is unmatched at equal pass@1" (None: no arm's pass@1 equals FADE's)."""

    task: str
    fade: Control
    margin: float
    rows: tuple[Match, ...]
    unmatched: Judgement | None

    @property
    def matching(self) -> tuple[Control, ...]:
        """The arms whose pass@k matches or exceeds FADE's at equal pass@1."""
        return tuple(row.control for row in self.rows if row.answer in (MATCHES, EXCEEDS))


def _answer(pass1: Verdict, passk: Verdict, margin: float) -> str:
    if pass1.interval is None or passk.interval is None:
        return NOT_PAIRED
    if not (-margin <= pass1.interval.low and pass1.interval.high <= margin):
        return NOT_EQUAL
    return {SUPPORTED: BELOW, CONTRADICTED: EXCEEDS}.get(passk.outcome, MATCHES)


def measure(task: str, context: Context) -> MatchedPassk | None:
    runs = context.runs(task)
    asked = [c for c in compared(runs) if c is not ENTROPY_FADE_COMBINED]
    if not asked:
        return None
    fade_peak, fade_passk = runs.stat(ENTROPY_FADE.arm, "peak_pass1"), runs.stat(ENTROPY_FADE.arm, "passk_mean")
    rows = []
    for control in asked:
        pass1 = compare(runs.stat(control.arm, "peak_pass1"), fade_peak, greater=True)
        passk = compare(fade_passk, runs.stat(control.arm, "passk_mean"), greater=True)
        rows.append(Match(control, pass1, passk, _answer(pass1, passk, EQUAL_PASS1_MARGIN)))
    equal = [row for row in rows if row.equal_pass1]
    unmatched = judge((f"pass@k mean vs {row.control.name}", row.passk) for row in equal) if equal else None
    return MatchedPassk(task=task, fade=ENTROPY_FADE, margin=EQUAL_PASS1_MARGIN, rows=tuple(rows), unmatched=unmatched)


def verdict(r: MatchedPassk) -> list[VerdictLine]:
    if r.unmatched is None:
        return []
    return [line(f"FADE's final pass@k mean is unmatched at equal pass@1: higher than that of every arm whose peak "
                 f"pass@1 equals FADE's (paired 95% interval of the difference within ±{r.margin:g})", r.unmatched)]


def words(r: MatchedPassk) -> Words:
    margin = f"±{r.margin:g}"
    table = Table(["arm", "peak pass@1: arm − FADE", f"equal pass@1 (interval within {margin})",
                   "final pass@k mean: FADE − arm", "answer"],
                  caption="mean paired difference and its 95% bootstrap interval over the seeds both share")
    for row in r.rows:
        table.rows.append([row.control.name, difference(row.pass1), "yes" if row.equal_pass1 else "no",
                           difference(row.passk), row.answer])
    said = Words("Does a control match FADE's pass@k at equal pass@1?", [table], notes=[
        f"Equal pass@1: the 95% paired interval of the peak pass@1 difference lies inside {margin}, the paper "
        "preset's minimum detectable peak-pass@1 difference at 5 seeds; an interval that contains 0 but reaches "
        "past it does not count. Matching FADE's pass@k: at equal pass@1, FADE's final pass@k mean is not resolved "
        "higher (its interval contains 0, or lies below 0 where the arm's is higher)."])
    matching = r.matching
    if r.unmatched is None:
        said.notes.append("No arm's peak pass@1 equals FADE's by this definition, so the question has no answer at "
                          "this resolution; the table shows how far each arm's accuracy lies from FADE's.")
    elif matching:
        said.notes.append("At equal pass@1, FADE's final pass@k mean is not resolved above these arms' (a match "
                          "within what the seeds resolve, whatever the point estimate; the table gives each "
                          "interval): " + ", ".join(c.name for c in matching) + ".")
    else:
        said.notes.append("Every arm at equal pass@1 has a final pass@k mean resolved below FADE's.")
    return said


CLAIM = Claim(
    "controls_match",
    reads=Reads(overrides=True),
    measure=measure,
    verdict=verdict,
    words=words,
    figures=Figures(),
)
