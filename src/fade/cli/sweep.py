"""``fade sweep``: test the paper's claims on the testbed, a preset's grid of runs in parallel, resumable, and a
report."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .extras import import_testbed
from .output import console
from .parsing import SPEC_HELP, check_workers

if TYPE_CHECKING:
    from fade.experiments.design import Preset

__all__ = ["add", "custom_preset", "print_failures", "run", "runs_intact"]


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="test the paper's claims on the testbed: a grid of runs in parallel, resumable, and a report",
        description=(
            "Train a preset's grid of estimators x seeds x tasks with the testbed trainer in parallel worker "
            "processes (one torch thread each), skip the runs already finished, resume interrupted ones, and "
            "write DIR/README.md (tables, verdicts per claim, the command that regenerates it), its PNGs and "
            "DIR/results.json. Runs live in DIR/runs/<task>/<arm>/seed<k>/ (an arm: an estimator, with the "
            "training settings of its own when a preset gives it some). --estimators, --seeds, "
            "--tasks and --steps turn a preset into a custom sweep with the preset's trainer settings. Exit "
            "status 1 when a run failed (the others are kept and reported)."
        ),
        epilog=SPEC_HELP,
    )
    p.add_argument("--preset", default="quick", metavar="NAME",
                   help="quick (about 10 minutes on 2 cores), full (every claim on arithmetic and countdown, a few "
                        "hours), paper (the calibrated instrument: countdown_multi, 5 paired seeds, FADE's arms, "
                        "5.7 CPU hours measured), entropy (FADE against entropy bonus, adaptive entropy, clip-higher, "
                        "Clip-Cov, KL-Cov, DAPO and power:alpha=3 on the paper preset's design, about 5 CPU hours) "
                        "confirm (FADE against its static twins on new seeds 5-14, comparisons fixed in advance, "
                        "about 3 CPU hours measured) or shift (FADE where its schedule acts: arithmetic, bucket 2, "
                        "400 steps, against its static twins and a fixed schedule on new seeds 15-24, about 2 CPU "
                        "hours); --dry-run "
                        "prints each run's cost (default: quick)")
    p.add_argument(
        "--out", required=True, metavar="DIR", help="the sweep's folder; rerunning into it resumes (required)"
    )
    p.add_argument(
        "--workers", type=int, default=2, metavar="N", help="runs trained at once, one core each (default: 2)"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the runs, their state and estimated CPU minutes; train nothing"
    )
    p.add_argument("--report-only", action="store_true",
                   help="write the report from the runs finished so far; train nothing (safe beside a running sweep)")
    p.add_argument("--estimators", default=None, metavar="SPEC[,SPEC...]",
                   help="train these estimators on every task instead (default: the preset's)")
    p.add_argument(
        "--seeds", default=None, metavar="S[,S...]", help="these seeds instead of the preset's (default: the preset's)"
    )
    p.add_argument(
        "--tasks",
        default=None,
        metavar="TASK[,TASK...]",
        help="only these of the preset's tasks (arithmetic, countdown, countdown_multi, "
        "countdown_multi-sgd); another testbed task takes the preset's first plan (default: all of them)",
    )
    p.add_argument("--steps", type=int, default=None, metavar="N",
                   help="training steps of every run instead (default: the preset's)")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="keep each finished run's checkpoint.pt (optimizer state; needed only to train it further)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar; one line per finished run")
    p.set_defaults(func=run, needs=lambda args: ("testbed",), interrupted=runs_intact)


def runs_intact(args: argparse.Namespace) -> str:
    """What an interrupted sweep (or demo) leaves: every finished run and each checkpoint."""
    return f"finished runs and checkpoints in {args.out} are intact: rerun the same command to resume"


def _sweep_command(args: argparse.Namespace) -> str:
    """The ``fade sweep`` command line that regenerates this sweep's report, as it was typed."""
    import shlex

    parts = ["fade", "sweep", "--preset", args.preset, "--out", args.out]
    for flag, value in (
        ("--estimators", args.estimators),
        ("--seeds", args.seeds),
        ("--tasks", args.tasks),
        ("--steps", args.steps),
    ):
        if value is not None:
            parts += [flag, str(value)]
    if args.workers != 2:
        parts += ["--workers", str(args.workers)]
    return " ".join(shlex.quote(part) for part in parts)


