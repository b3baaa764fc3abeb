"""The numbers behind the sweep's report (:mod:`fade.experiments.results_report`): the verdicts'
tally and table, the intervals' verdicts, the smallest difference the seeds could detect, and
``results.json`` with every number the README shows.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from fade.jsonl import json_safe
from fade.testbed.summary import early_steps

from . import design
from .claims.base import ClaimSection, Table, VerdictLine
from .design import Preset
from .runs import Runs, SweepRun
from .stats import (
    CONTRADICTED,
    MIN_PAIRED_SEEDS,
    SUPPORTED,
    UNRESOLVED,
    PairedVerdict,
    Stat,
    Verdict,
    minimum_detectable_difference,
    paired_differences,
    pooled_paired_sd,
)

__all__ = [
    "STATISTICAL_POWER",
    "check_lines",
    "claim_lines",
    "interval_verdicts",
    "md_table",
    "minimum_detectable",
    "num",
    "numbers",
    "paired",
    "results_json",
    "verdict_count",
    "verdict_table",
    "version",
]

#: The statistical power (the chance that a true difference clears the test) at which the report
#: states the minimum detectable difference: the usual 80%. Not Power(alpha), the estimator
#: (``claims/difficulty_axis.POWER_LEVELS``).
STATISTICAL_POWER = 0.8


def md_table(table: Table) -> list[str]:
    """A report table as markdown lines: header, rule, rows (a ``|`` in a cell escaped), then its caption."""
    lines = ["| " + " | ".join(table.header) + " |", "|" + "|".join("---" for _ in table.header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
    if table.caption:
        lines += ["", f"<sub>{table.caption}</sub>"]
    return lines


def check_lines(section: ClaimSection) -> list[str]:
    """A design check in the README: its tables, then its verdict in its own words, then notes."""
    lines = [f"## {section.title} — {section.task}", ""]
    for table in section.tables:
        lines += md_table(table) + [""]
    check: VerdictLine = section.check
    lines += [f"Verdict: **{check.outcome}**. Requirement: {check.statement}. <sub>{check.detail}</sub>", ""]
    for note in section.notes:
        lines += [note, ""]
    return lines


def claim_lines(section: ClaimSection) -> list[str]:
    """A claim in the README: its tables, then each verdict with its outcome and numbers, then notes."""
    lines = [f"## {section.title} — {section.task}", ""]
    for table in section.tables:
        lines += md_table(table) + [""]
    for verdict in section.verdicts:
        lines += [f"- **{verdict.outcome}** — {verdict.statement}. <sub>{verdict.detail}</sub>"]
    if section.verdicts:
        lines += [""]
    for note in section.notes:
        lines += [note, ""]
    return lines


def interval_verdicts(sections: Sequence[ClaimSection]) -> list[Verdict]:
    """Every comparison behind the report that was judged on a paired interval, whether a verdict
    line or only a table reads it (each once)."""
    found: dict[int, Verdict] = {}

    def walk(x: Any) -> None:
        if isinstance(x, Verdict):
            if x.interval is not None:
                found.setdefault(id(x), x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                walk(getattr(x, f.name))
        elif isinstance(x, dict):
            for value in x.values():
                walk(value)
        elif isinstance(x, (list, tuple)):
            for value in x:
                walk(value)

    for section in sections:
        walk(section.result)
        for line in section.verdicts:
            walk([part for _, part in line.parts])
    return list(found.values())


def numbers(verdict: Verdict) -> tuple:
    iv = verdict.interval
    return (iv.mean, iv.low, iv.high, iv.n) if iv is not None else (verdict.outcome, verdict.detail)


def verdict_count(verdict_rows, paired: bool, sections: Sequence[ClaimSection] = ()) -> str:
    """One line: how many claims got each verdict, and, for paired intervals, how many the report
    computed (each 95% on its own; nothing corrects for their number) and how many of them are
    distinct: a comparison that involves an arm whose runs copy another arm's repeats that
    comparison's numbers exactly, so it is counted once, and so is a claim resting on it; then what
    a section adds to the count (its ``tally``: the fixed comparisons read as one family)."""
    counts = Counter(v.outcome for _, v in verdict_rows)
    resolved = counts[SUPPORTED] + counts[CONTRADICTED]
    others = [f"{n} {outcome}" for outcome, n in counts.items() if outcome not in (SUPPORTED, CONTRADICTED)]
    text = (f"{len(verdict_rows)} claims: {resolved} resolved ({counts[SUPPORTED]} {SUPPORTED}, "
            f"{counts[CONTRADICTED]} {CONTRADICTED})" + (f"; {', '.join(others)}" if others else "") + ".")
    distinct_claims = {(v.outcome, tuple(numbers(part) for _, part in v.parts)) for _, v in verdict_rows}
    if len(distinct_claims) < len(verdict_rows):
        text += (f" {len(verdict_rows) - len(distinct_claims)} of them repeat another claim's comparisons exactly (an "
                 f"arm that copies another, listed below), so {len(distinct_claims)} are distinct.")
    if paired:
        computed = interval_verdicts(sections) or [part for _, v in verdict_rows for _, part in v.parts
                                                    if part.interval is not None]
        distinct = len({numbers(v) for v in computed})
        repeats = (f", {distinct} of them distinct ({len(computed) - distinct} repeat another's numbers exactly)"
                   if distinct < len(computed) else "")
        text += (f" The report computed {len(computed)} paired intervals{repeats}, each at 95% on its own with no "
                 f"correction for their number: were no difference real, about {0.05 * distinct:.0f} of them would "
                 "exclude 0 by chance, so a claim resting on one comparison is weaker evidence than one whose "
                 "comparisons agree.")
        text += "".join(section.tally for section in sections if section.tally)
    return text


def paired(verdict_rows: Sequence[tuple[ClaimSection, VerdictLine]]) -> bool:
    """Whether any comparison was judged by the paired rule (enough shared seeds)."""
    return any(part.interval is not None for _, line in verdict_rows for _, part in line.parts)


def _decimals(x: float) -> int:
    """Decimals that show ``x`` to two significant digits: at least 3 below 1 (a rate, a share),
    none from 10 on (steps)."""
    if not (math.isfinite(x) and x > 0):
        return 3
    return max(3 if x < 1 else 0, 1 - math.floor(math.log10(x)))


def verdict_table(verdict_rows: Sequence[tuple[ClaimSection, VerdictLine]]) -> Table:
    """One row per comparison of each claim line: the paired difference, its interval, the verdict."""
    table = Table(["task", "claim", "comparison", "mean difference", "95% CI", "verdict"],
                  caption="a dash: the comparison had fewer than "
                          f"{MIN_PAIRED_SEEDS} shared seeds (or none measured) and kept the spread rule")
    for section, line in verdict_rows:
        for i, (name, part) in enumerate(line.parts):
            claim = line.statement if i == 0 else ""
            iv = part.interval
            if iv is None:
                table.rows.append([section.task, claim, name, "—", "—", part.outcome])
                continue
            d = _decimals(iv.half_width)
            verdict = f"**{part.outcome}**" + (f" (±{iv.half_width:.{d}f})" if part.outcome == UNRESOLVED else "")
            table.rows.append([section.task, claim, name, f"{iv.mean:+.{d}f}", f"[{iv.low:+.{d}f}, {iv.high:+.{d}f}] "
                               f"(n={iv.n})", verdict])
    return table


def minimum_detectable(task: str, summaries: Sequence[SweepRun]) -> dict[str, Any] | None:
    """The design's minimum detectable peak-pass@1 difference on ``task``, with what it rests on.

    n is the number of seeds run on the task; the SD is that of the paired peak-pass@1 differences
    between the balanced baselines (grpo, dr_grpo: two estimators whose difference the paper does
    not claim, so their spread is noise), or pooled over every pair of estimators when fewer than
    two balanced baselines ran (:func:`~fade.experiments.stats.pooled_paired_sd`).
    """
    task_summaries = [s for s in summaries if s.task == task]
    n = len({s.seed for s in task_summaries})
    if n < MIN_PAIRED_SEEDS:
        return None
    runs = Runs(task_summaries)
    specs = list(runs.spec_of.values())
    balanced = runs.present(design.BALANCED)
    pool = balanced if len(balanced) >= 2 else specs
    peak = {spec: runs.stat(spec, "peak_pass1").per_seed() or {} for spec in pool}
    pairs = list(combinations(pool, 2))
    sd, count = pooled_paired_sd([paired_differences(peak[x], peak[y]) for x, y in pairs])
    source = (f"between {', '.join(balanced)}" if pool is balanced
              else f"pooled over {len(pairs)} pair(s) of estimators (fewer than two balanced baselines ran)")
    if not math.isfinite(sd):
        return {"n": n, "sd": None, "mdd": None, "source": source,
                "text": f"not measurable: no pair of estimators shares 2 seeds ({source})"}
    mdd = minimum_detectable_difference(sd, n, power=STATISTICAL_POWER)
    d = _decimals(min(mdd, sd) if sd > 0 else mdd)
    return {
        "n": n,
        "sd": sd,
        "mdd": mdd,
        "differences": count,
        "source": source,
        "text": f"**{mdd:.{d}f}** at n = {n} seeds "
        f"(SD of paired differences {sd:.{d}f}, {source}; {count} differences)",
    }


def num(x: float, digits: int = 3) -> str:
    return "—" if not math.isfinite(x) else f"{x:.{digits}f}"


def version() -> str:
    import fade

    return getattr(fade, "__version__", "unknown")


def _report_value(x: Any) -> Any:
    """The report's own values as JSON's, before :func:`fade.jsonl.json_safe` makes them strict: a
    Stat as its mean, std, count and values, a dict's keys as text."""
    if isinstance(x, Stat):
        return {"mean": x.mean, "std": x.std, "n": x.n, "values": list(x.values)}
    if isinstance(x, dict):
        return {str(k): v for k, v in x.items()}
    return x


