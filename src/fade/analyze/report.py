"""The files of an analysis: ``steps.jsonl``, ``report.json``, ``summary.md`` and, where the run has
a per-prompt view, ``prompts.jsonl`` (the figures are :mod:`fade.analyze.figures`), and the rules
of the folder they go into.

Each file is written atomically, so a folder never holds half a file, and a symbolic link at one
of their names is replaced, never written through. The folder is one fade analyze owns: a new
one, an empty one or one it wrote before; a folder holding another fade command's outputs is
refused before anything is written (:func:`check_output_folder`). A new analysis removes the
files of the previous one that it does not write again (:data:`OUTPUTS` only, so its figures do
not sit beside numbers they were not drawn from), and leaves every other file alone.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from fade import jsonl
from fade.atomic import atomic_write, remove_orphaned_temp_files
from fade.jsonl import json_safe
from fade.mass import DIAGNOSTICS

from .analysis import Analysis
from .figures import FIGURES
from .prompts import CLASSES, SOLVED_RATE

__all__ = ["OTHER_COMMANDS_FILES", "OUTPUTS", "PROMPTS", "REPORT", "STEPS", "SUMMARY", "check_output_folder",
           "summary_markdown", "write_outputs"]

STEPS, REPORT, SUMMARY, PROMPTS = "steps.jsonl", "report.json", "summary.md", "prompts.jsonl"
#: Every file fade analyze writes into its folder, and the only ones it ever replaces or removes.
OUTPUTS = (STEPS, REPORT, SUMMARY, PROMPTS, *FIGURES)

#: The files by which another fade command's output folder is known, and who writes them. Named
#: here rather than imported, so fade analyze needs none of those commands' extras;
#: tests/test_analyze.py checks them against the names the commands define.
OTHER_COMMANDS_FILES = {
    "scores.jsonl": "fade eval", "problems.jsonl": "fade eval", ".lock": "fade eval",
    "run.json": "fade eval or fade train",
    "metrics.jsonl": "fade train", "metrics.jsonl.gz": "fade train", "eval.jsonl": "fade train",
    "eval.jsonl.gz": "fade train", "resumes.jsonl": "fade train", "checkpoint.pt": "fade train",
    "training.png": "fade train",
    "design.json": "fade sweep or fade demo", "tuning.json": "fade sweep", ".sweep.lock": "fade sweep or fade demo",
    "runs": "fade sweep or fade demo",
    "calibration.json": "fade calibrate",
    "pretrain.jsonl": "fade pretrain", "pretrain-checkpoint.pt": "fade pretrain", "base_eval.json": "fade pretrain",
}
#: Keys every report.json of fade analyze holds: a report.json without them is another command's.
_REPORT_KEYS = ("format", "num_steps", "mean_zero_spread_share")


def _analyze_report(path: Path) -> bool:
    """Whether the regular file ``path`` is a report.json fade analyze wrote."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and all(key in doc for key in _REPORT_KEYS)


def check_output_folder(out: str | Path) -> Path:
    """``out`` as the folder to write an analysis into; ValueError in one line where it is not one:
    an empty name (it would be the current folder), something other than a folder, a folder holding
    another fade command's outputs (:data:`OTHER_COMMANDS_FILES`, or a ``report.json`` that is not
    fade analyze's), or one where an output's name is taken by a folder or another non-file."""
    if not str(out):
        raise ValueError(f"--out {str(out)!r} is empty: expected the folder to write the analysis into")
    out = Path(out)
    if not os.path.lexists(out):
        return out
    if not out.is_dir():
        raise ValueError(f"--out {out} is not a folder: expected a new folder, an empty one or one fade analyze "
                         "wrote before")
    held = [f"{name} ({who})" for name, who in OTHER_COMMANDS_FILES.items() if os.path.lexists(out / name)]
    for name in OUTPUTS:
        try:
            mode = os.lstat(out / name).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            continue  # replaced by the new file; the file it points to is left alone
        if not stat.S_ISREG(mode):
            held.append(f"{name} (not a file)")
        elif name == REPORT and not _analyze_report(out / name):
            held.append(f"{name} (not fade analyze's)")
    if held:
        raise ValueError(f"--out {out} holds what fade analyze did not write: {', '.join(held)}; it writes only into "
                         "a new folder, an empty one or one it wrote before: choose another --out")
    return out


