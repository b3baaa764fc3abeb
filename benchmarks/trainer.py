"""Speed of the testbed trainer: steps per second, sampled tokens per second, and the share of a
step the advantage computation takes, for grpo and fade on the shipped arithmetic base policy.

    python benchmarks/trainer.py [--steps 30] [--threads 2] [--estimators grpo,fade]

The target is an advantage cost under 1% of a step (FADE included). Each estimator runs the same
seeded steps in a fresh output folder; the first two steps are dropped as warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from fade.testbed.trainer import TrainConfig, base_model_dir, train


def run(estimator: str, steps: int, prompts: int, group: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / estimator
        t0 = time.perf_counter()
        train(TrainConfig(out=str(out), task="arithmetic", estimator=estimator, steps=steps, seed=seed,
                          prompts_per_step=prompts, group_size=group, eval_every=0, eval_prompts=0,
                          checkpoint_every=steps, progress=False))
        wall = time.perf_counter() - t0
        rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][2:]
    step = statistics.fmean(r["step_seconds"] for r in rows)
    return {
        "wall": wall,
        "step_ms": 1e3 * step,
        "steps_per_s": 1 / step,
        "tokens_per_s": statistics.fmean(r["completion_tokens"] / r["step_seconds"] for r in rows),
        "sample_ms": 1e3 * statistics.fmean(r["sample_seconds"] for r in rows),
        "update_ms": 1e3 * statistics.fmean(r["update_seconds"] for r in rows),
        "advantage_ms": 1e3 * statistics.fmean(r["advantage_seconds"] for r in rows),
        "advantage_share": statistics.fmean(r["advantage_seconds"] / r["step_seconds"] for r in rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--estimators", default="grpo,fade")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not (base_model_dir("arithmetic") / "config.json").is_file():
        raise SystemExit("no shipped arithmetic base policy: run `make base` first")
    torch.set_num_threads(args.threads)
    table = Table(title=f"fade train on arithmetic, {args.prompts} prompts x G={args.group_size}, "
                        f"{args.threads} thread(s), mean of steps 3..{args.steps}")
    for col in ("estimator", "step (ms)", "steps/s", "sampled tokens/s", "sampling (ms)", "verify, old log-probs, update (ms)",
                "advantage (ms)", "advantage share"):
        table.add_column(col, justify="right")
    for name in args.estimators.split(","):
        r = run(name.strip(), args.steps, args.prompts, args.group_size, args.seed)
        table.add_row(name, f"{r['step_ms']:.1f}", f"{r['steps_per_s']:.2f}", f"{r['tokens_per_s']:,.0f}",
                      f"{r['sample_ms']:.1f}", f"{r['step_ms'] - r['sample_ms'] - r['advantage_ms']:.1f}",
                      f"{r['advantage_ms']:.2f}", f"{100 * r['advantage_share']:.2f}%")
    Console(width=160).print(table)
    print("Target: the advantage under 1% of a step. TRL's GRPOTrainer comparison needs the trl extra (see issue 5).")


if __name__ == "__main__":
    main()