def _interval_json(interval: PairedVerdict | None) -> dict[str, Any] | None:
    if interval is None:
        return None
    return {"mean": interval.mean, "low": interval.low, "high": interval.high, "half_width": interval.half_width,
            "n": interval.n, "level": interval.level}


def results_json(preset: Preset, runs, summaries, sections, failures, command: str, choice: str | None,
                  design: dict[str, Any], checks: Sequence[ClaimSection] = ()) -> dict:
    return json_safe({
        "preset": preset.name,
        "command": command,
        "design": design,
        "early_steps": {r.task: early_steps(r.steps) for r in runs},
        "tuned_choice": choice,
        "runs": [
            {"key": s.run.key, "task": s.task, "estimator": s.run.estimator, "seed": s.seed, "steps": s.run.steps,
             "tuned_from": s.run.tuned_from, **({"overrides": dict(s.run.overrides)} if s.run.overrides else {}),
             "scalars": s.scalars, "timing": s.timing}
            for s in summaries
        ],
        "claims": [
            {"key": s.key, "task": s.task, "title": s.title,
             "verdicts": [{"statement": v.statement, "outcome": v.outcome, "detail": v.detail,
                           "parts": [{"name": n, "outcome": p.outcome, "detail": p.detail,
                                      "interval": _interval_json(p.interval)} for n, p in v.parts]}
                          for v in s.verdicts],
             "tables": [{"header": t.header, "rows": t.rows, "caption": t.caption} for t in s.tables]}
            for s in sections
        ],
        "design_checks": [
            {"key": s.key, "task": s.task, "title": s.title, "outcome": s.check.outcome,
             "statement": s.check.statement, "detail": s.check.detail,
             "tables": [{"header": t.header, "rows": t.rows, "caption": t.caption} for t in s.tables]}
            for s in checks
        ],
        "failures": failures,
    }, _report_value)