def _remove_previous(out: Path, written: list[Path]) -> None:
    """Delete the regular files of :data:`OUTPUTS` in ``out`` that this analysis did not write (a
    previous analysis's; never a link or a folder), and the atomic writer's leftovers of a killed one."""
    remove_orphaned_temp_files(out, OUTPUTS)
    kept = {p.name for p in written}
    for name in OUTPUTS:
        path = out / name
        if name not in kept and path.is_file() and not path.is_symlink():
            path.unlink()


def write_outputs(analysis: Analysis, out: str | Path, *, figures: bool = True) -> list[Path]:
    """Write the analysis into ``out`` (refused as :func:`check_output_folder` says), then remove
    the files a previous analysis wrote there that this one does not; returns the paths written."""
    out = check_output_folder(out)
    # Every file's bytes are made before the first is written: a value that cannot be written (text
    # no encoding takes) stops the command with the folder as it was. JSON-safe: NaN and infinities
    # become null (a batch without mass has no sign balance).
    files = {
        STEPS: b"".join(jsonl.encode(json_safe(s), allow_nan=False) for s in analysis.steps),
        REPORT: (json.dumps(json_safe(analysis.summary()), indent=2, allow_nan=False) + "\n").encode("utf-8"),
        SUMMARY: summary_markdown(analysis).encode("utf-8"),
    }
    if analysis.prompts is not None:
        files[PROMPTS] = b"".join(jsonl.encode(json_safe(p), ensure_ascii=False, allow_nan=False)
                                  for p in analysis.prompts.prompts)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        atomic_write(out / name, lambda f, data=data: f.write(data))
        written.append(out / name)
    if figures:
        from .figures import draw_all

        written += draw_all(analysis, out)
    _remove_previous(out, written)
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
    lines += ["", *_prompts_markdown(analysis)]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """``text`` as a Markdown code span inside a table cell: a fence longer than any run of
    backticks in it, and its pipes escaped (a pipe ends a cell even inside a code span)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def _prompts_markdown(analysis: Analysis) -> list[str]:
    """The per-prompt section: the classes, the windows and the prompts that changed most, or the
    line that says why the run has no per-prompt view."""
    lines = ["## Prompts across steps", ""]
    view = analysis.prompts
    if view is None:
        return lines + [f"- {analysis.prompts_note}"]
    s = view.summary()
    sizes = sorted({w["num_steps"] for w in s["windows"]})
    lines += [f"- {s['num_prompts']} prompts, {s['num_prompts_seen_twice']} of them seen at two steps or more "
              f"(`{PROMPTS}`); {len(s['windows'])} windows of {' or '.join(map(str, sizes))} steps; solved in a "
              f"window: pooled solve rate >= {SOLVED_RATE:g} there", "",
              "| " + " | ".join(c.replace("_", " ") for c in CLASSES) + " |", "|" + "---:|" * len(CLASSES),
              "| " + " | ".join(str(s["classes"][c]) for c in CLASSES) + " |", "",
              "| window | steps | seen | solved | learned | forgotten |", "|---:|---|---:|---:|---:|---:|"]
    for w in s["windows"]:
        lines.append(f"| {w['window']} | {w['first_step']}..{w['last_step']} | {w['seen']} | {w['solved']} | "
                     f"{w['learned']} | {w['forgotten']} |")
    top = s["top_changed"]
    if not top:
        return lines + ["", "No prompt's solve rate changed between its first window and its last."]
    lines += ["", "### Changed most (solve rate in the first window seen, then the last)", "",
              "| prompt | class | steps seen | first | last | change |", "|---|---|---:|---:|---:|---:|"]
    for p in top:
        lines.append(f"| {_code(p['excerpt'])} | {p['class'].replace('_', ' ')} | {p['num_steps']} | "
                     f"{_f(p['first_window_solve_rate'])} (w{p['first_window']}) | "
                     f"{_f(p['last_window_solve_rate'])} (w{p['last_window']}) | {p['change']:+.3f} |")
    return lines
