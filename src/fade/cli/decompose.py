"""``fade decompose``: the gradient-mass diagnostics of a batch of rollouts read from a JSON-lines file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from fade.analyze.columns import encode_keys, read_jsonl
from fade.jsonl import json_safe
from fade.registry import check_inputs
from fade.registry import spec as registry_spec
from fade.weighing import weigh

from .output import console, fmt
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
        "--estimator-args",
        default="",
        metavar="K=V[,K=V...]",
        help="estimator parameters, comma-separated (default: none)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run)


#: The fields of a rollout line decompose reads: one step of fade analyze's generic format.
FIELDS = {"prompt_id": "key", "reward": "float", "advantage": "float", "length": "float", "baseline_reward": "float"}


def read_rollouts(path: str | Path) -> dict[str, Any]:
    """The columns of a JSON-lines file of rollouts (fade analyze's reader, one step): a missing
    optional field is NaN, ``"__line__"`` holds each rollout's line number."""
    return read_jsonl(path, FIELDS, required=("prompt_id", "reward"), what="rollouts", lines=True)


#: The per-rollout inputs of an estimator a line may give: the field, and what it is.
INPUT_FIELDS = {"lengths": ("length", "response length"), "baseline_rewards": ("baseline_reward", "baseline reward")}


def _column(cols: dict[str, Any], key: str, path: str, *, why: str) -> np.ndarray:
    """The values of ``key`` on every line; an error naming the first line without it."""
    values = cols[key]
    missing = np.isnan(values)
    if missing.any():
        raise ValueError(f"{path}:{cols['__line__'][np.flatnonzero(missing)[0]]}: missing key {key!r} ({why})")
    return values


def _inputs(cols: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    """The estimator's inputs the file gives, as :func:`fade.weigh` takes them: None where no line has the
    field; where only some lines have it, an error, raised only if the estimator weighs with it."""
    inputs: dict[str, Any] = {}
    for key, (field, what) in INPUT_FIELDS.items():
        if not np.isnan(cols[field]).all():
            why = f"estimator {name!r} weighs with the {what} of every rollout"
            inputs[key] = lambda field=field, why=why: _column(cols, field, path, why=why)
    return inputs


def run(args: argparse.Namespace) -> int:
    import fade

    cols = read_rollouts(args.rollouts)
    path = args.rollouts
    rewards = cols["reward"]
    groups, _ = encode_keys(cols["prompt_id"])  # the int 1 and the string "1" are distinct prompts

    if args.estimator is not None:
        name, params = estimator_flags(args.estimator, args.estimator_args)
        inputs = _inputs(cols, path, name)
        check_inputs(registry_spec(name), inputs, where=f"no line of {path} has",
                     called={key: f"{field!r} on every line (the {what} of each rollout)"
                             for key, (field, what) in INPUT_FIELDS.items()})
        est = fade.estimator(name, **params)
        adv = weigh(est, rewards, groups, inputs=inputs).advantages
        source = repr(est)
    else:
        if args.estimator_args:
            raise ValueError("--estimator-args needs --estimator")
        adv = _column(cols, "advantage", path, why="give --estimator to compute advantages from rewards")
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

