"""``fade eval``: score generated samples with the math or code verifier and report pass@k.

The ``--judge`` choices and the judges' default limits in the help come from the judge
registry, :data:`fade.verifiers.judges.JUDGES`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fade.jsonl import json_safe
from fade.verifiers.judges import JUDGES, limit_defaults

from .output import console, fmt
from .parsing import check_workers

__all__ = ["add", "run"]


def parse_ks(text: str) -> tuple[int, ...]:
    ks: list[int] = []
    for item in text.split(","):
        if not item.strip():
            continue
        try:
            k = int(item)
        except ValueError:
            raise ValueError(f"--k {text!r}: {item.strip()!r} is not an integer; expected e.g. 1,10,100") from None
        if k < 1:
            raise ValueError(f"--k {text!r}: every k must be >= 1, got {k}")
        if k not in ks:
            ks.append(k)
    if not ks:
        raise ValueError(f"--k {text!r} is empty: expected positive integers, e.g. 1,10,100")
    return tuple(sorted(ks))


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="score generated samples with the math or code verifier and report pass@k",
        description=(
            "Score the samples of a JSON-lines file (problem id, completion, and the gold answer or the "
            "tests, or --problems to join them by id) with math-verify or the code sandbox. Scores are "
            "appended to DIR/scores.jsonl as they finish; rerunning the same command resumes without "
            "rescoring. Once every sample is scored, writes DIR/report.json (pass@k, per-k problem "
            "counts, solve rates, distinct correct solutions, reasons), DIR/problems.jsonl and "
            "DIR/passk.png. See docs/verifiers.md."
        ),
    )
    p.add_argument("samples", metavar="SAMPLES.jsonl", help="the samples file")
    p.add_argument("--verifier", required=True, choices=("math", "code"),
                   help="math (math-verify, the 'math' extra) or code (the sandbox) (required)")
    p.add_argument("--k", default="1,10,100", metavar="K[,K...]", help="the k of pass@k (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder; an existing one is resumed (required)")
    p.add_argument("--problems", default=None, metavar="FILE.jsonl",
                   help="gold answers or tests, joined to samples by problem id (default: none, read from each sample)")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="samples scored at once (default: CPU count)")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="math: seconds per sample (default: 5)")
    p.add_argument("--judge", default="auto", choices=("auto", *JUDGES),
                   help="code: whose rules judge the programs: each benchmark's official harness, fade's own, or auto, "
                        "the one the problem's format names (default: %(default)s; docs/verifiers.md)")
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="S",
        help=f"code: seconds per test, wall and CPU (default: the judge's: {limit_defaults('time_seconds')})",
    )
    p.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                   help=f"code: address-space limit (default: {limit_defaults('memory_mb')})")
    p.add_argument(
        "--float-tolerance",
        type=float,
        default=1e-6,
        metavar="T",
        help="code, fade's judge: tolerance for non-integer outputs (default: %(default)s)",
    )
    p.add_argument("--answer-mode", choices=("any", "final", "boxed"), default="any",
                   help="math: where the answer may come from: any expression (math-verify's fallback), only a final "
                        "form (a closed \\boxed{} or a final-answer line), or only a box (default: %(default)s)")
    p.add_argument("--final-answer-pattern", default=None, metavar="REGEX",
                   help="math, --answer-mode final: the regular expression of a final-answer line "
                        "(default: 'final answer' ... 'is' or ':')")
    p.add_argument(
        "--float-rounding",
        type=int,
        default=6,
        metavar="N",
        help="math: decimal places floats are rounded to before comparing (math-verify's) (default: %(default)s)",
    )
    p.add_argument("--numeric-precision", type=int, default=15, metavar="N",
                   help="math: significant digits of numeric evaluation (math-verify's) (default: %(default)s)")
    p.add_argument("--no-strict", action="store_true",
                   help="math: math-verify's non-strict mode (variables matched by position, sets equal tuples) "
                        "(default: strict)")
    p.add_argument(
        "--set-relation",
        action="store_true",
        help="math: an inequality equals its interval (1 < x < 2 = (1, 2); math-verify's allow_set_relation_comp) "
        "(default: off)",
    )
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="score at most N new samples, then stop (rerun to continue) (default: no limit)")
    p.add_argument("--compare", default="", metavar="DIR[,DIR...]",
                   help="earlier eval folders drawn on the same pass@k plot (default: none)")
    p.add_argument("--label", default=None, help="this run's name in plots (default: the --out folder's name)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object instead of a table")
    p.set_defaults(
        func=run,
        needs=lambda args: ("math",) if args.verifier == "math" else (),
        interrupted=lambda args: (
            f"every finished score is in {args.out}/scores.jsonl: rerun the same command to continue"
        ),
    )


def run(args: argparse.Namespace) -> int:
    from fade.verifiers.evaluate import PASSK_PNG, EvalConfig, evaluate

    overrides = {}
    if args.time_limit is not None:
        overrides["time_seconds"] = args.time_limit
    if args.memory_mb is not None:
        overrides["memory_mb"] = args.memory_mb
    check_workers(args.workers)
    if not args.timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {args.timeout}")
    math = {"answer_mode": args.answer_mode, "float_rounding": args.float_rounding,
            "numeric_precision": args.numeric_precision, "strict": not args.no_strict,
            "allow_set_relation_comp": args.set_relation}
    if args.final_answer_pattern is not None:
        if args.answer_mode != "final":
            raise ValueError(
                f"--final-answer-pattern applies to --answer-mode final only, got --answer-mode {args.answer_mode}"
            )
        math["final_answer_pattern"] = args.final_answer_pattern
    config = EvalConfig(
        samples=args.samples, out=args.out, verifier=args.verifier, ks=parse_ks(args.k), problems=args.problems,
        workers=args.workers, timeout=args.timeout, math=math, limits=overrides,
        judge=args.judge, float_tolerance=args.float_tolerance,
        limit=args.limit, compare=tuple(d.strip() for d in args.compare.split(",") if d.strip()), label=args.label,
        progress=not args.no_progress,
    )
    outcome = evaluate(config)
    if not outcome.complete:
        print(f"scored {outcome.scored_now} samples; {outcome.remaining} of {outcome.total} remain: rerun to continue")
        return 0
    from fade.plots import draw_eval_passk

    report = outcome.report
    # The figure comes after the scores and the report: the verifiers draw nothing.
    written = [*outcome.written, draw_eval_passk([report, *outcome.compared], Path(config.out) / PASSK_PNG)]
    if args.json:
        print(json.dumps(json_safe(report)))
        return 0
    from rich.table import Table

    table = Table(
        title=f"{report['label']}: {report['num_samples']} samples of {report['num_problems']} problems "
        f"({args.verifier})"
    )
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right")
    for key, value in report["pass@k"].items():
        k = key.split("@")[1]
        table.add_row(
            f"{key} ({report['problems_at_k'][k]} problems)", "n/a (too few samples)" if value is None else fmt(value)
        )
    table.add_row("mean solve rate", fmt(report["mean_solve_rate"]))
    table.add_row("problems solved", f"{report['problems_solved']}/{report['num_problems']}")
    table.add_row("mean distinct correct", fmt(report["mean_distinct_correct"]))
    table.add_row("reasons", ", ".join(f"{r} {c}" for r, c in report["reasons"].items()))
    if "sandbox" in report:
        table.add_row("sandbox", ", ".join(f"{m} {c}" for m, c in report["sandbox"]["modes"].items()) or "none ran")
    if report.get("judges"):
        table.add_row("judged by", ", ".join(f"{j} {c}" for j, c in report["judges"].items()))
    shown = console()
    shown.print(table)
    for path in written:
        shown.print(f"wrote {path}")
    return 0


