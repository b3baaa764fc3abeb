"""``fade decompose``: the gradient-mass diagnostics of a batch of rollouts read from a JSON-lines file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fade.registry import spec as registry_spec

from .output import console, fmt, json_safe
from .parsing import SPEC_HELP, estimator_flags

__all__ = ["add", "read_rollouts", "run"]


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "decompose",
        help="positive/negative mass, sign balance, difficulty and effective sample fraction of rollouts",
        description=(
            "Read rollouts from a JSON-lines file, one object per line with 'prompt_id' (int or "
            "string) and 'reward' (number), optionally 'advantage', 'length' (response tokens) "
            "and 'baseline_reward'. Blank lines are skipped. With --estimator the advantages are "
            "computed from the rewards grouped by prompt_id; without it every line needs "
            "'advantage'. Prints the batch diagnostics of fade.decompose."
        ),
        epilog=SPEC_HELP,
    )
    p.add_argument("rollouts", metavar="ROLLOUTS.jsonl", help="the rollouts file")
    p.add_argument("--estimator", default=None, metavar="SPEC",
                   help="compute advantages with this estimator (default: none, read each line's 'advantage')")
    p.add_argument(
        "--estimator-args", default="", metavar="K=V[,K=V...]", help="estimator parameters, comma-separated (default: none)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run)


_NUMBER = (int, float)


def _is_number(v: Any) -> bool:
    return isinstance(v, _NUMBER) and not isinstance(v, bool)


def read_rollouts(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The rollouts of a JSON-lines file as (line number, object), checked for the keys decompose reads."""
    rows: list[tuple[int, dict[str, Any]]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line.rstrip())
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            if "prompt_id" not in obj:
                raise ValueError(f"{path}:{lineno}: missing key 'prompt_id'")
            pid = obj["prompt_id"]
            if isinstance(pid, bool) or not isinstance(pid, (int, str)):
                raise ValueError(f"{path}:{lineno}: 'prompt_id' must be an int or a string, got {pid!r}")
            if "reward" not in obj:
                raise ValueError(f"{path}:{lineno}: missing key 'reward'")
            for key in ("reward", "advantage", "length", "baseline_reward"):
                if key in obj and not _is_number(obj[key]):
                    raise ValueError(f"{path}:{lineno}: {key!r} must be a number, got {obj[key]!r}")
            rows.append((lineno, obj))
    if not rows:
        raise ValueError(f"{path}: no rollouts (the file has no non-blank lines)")
    return rows


def _column(rows: list[tuple[int, dict[str, Any]]], key: str, path: str, *, required: bool, why: str) -> list[float] | None:
    """The values of ``key`` on every line, None if on no line; an error if on only some (or none when required)."""
    missing = [lineno for lineno, obj in rows if key not in obj]
    if not missing:
        return [float(obj[key]) for _, obj in rows]
    if len(missing) == len(rows) and not required:
        return None
    raise ValueError(f"{path}:{missing[0]}: missing key {key!r} ({why})")


def run(args: argparse.Namespace) -> int:
    import fade

    rows = read_rollouts(args.rollouts)
    path = args.rollouts
    rewards = [float(obj["reward"]) for _, obj in rows]
    # Dense group ids keyed by (type, value), so the int 1 and the string "1" stay distinct prompts.
    dense: dict[tuple[type, Any], int] = {}
    groups = [dense.setdefault((type(obj["prompt_id"]), obj["prompt_id"]), len(dense)) for _, obj in rows]

    if args.estimator is not None:
        name, params = estimator_flags(args.estimator, args.estimator_args)
        s = registry_spec(name)
        inputs: dict[str, Any] = {}
        for key, field, flag in (("lengths", "length", "response length"), ("baseline_rewards", "baseline_reward", "baseline reward")):
            if key in (*s.needs, *s.uses):
                why = f"estimator {name!r} {'needs' if key in s.needs else 'uses'} the {flag} of every rollout"
                inputs[key] = _column(rows, field, path, required=key in s.needs, why=why)
        est = fade.estimator(name, **params)
        adv = est(rewards, groups, **inputs)
        source = repr(est)
    else:
        if args.estimator_args:
            raise ValueError("--estimator-args needs --estimator")
        adv = _column(rows, "advantage", path, required=True, why="give --estimator to compute advantages from rewards")
        source = f"'advantage' field of {path}"

    report = fade.decompose(adv, rewards, groups)
    if args.json:
        print(json.dumps(json_safe(report.to_dict())))
        return 0

    from rich.table import Table

    table = Table(title=f"Gradient mass of {report.num_rollouts} rollouts in {report.num_groups} groups")
    table.add_column("diagnostic", no_wrap=True)
    table.add_column("value", justify="right")
    for key, value in report.to_dict().items():
        table.add_row(key, str(value) if isinstance(value, int) else fmt(value))
    shown = console()
    shown.print(table)
    shown.print(f"advantages: {source}")
    return 0

