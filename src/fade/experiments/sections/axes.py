"""The sign and difficulty axes in words."""

from __future__ import annotations

from ..claims.difficulty_axis import DifficultyAxis
from ..claims.sign_axis import SignAxis
from .base import ClaimSection, Table, line, words


@words(SignAxis)
def sign_axis(key: str, r: SignAxis) -> ClaimSection:
    section = ClaimSection(key, "Sign axis: entropy collapse and the rank-1 funnel", r.task)
    table = Table(
        ["estimator", "role", "sign_balance", f"entropy drop / step, first {r.early} steps (x1e-3)",
         "entropy first → final", "final rank1_share", "peak pass@1"],
        caption="mean ± std over seeds; sign_balance and the rates are per-run means over steps",
    )
    for role, specs in r.roles:
        for spec in specs:
            st = r.stats[spec]
            table.rows.append([
                spec, role, st["sign_balance_mean"].text(), st["entropy_drop_rate"].text(2, scale=1e3),
                f"{st['entropy_first'].text(2)} → {st['entropy_final'].text(2)}", st["rank1_final"].text(),
                st["peak_pass1"].text(),
            ])
    section.tables.append(table)
    balanced = ", ".join(r.balanced)
    if r.success_collapses is not None:
        section.verdicts.append(line(
            f"Success-biased weights ({', '.join(r.success)}) collapse entropy faster than balanced ones "
            f"({balanced}): larger entropy drop per step over the first {r.early} steps", r.success_collapses))
    if r.failure_holds is not None:
        section.verdicts.append(line(
            f"Failure-biased weights ({', '.join(r.failure)}) hold entropy: smaller entropy drop per step than "
            f"balanced ones over the first {r.early} steps", r.failure_holds))
    if r.failure_funnels is not None:
        section.verdicts.append(
            line(
                "Failure-biased weights drive the head update's rank-1 share up: "
                "higher final rank1_share than balanced ones",
                r.failure_funnels,
            )
        )
    return section


@words(DifficultyAxis)
def difficulty_axis(key: str, r: DifficultyAxis) -> ClaimSection:
    section = ClaimSection(key, "Difficulty axis: Power(alpha), effective sample size and where the gains land", r.task)
    table = Table(
        ["alpha", "runs of", "effective_sample_fraction", "difficulty (mass-weighted solve rate)", "peak pass@1",
         *[f"pass@1 gain d{b}" for b in r.buckets]],
        caption="gains: final minus base pass@1 per difficulty bucket (d1 easiest); alpha = 1 is dr_grpo exactly",
    )
    for alpha, spec in r.levels:
        st = r.stats[spec]
        table.rows.append(
            [
                str(alpha),
                spec,
                st["esf_mean"].text(),
                st["difficulty_mean"].text(),
                st["peak_pass1"].text(),
                *[st[f"gain/d{b}"].text() for b in r.buckets],
            ]
        )
    section.tables.append(table)
    section.verdicts.append(line("The effective sample fraction falls as alpha grows", r.esf_falls))
    if r.hard_gains is not None:
        (a_lo, _), (a_hi, _) = r.levels[0], r.levels[-1]
        section.verdicts.append(line(
            f"Harder focus moves the gains to hard prompts: the hardest bucket (d{r.hardest}) gains more under "
            f"alpha={a_hi} than under alpha={a_lo}", r.hard_gains))
        for top in r.top_bucket:
            if top is not None:
                alpha, bucket, gain = top
                section.notes.append(f"alpha={alpha}: the largest mean gain is in d{bucket} ({gain:+.3f}).")
    return section
