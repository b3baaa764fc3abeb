"""``fade compare``: finished runs side by side, in one figure and a table."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .output import console

__all__ = ["add", "print_comparison", "run"]


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="put finished runs side by side: one figure (pass@1, pass@k, entropy, sign/difficulty plane) and a table",
        description=(
            "Read the run folders `fade train` wrote and draw them on shared axes into --out: pass@1 against "
            "step, the final pass@k curves (under the base's when all runs share it), training entropy (with "
            "FADE's target H*) and each run's path on the sign/difficulty plane. Prints a table of the shared "
            "base evaluation, each run's final one, and the training signals behind them."
        ),
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders written by fade train or fade sweep")
    p.add_argument(
        "--out", default="compare.png", metavar="FILE.png", help="the figure to write; its folder is created"
    )
    p.add_argument("--label-key", default=None, metavar="KEY",
                   help="label runs by this run.json key, e.g. estimator_args.h_star_ratio (default: the estimator)")
    p.set_defaults(func=run)


def print_comparison(runs: Sequence[str | Path], out: Path, *, labels: Sequence[str] | None = None,
                     label_key: str | None = None, title: str | None = None) -> None:
    """Draw ``runs`` into the PNG ``out`` and print their table (``fade compare``, and ``fade demo``'s end)."""
    from fade.testbed import report
    from fade.testbed.runlog import METRICS_FILE, log_path

    if out.suffix.lower() != ".png":
        raise ValueError(f"--out must name a .png file, got {str(out)!r}")
    missing = [str(r) for r in runs if log_path(r, METRICS_FILE) is None]
    if missing:
        raise ValueError(f"{missing[0]} holds no run (no metrics.jsonl or metrics.jsonl.gz): expected a folder written "
                         "by fade train")
    figure = report.compare_runs(runs, out, label_key=label_key)
    table = report.compare_table(runs, labels=labels)
    if title is not None:
        table.title = title
    shown = console()
    shown.print(table)
    shown.print(f"wrote {figure}")


def run(args: argparse.Namespace) -> int:
    print_comparison(args.runs, Path(args.out), label_key=args.label_key)
    return 0
