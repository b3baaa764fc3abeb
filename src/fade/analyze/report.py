"""The files of an analysis: ``steps.jsonl``, ``report.json`` and ``summary.md`` (the figures are
:mod:`fade.analyze.figures`). Each is written atomically, so a folder never holds half a file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fade.atomic import atomic_write, write_json_atomic
from fade.mass import DIAGNOSTICS

from .analysis import Analysis

__all__ = ["REPORT", "STEPS", "SUMMARY", "summary_markdown", "write_outputs"]

STEPS, REPORT, SUMMARY = "steps.jsonl", "report.json", "summary.md"


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null (a batch without mass has no sign balance)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_outputs(analysis: Analysis, out: str | Path, *, figures: bool = True) -> list[Path]:
    """Write the analysis into ``out``; returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(_clean(s), allow_nan=False) + "\n" for s in analysis.steps).encode("utf-8")
    atomic_write(out / STEPS, lambda f: f.write(lines))
    write_json_atomic(out / REPORT, _clean(analysis.summary()))
    text = summary_markdown(analysis).encode("utf-8")
    atomic_write(out / SUMMARY, lambda f: f.write(text))
    written = [out / STEPS, out / REPORT, out / SUMMARY]
    if figures:
        from .figures import draw_all

        written += draw_all(analysis, out)
    return written


def _f(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def summary_markdown(analysis: Analysis) -> str:
    """The run in a page: what was read, the notes, then a table of steps and of estimators."""
    s = analysis.summary()
    lines = [f"# fade analyze: {s['format']} run", "",
             f"- read: `{Path(s['path']).name}`, steps {s['first_step']}..{s['last_step']} ({s['num_steps']} steps, "
             f"{s['num_rollouts']} rollouts, group sizes {', '.join(map(str, s['group_sizes']))})",
             f"- mean zero-spread share {_f(s['mean_zero_spread_share'])}, mean reward {_f(s['mean_reward'])}, "
             f"mean solve rate {_f(s['mean_solve_rate'])}",
             f"- estimators replayed: {', '.join(analysis.estimators) or 'none'}"]
    if analysis.run.filtered:
        lines.append(f"- **filtered**: {analysis.run.filtered}")
    lines += [f"- {note}" for note in analysis.run.notes]
    lines += [f"- skipped {spec}: {why}" for spec, why in analysis.skipped.items()]
    lines += ["", "## Mean diagnostics per step", "",
              "| advantages | " + " | ".join(DIAGNOSTICS) + " |", "|---|" + "---:|" * len(DIAGNOSTICS)]
    for who, row in (s.get("mean_diagnostics") or {}).items():
        label = "the run's own" if who == "run" else f"`{who}`"
        lines.append(f"| {label} | " + " | ".join(_f(row.get(k)) for k in DIAGNOSTICS) + " |")
    shown = (
        analysis.steps
        if len(analysis.steps) <= 12
        else (
            analysis.steps[:4]
            + analysis.steps[len(analysis.steps) // 2 - 2 : len(analysis.steps) // 2 + 2]
            + analysis.steps[-4:]
        )
    )
    lines += [
        "",
        "## Steps" + ("" if len(shown) == len(analysis.steps) else " (first, middle and last four)"),
        "",
        "| step | groups | rollouts | zero-spread share | mean reward | solve rate | pass@1 | run's sign balance |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in shown:
        run = row.get("run") or {}
        lines.append(f"| {row['step']} | {row['num_groups']} | {row['num_rollouts']} | {_f(row['zero_spread_share'])} "
                     f"| {_f(row['mean_reward'])} | {_f(row.get('solve_rate'))} | "
                     f"{_f((row.get('pass_at_k') or {}).get('1'))} | {_f(run.get('sign_balance'))} |")
    return "\n".join(lines) + "\n"
