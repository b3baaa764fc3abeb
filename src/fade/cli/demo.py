"""``fade demo``: FADE against a baseline on the same seed and prompts, in minutes on two cores, with one figure."""

from __future__ import annotations

import argparse
from pathlib import Path

from .compare import print_comparison
from .extras import import_testbed
from .output import console
from .parsing import check_workers
from .sweep import print_failures, runs_intact

__all__ = ["DEMO_READING", "add", "run"]

DEMO_READING = (
    "How to read it: both runs start from the same base policy (grey) and see the same prompts; only the "
    "advantage differs (second - first: FADE minus the baseline). RL raises pass@1 and narrows the policy, so "
    "pass@k at large k falls below the base's: the run that keeps more of it keeps more distinct correct answers. "
    "The entropy panel shows how fast each run sharpens (dotted: FADE's target H*; its sign knob delta drops "
    "below 1 once the entropy average is under it). On the plane, a run left of the baseline puts its weight on "
    "harder prompts (FADE's alpha > 1), one below 0.5 on failures (delta < 1). One seed is one draw: "
    "docs/results/confirm holds the comparison over ten seeds."
)


def add(sub: argparse._SubParsersAction) -> None:
    from fade.experiments.demo import DEMO_BASELINE, DEMO_FADE, DEMO_SEED

    p = sub.add_parser(
        "demo",
        help=f"FADE against {DEMO_BASELINE} on the same seed and prompts, in minutes on two cores, with one figure",
        description=(
            f"Train {DEMO_BASELINE} and {DEMO_FADE} on countdown_multi from the shipped base policy, seed "
            f"{DEMO_SEED}, with the paper preset's settings (G = 16, 16 prompts a step, 200 steps; one core each), "
            "then draw both into DIR/compare.png and print a table of their final evaluations and training "
            "signals. A rerun skips the finished runs and resumes an interrupted one."
        ),
    )
    p.add_argument("--out", default="runs/demo", metavar="DIR", help="the demo's folder")
    p.add_argument("--workers", type=int, default=2, metavar="N", help="runs trained at once, one core each")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run, needs=lambda args: ("testbed",), interrupted=runs_intact)


def run(args: argparse.Namespace) -> int:
    import_testbed()
    from fade.experiments.demo import FIGURE, run_demo

    check_workers(args.workers)
    outcome = run_demo(args.out, workers=args.workers, progress=not args.no_progress)
    if print_failures(outcome.failed):
        return 1
    print_comparison(outcome.runs, Path(args.out) / FIGURE, labels=outcome.labels,
                     title="countdown_multi, seed 0: the same base and prompts, two advantages")
    console().print(DEMO_READING)
    return 0
