"""FADE against the entropy controls in words: the arms and where their settings come from, FADE
minus each on the four measures, and whether a control matches FADE's pass@k at equal pass@1."""

from __future__ import annotations

from ..claims.controls import MEASURES, Controls
from ..claims.controls_match import MatchedPassk
from ..stats import Verdict
from .base import ClaimSection, Table, line, words

#: The rules that chose the entropy preset's tuned settings, as the report states them
#: (docs/results/entropy/TUNING.md has their reasoning).
TUNING_RULES: tuple[str, ...] = (
    "Every arm uses one update schedule: each batch of 16 prompts x G = 16 is used for 4 optimizer steps on a "
    "quarter of it (about 500 response tokens), the first on policy, the next three off it, where a clip can act; "
    "every arm aggregates token-mean. The learning rate is a quarter of the paper preset's (5e-5), so a batch moves "
    "the weights about as far as the paper preset's one Adam step; this was set after a first sweep at the paper "
    "preset's 2e-4 over-stepped (dr_grpo never above its base pass@1 on 4 of 5 seeds; docs/results/entropy-lr2e-4), "
    "and before any run at 5e-5 other than dr_grpo's pilot on seeds 1 and 2.",
    "A tuned setting is one decade stronger than the recommended one, in what acts at this scale: the entropy "
    "bonus's coefficient x10; clip-higher's room above the symmetric clip x10 (0.08 -> 0.8); the tokens Clip-Cov "
    "and KL-Cov touch per minibatch x10. Those touch max(1, floor(ratio x N)) of a minibatch's N ~ 500 tokens, so "
    "verl's default ratio and the 7B recipes' ratios all touch the one token the floor grants; the tuned ratio "
    "0.02 touches 10.",
    "The adaptive entropy controller's tuned target is the entropy FADE aims at: 0.7 x the first observed "
    "entropy (FADE's h_star_ratio = 0.7).",
    "The tuning rules were fixed before any run of this preset, and kept when the learning rate changed.",
)


def _difference(verdict: Verdict) -> str:
    """``+0.031 [+0.012, +0.050]``: the paired difference and its interval, or a dash without one."""
    iv = verdict.interval
    return "—" if iv is None else f"{iv.mean:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}]"


@words(Controls)
def controls(key: str, r: Controls) -> ClaimSection:
    fade = r.fade
    section = ClaimSection(key, f"FADE ({fade.arm.text}) against the entropy controls", r.task)
    arms = Table(["arm", "trains", "its setting"], caption="every arm adds to its estimator the training settings "
                 "after the first +; the tuned settings follow the rules below, fixed before any run")
    for c in (fade, *r.arms):
        arms.rows.append([f"**{c.name}**" if c is fade else c.name, f"`{c.arm.text}`", c.source])
    section.tables.append(arms)
    header = [label for _, _, label in MEASURES]
    means = Table(["arm", *header], caption="mean ± std over seeds; pass@k mean: the final pass@k averaged over the "
                  "logged k; final entropy: the mean token entropy over the last tenth of the steps")
    for c in (fade, *r.arms):
        st = r.stats[c.arm.text]
        means.rows.append([f"**{c.name}**" if c is fade else c.name,
                           *[st[key].text(2 if key == "entropy_final" else 3) for key, _, _ in MEASURES]])
    section.tables.append(means)
    differences = Table(["arm", *[f"FADE − arm: {label}" for label in header]],
                        caption="mean paired difference over the seeds both share and its 95% bootstrap interval "
                                "(a dash: fewer than 5 shared seeds); above 0: FADE is higher")
    for c in r.arms:
        differences.rows.append(
            [c.name, *[_difference(r.verdicts[c.arm.text][key].parts[0][1]) for key, _, _ in MEASURES]]
        )
    section.tables.append(differences)
    if r.ks:
        passk = Table(["arm", *[f"pass@{k}" for k in r.ks]], caption="final evaluation, mean ± std over seeds")
        for c in (fade, *r.arms):
            passk.rows.append([f"**{c.name}**" if c is fade else c.name,
                               *[r.stats[c.arm.text][f"pass@{k}"].text() for k in r.ks]])
        section.tables.append(passk)
    for c in r.arms:
        for key, _, label in MEASURES:
            section.verdicts.append(line(f"FADE has a higher {label} than {c.name}", r.verdicts[c.arm.text][key]))
    section.notes.append("How the settings were chosen: " + " ".join(TUNING_RULES))
    return section


@words(MatchedPassk)
def controls_match(key: str, r: MatchedPassk) -> ClaimSection:
    margin = f"±{r.margin:g}"
    section = ClaimSection(key, "Does a control match FADE's pass@k at equal pass@1?", r.task)
    table = Table(["arm", "peak pass@1: arm − FADE", f"equal pass@1 (interval within {margin})",
                   "final pass@k mean: FADE − arm", "answer"],
                  caption="mean paired difference and its 95% bootstrap interval over the seeds both share")
    for row in r.rows:
        table.rows.append([row.control.name, _difference(row.pass1), "yes" if row.equal_pass1 else "no",
                           _difference(row.passk), row.answer])
    section.tables.append(table)
    if r.unmatched is not None:
        section.verdicts.append(line(
            f"FADE's final pass@k mean is unmatched at equal pass@1: higher than that of every arm whose peak pass@1 "
            f"equals FADE's (paired 95% interval of the difference within {margin})", r.unmatched))
    section.notes.append(
        f"Equal pass@1: the 95% paired interval of the peak pass@1 difference lies inside {margin}, the paper "
        "preset's minimum detectable peak-pass@1 difference at 5 seeds; an interval that contains 0 but reaches "
        "past it does not count. Matching FADE's pass@k: at equal pass@1, FADE's final pass@k mean is not resolved "
        "higher (its interval contains 0, or lies below 0 where the arm's is higher).")
    matching = r.matching
    if r.unmatched is None:
        section.notes.append("No arm's peak pass@1 equals FADE's by this definition, so the question has no answer at "
                             "this resolution; the table shows how far each arm's accuracy lies from FADE's.")
    elif matching:
        section.notes.append("At equal pass@1, FADE's final pass@k mean is not resolved above these arms' (a match "
                             "within what the seeds resolve, whatever the point estimate; the table gives each "
                             "interval): " + ", ".join(c.name for c in matching) + ".")
    else:
        section.notes.append("Every arm at equal pass@1 has a final pass@k mean resolved below FADE's.")
    return section
