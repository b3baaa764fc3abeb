"""``fade analyze``: the gradient-mass decomposition of a run's rollouts, from the dump its engine wrote.

What the reading warns about (the unfinished last line of a live run's newest file) is shown as
one line ``fade: warning: ...`` on stderr, not as Python's two-line warning with its source line.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from fade.analyze import FORMATS, ReadOptions, analyze_run, check_output_folder, write_outputs
from fade.specs import split_specs

from .output import console, fmt
from .parsing import SPEC_HELP

__all__ = ["add", "run"]


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="per-step gradient mass, zero-spread share, solve rates and pass@k of a run's rollout dump",
        description=(
            "Read the rollouts a run wrote (verl's rollout_data_dir, TRL's completions parquet files, NeMo-RL, "
            "prime-rl (its rollouts folder or its trace stream), ROLL's rollout_dump_dir, AReaL's dump_to_file log "
            "folder, slime's --dump-details rollout_data (.pt, read with torch's weights-only loader), fade eval's "
            "scores.jsonl, or a JSONL/CSV/parquet with step, reward and group_id or "
            "prompt_id; the format is detected from PATH) and write, per step, the zero-spread share, the "
            "solve-rate histogram, the mean reward, unbiased pass@k and the gradient-mass diagnostics of the "
            "run's own advantages and of other estimators on the same rewards: steps.jsonl, report.json, "
            "summary.md and PNG figures in --out. See docs/analyze.md."
        ),
        epilog=SPEC_HELP,
    )
    p.add_argument("path", metavar="PATH", help="the dump: a folder of an engine's rollout files, or one file")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write the analysis into")
    p.add_argument("--format", default=None, choices=FORMATS, help="the dump's format (default: detected from PATH)")
    p.add_argument("--estimators", default=None, metavar="SPEC,...",
                   help="counterfactual estimators, comma-separated specs (default: the run's estimator if known, "
                        "grpo, dr_grpo, maxrl, and fade where the run logged an entropy)")
    p.add_argument("--metrics", default=None, metavar="FILE",
                   help="per-step scalars: verl's file-logger JSONL, TRL's trainer_state.json or prime-rl's "
                        "metrics.jsonl (entropy, filtered groups; default: TRL's trainer_state.json if found)")
    p.add_argument("--success-threshold", type=float, default=None, metavar="T",
                   help="a rollout with reward >= T is a success (default: rewards must be 0 or 1)")
    p.add_argument("--group-size", type=int, default=None, metavar="N",
                   help="rows per group of TRL, NeMo-RL and ROLL dumps (default: inferred from runs of one prompt)")
    p.add_argument("--reward-column", default=None, metavar="NAME,...",
                   help="TRL: the reward function columns to read (default: the reward functions the run's "
                        "trainer_state.json names, else the float columns: the report's notes say which); "
                        "slime: the key of a dict reward (its --reward-key)")
    p.add_argument("--reward-weights", default=None, metavar="W,...",
                   help="TRL: the run's reward_weights, one finite number per reward column (default: all 1, "
                        "TRL's default)")
    p.add_argument("--no-figures", action="store_true", help="write the numbers only")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run, needs=lambda args: ("analyze",))


def _weights(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        raise ValueError(f"--reward-weights {text!r}: expected comma-separated numbers") from None


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"fade: warning: {' '.join(str(message).split())}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.group_size is not None and args.group_size < 1:
        raise ValueError(f"--group-size must be at least 1, got {args.group_size}")
    check_output_folder(args.out)  # before the dump is read, and again before anything is written
    options = ReadOptions(group_size=args.group_size, reward_column=args.reward_column,
                          reward_weights=_weights(args.reward_weights), metrics=args.metrics,
                          success_threshold=args.success_threshold)
    estimators = None if args.estimators is None else split_specs(args.estimators)
    shown = console()
    from fade.progress import make_progress

    with warnings.catch_warnings(), make_progress(unit="files", console=shown, disable=args.quiet) as bar:
        warnings.showwarning = _show_warning
        tasks: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task("reading the dump" if stage == "read" else "computing steps",
                                            total=total, stats="", unit="files" if stage == "read" else "steps")
            bar.update(tasks[stage], completed=done)

        analysis = analyze_run(args.path, options, estimators=estimators, fmt=args.format, progress=progress)
    written = write_outputs(analysis, args.out, figures=not args.no_figures)
    s = analysis.summary()
    shown.print(f"{s['format']} run: {s['num_steps']} steps, {s['num_rollouts']} rollouts; mean zero-spread share "
                f"{fmt(s['mean_zero_spread_share'])}, mean reward {fmt(s['mean_reward'])}")
    notes = ([analysis.run.filtered] if analysis.run.filtered else []) + analysis.run.notes
    for note in notes + ([analysis.prompts_note] if analysis.prompts_note else []):
        shown.print(f"note: {note}")
    shown.print(f"wrote {', '.join(p.name for p in written)} in {args.out}")
    return 0
