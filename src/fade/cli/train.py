"""``fade train``: RL-train a policy on a task with any registered estimator (the testbed trainer).

Its flags are the fields of :class:`fade.testbed.config.TrainConfig`, and ``--resume``: a field
added there is a flag here.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from fade import options
from fade.testbed.config import TrainConfig, resume_rule

from .extras import import_testbed
from .output import console
from .parsing import estimator_flags

__all__ = ["add", "run"]

def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="RL-train a policy on a task with any registered estimator (the testbed trainer)",
        description=(
            "Sample G completions per prompt, score them with the task's verifier, weigh them with the "
            "chosen advantage estimator and take policy-loss steps (PPO-clip by default; docs/losses.md has "
            "the others). Writes metrics.jsonl.gz, eval.jsonl.gz, TensorBoard events (tb/), a checkpoint, the "
            "final policy (policy/) and PNG plots into --out."
        ),
        epilog=resume_rule(),
    )
    options.add_options(p, TrainConfig, after={"out": lambda p: p.add_argument(
        "--resume", action="store_true", help="continue the run in --out from its checkpoint (see below)")})
    p.set_defaults(func=run, needs=lambda args: ("testbed", *(("math",) if args.verifier == "math" else ())),
                   interrupted=lambda args: f"the last checkpoint in {args.out} is intact: rerun with --resume")


def _disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` reports a full disk or quota: an OSError, or a library's own error (safetensors)
    that carries the OS message."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return True
    text = str(exc)
    return "No space left on device" in text or "Disk quota exceeded" in text or "StorageFull" in text


def run(args: argparse.Namespace) -> int:
    _, trainer = import_testbed()
    from fade.testbed import report

    config = options.from_args(TrainConfig, args)
    name, params = estimator_flags(config.estimator, config.estimator_args)
    config = dataclasses.replace(config, estimator=name, estimator_args=params)
    try:
        out = trainer.train(config, resume=args.resume)
    except Exception as exc:
        if not _disk_full(exc):
            raise
        where = getattr(exc, "filename", None) or args.out
        if (Path(args.out) / trainer.CHECKPOINT).is_file():
            then = f"the last checkpoint in {args.out} is intact: free some space and rerun with --resume"
        else:
            then = f"no checkpoint was written yet: free some space and start again (remove {args.out} first)"
        raise ValueError(f"no space left on the device while writing {where}; {then}") from None
    console().print(report.summary_table(report.load_run(out)))
    for path in report.plot_run(out):
        print(f"wrote {path}")
    return 0