def run(args: argparse.Namespace) -> int:
    import_testbed()
    from fade.experiments import presets, sweep
    from fade.specs import split_specs

    def items(text: str | None) -> list[str] | None:
        return None if text is None else [item.strip() for item in text.split(",") if item.strip()]

    seeds = items(args.seeds)
    if seeds is not None:
        bad = [s for s in seeds if not s.isdigit()]
        if bad:
            raise ValueError(f"--seeds {args.seeds!r}: {bad[0]!r} is not a non-negative integer; expected e.g. 0,1,2")
    check_workers(args.workers)
    preset = custom_preset(
        presets.get_preset(args.preset),
        estimators=None if args.estimators is None else split_specs(args.estimators),
        seeds=None if seeds is None else [int(s) for s in seeds], tasks=items(args.tasks), steps=args.steps,
    )
    preset.check()
    shown = console()
    if args.report_only:
        outcome = sweep.report_sweep(preset, args.out, workers=args.workers, command=_sweep_command(args),
                                     progress=not args.no_progress)
        shown.print(f"{len(outcome.skipped)} of {len(outcome.runs)} runs finished; wrote {outcome.readme}")
        return 0
    if args.dry_run:
        from rich.table import Table

        sweep.check_design(preset, args.out)
        rows = sweep.plan_rows(preset, args.out)
        table = Table(title=f"fade sweep --preset {args.preset}: {len(rows)} runs into {args.out}")
        for col in ("run", "steps", "evaluations", "est. CPU min", "state"):
            table.add_column(col, justify="left" if col in ("run", "state") else "right", no_wrap=col == "run")
        for row in rows:
            spec = row["run"]
            table.add_row(row["key"], str(spec.steps), f"{spec.num_evals} x {spec.eval_prompts}x{spec.eval_samples}",
                          f"{row['seconds'] / 60:.1f}", row["state"])
        shown.print(table)
        shown.print(sweep.dry_run_summary(rows, args.workers))
        return 0
    outcome = sweep.run_sweep(
        preset, args.out, workers=args.workers, keep_checkpoints=args.keep_checkpoints,
        progress=not args.no_progress, command=_sweep_command(args), log=print if args.no_progress else None,
    )
    shown.print(
        f"{len(outcome.finished)} runs trained, {len(outcome.skipped)} already finished, {len(outcome.failed)} failed"
        + (
            f"; FADE's parameters chosen on {preset.tuning.task}: {outcome.choice}"
            if preset.tuning and outcome.choice
            else ""
        )
    )
    shown.print(f"wrote {outcome.readme}")
    return 1 if print_failures(outcome.failed) else 0


def custom_preset(
    preset: Preset,
    *,
    estimators: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    tasks: Sequence[str] | None = None,
    steps: int | None = None,
) -> Preset:
    """The sweep ``--estimators``, ``--seeds``, ``--tasks`` and ``--steps`` make of ``preset``: a
    custom sweep on its trainer settings (the preset unchanged when none is given).

    ``tasks`` keeps those of the preset's tasks (a task the preset does not plan takes the
    first plan's settings); ``estimators`` replaces every task's estimator list and drops the
    tuning (a custom list has no candidates to tune on); ``seeds`` replaces the seeds;
    ``steps`` sets every run's length (evaluations stay every ``eval_every`` steps, and the
    last step is always evaluated). A bad value raises ValueError naming its flag.
    """
    from fade.experiments.design import Preset, canonical_spec, check_spec

    plans = list(preset.plans)
    tuning = preset.tuning
    if tasks is not None:
        from fade.testbed.tasks import TASKS

        if not tasks:
            raise ValueError("--tasks is empty: expected at least one task")
        by_task = {plan.task: plan for plan in plans}
        known = sorted({*TASKS, *by_task})
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; known tasks: {', '.join(known)}")
        plans = [
            by_task.get(t) or dataclasses.replace(plans[0], task=t, tuned=(), trains_on=None)
            for t in dict.fromkeys(tasks)
        ]
        if tuning is not None and tuning.task not in tasks:
            tuning = None
            plans = [dataclasses.replace(plan, tuned=()) for plan in plans]
    if estimators is not None:
        if not estimators:
            raise ValueError("--estimators is empty: expected at least one estimator spec")
        for text in estimators:
            check_spec(text)
        specs = tuple(dict.fromkeys(canonical_spec(t) for t in estimators))
        plans = [dataclasses.replace(plan, estimators=specs, tuned=()) for plan in plans]
        tuning = None
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"--steps must be a positive integer, got {steps!r}")
        plans = [dataclasses.replace(plan, steps=steps) for plan in plans]
    new_seeds = preset.seeds
    if seeds is not None:
        if not seeds:
            raise ValueError("--seeds is empty: expected at least one seed")
        bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, int) or s < 0]
        if bad:
            raise ValueError(f"seeds must be integers >= 0, got {bad}")
        new_seeds = tuple(dict.fromkeys(seeds))
    custom = any(x is not None for x in (estimators, seeds, tasks, steps))
    # A custom list of estimators has none of the preset's fixed comparisons to make.
    fixed = preset.comparisons if estimators is None else ()
    return Preset(
        name=preset.name if not custom else f"{preset.name} (custom)",
        description=preset.description
        if not custom
        else f"A custom sweep with the {preset.name} preset's trainer settings.",
        seeds=new_seeds,
        plans=tuple(plans),
        tuning=tuning,
        comparisons=fixed,
        claims=preset.claims if estimators is None else None,
        pins_code=preset.pins_code,
    )


def print_failures(failed: dict[str, str]) -> bool:
    """Print one ``fade: run KEY failed: ...`` line per failed run on stderr; whether any failed."""
    for key, message in sorted(failed.items()):
        print(f"fade: run {key} failed: {message}", file=sys.stderr)
    return bool(failed)
