"""``fade pretrain``: the tiny base policy of a task, trained by supervised learning while it is imperfect.

Its flags are the fields of :class:`fade.testbed.config.PretrainConfig` that have one, and ``--resume``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fade import options
from fade.testbed.config import PretrainConfig

from .extras import import_testbed

__all__ = ["add", "run"]


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pretrain",
        help="train the tiny base policy of a task by supervised learning, stopping while it is imperfect",
        description=(
            "Train a tiny Llama (character tokenizer, built locally) on a task's (prompt, answer) pairs "
            "and stop at the first validation check where sampled pass@1 reaches --target-pass1, so RL "
            "starts from a policy that solves easy prompts often and hard ones rarely. Writes the model, "
            "tokenizer, pretrain.jsonl and base_eval.json (test pass@k per bucket) into --out. A stopped run "
            "leaves a checkpoint from its last validation check in --out; --resume continues it to the same weights."
        ),
    )
    options.add_options(
        p,
        PretrainConfig,
        after={
            "target_pass1": lambda p: p.add_argument(
                "--resume",
                action="store_true",
                help="continue the stopped pretraining in --out from its checkpoint (same settings)",
            )
        },
    )
    p.set_defaults(func=run, needs=lambda args: ("testbed",), interrupted=interrupted)


def interrupted(args: argparse.Namespace) -> str:
    from fade.testbed.pretrain import CHECKPOINT

    if (Path(args.out) / CHECKPOINT).is_file():
        return f"its last validation check is saved in {args.out}: rerun with --resume to continue"
    return "it stopped before its first validation check (nothing saved): run the same command again"


def run(args: argparse.Namespace) -> int:
    pretrain, _ = import_testbed()
    summary = pretrain.pretrain(options.from_args(PretrainConfig, args), resume=args.resume)
    test = summary["test"]
    ks = [k for k in (1, 4, 16, 64) if f"pass@{k}" in test]
    print(
        f"{args.task}: {summary['steps']} steps in {summary['seconds']} s, {summary['parameters']:,} parameters; test "
        + ", ".join(f"pass@{k} {test[f'pass@{k}']:.3f}" for k in ks)
    )
    print(f"wrote {args.out}")
    return 0
