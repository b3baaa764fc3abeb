"""Speed of the testbed trainer: steps per second, sampled tokens per second, and the share of a
step the advantage computation takes, for grpo and fade on the shipped arithmetic base policy;
and TRL's GRPOTrainer (plain, and as fade's FadeGRPOTrainer) on the same model, task, batch and
group size in the same run, with the ratio of step times.

    python benchmarks/trainer.py [--steps 30] [--threads 2] [--estimators grpo,fade] [--no-trl] [--smoke]

The target is an advantage cost under 1% of a step (FADE included), and a step no slower than
TRL's. Each estimator runs the same seeded steps in a fresh output folder; the first two steps
are dropped as warm-up. TRL runs with one generation per optimizer step (no old-log-prob pass,
which fade's trainer always makes), beta=0, no evaluation and no checkpoints.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from fade.testbed.runlog import load_run
from fade.testbed.trainer import TrainConfig, base_model_dir, train


def run(estimator: str, steps: int, prompts: int, group: int, seed: int, *, model: str | None = None,
        device: str = "auto") -> dict[str, float]:
    """Steps of fade's testbed trainer on the arithmetic task (``model``: a policy folder; default
    the shipped base policy)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / estimator
        t0 = time.perf_counter()
        train(TrainConfig(out=str(out), task="arithmetic", estimator=estimator, steps=steps, seed=seed,
                          prompts_per_step=prompts, group_size=group, eval_every=0, eval_prompts=0,
                          checkpoint_every=steps, progress=False, model=model, device=device))
        wall = time.perf_counter() - t0
        rows = load_run(out).metrics[2:]
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


def run_trl(advantage: str | None, steps: int, prompts: int, group: int, seed: int, *, model: str | None = None,
            device: str = "cpu", bf16: bool = False) -> dict[str, float]:
    """Steps of TRL's GRPOTrainer (``advantage=None``) or FadeGRPOTrainer on the testbed's arithmetic
    task (``model``: a policy folder, default the shipped base policy; ``device`` "cpu" or "cuda")."""
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from fade.integrations.trl import FadeGRPOTrainer
    from fade.testbed.policy import load_policy
    from fade.testbed.tasks import get_task
    from fade.testbed.trl_task import prompt_dataset, reward_function

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.ends: list[float] = [time.perf_counter()]

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())

    task = get_task("arithmetic")
    policy, tokenizer = load_policy(model or base_model_dir("arithmetic"))
    problems = task.problems("train", n=prompts * steps, seed=seed)
    clock = StepClock()
    with tempfile.TemporaryDirectory() as tmp:
        config = GRPOConfig(
            output_dir=tmp, per_device_train_batch_size=prompts * group, num_generations=group,
            gradient_accumulation_steps=1, max_completion_length=task.max_answer_chars + 1, max_steps=steps,
            learning_rate=1e-4, temperature=1.0, beta=0.0, bf16=bf16, use_cpu=device == "cpu", report_to="none",
            save_strategy="no", gradient_checkpointing=False, logging_steps=1, seed=seed, disable_tqdm=True,
            # TRL's default "group" is GRPO's std scale: fade's grpo reads it, every other estimator
            # sets its own scale and is refused unless it is "none".
            scale_rewards="group" if advantage in (None, "grpo", "grpo_passk") else "none",
        )
        common = dict(model=policy, reward_funcs=[reward_function(task, problems)], args=config,
                      train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer,
                      callbacks=[clock])
        trainer = GRPOTrainer(**common) if advantage is None else FadeGRPOTrainer(**common, advantage=advantage)
        trainer.remove_callback(PrinterCallback)  # one log line per step would bury the table
        trainer.train()
    lengths = [row["completions/mean_length"] for row in trainer.state.log_history if "completions/mean_length" in row]
    times = [b - a for a, b in zip(clock.ends, clock.ends[1:])][2:]
    step = statistics.fmean(times)
    tokens = statistics.fmean(lengths[2:]) * prompts * group
    return {"step_ms": 1e3 * step, "steps_per_s": 1 / step, "tokens_per_s": tokens / step}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--estimators", default="grpo,fade")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-trl", action="store_true", help="skip TRL's GRPOTrainer")
    ap.add_argument("--smoke", action="store_true",
                    help="3 steps of 2 prompts x G=2: checks that the script runs (CI), measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.steps, args.prompts, args.group_size = 3, 2, 2
    if not (base_model_dir("arithmetic") / "config.json").is_file():
        raise SystemExit("no shipped arithmetic base policy: run `make base` first")
    torch.set_num_threads(args.threads)
    table = Table(title=f"fade train on arithmetic, {args.prompts} prompts x G={args.group_size}, "
                        f"{args.threads} thread(s), mean of steps 3..{args.steps}")
    for col in (
        "estimator",
        "step (ms)",
        "steps/s",
        "sampled tokens/s",
        "sampling (ms)",
        "verify, old log-probs, update (ms)",
        "advantage (ms)",
        "advantage share",
    ):
        table.add_column(col, justify="right")
    ours = {}
    for name in args.estimators.split(","):
        r = run(name.strip(), args.steps, args.prompts, args.group_size, args.seed)
        ours[name.strip()] = r
        table.add_row(name, f"{r['step_ms']:.1f}", f"{r['steps_per_s']:.2f}", f"{r['tokens_per_s']:,.0f}",
                      f"{r['sample_ms']:.1f}", f"{r['step_ms'] - r['sample_ms'] - r['advantage_ms']:.1f}",
                      f"{r['advantage_ms']:.2f}", f"{100 * r['advantage_share']:.2f}%")
    console = Console(width=160)
    console.print(table)
    print("Target: the advantage under 1% of a step.")
    if args.no_trl:
        return
    try:
        import trl
    except ImportError:
        raise SystemExit(
            "TRL is not installed (pip install -e '.[trl]' from the clone); rerun with --no-trl to skip it"
        ) from None
    peers = Table(
        title=f"The same work in TRL {trl.__version__}'s GRPOTrainer: ratio = TRL step time / fade train step time"
    )
    for col in (
        "trainer",
        "advantage",
        "step (ms)",
        "steps/s",
        "sampled tokens/s",
        "ratio vs fade train (same advantage)",
    ):
        peers.add_column(col, justify="right")
    reference = ours.get("grpo") or next(iter(ours.values()))
    for label, advantage in (("GRPOTrainer", None), ("FadeGRPOTrainer", "grpo"), ("FadeGRPOTrainer", "fade")):
        r = run_trl(advantage, args.steps, args.prompts, args.group_size, args.seed)
        mine = ours.get(advantage or "grpo", reference)
        peers.add_row(label, advantage or "TRL's grpo", f"{r['step_ms']:.1f}", f"{r['steps_per_s']:.2f}",
                      f"{r['tokens_per_s']:,.0f}", f"{r['step_ms'] / mine['step_ms']:.2f}x")
    console.print(peers)
    print("A ratio above 1 means fade's trainer takes the same step faster than TRL.")


if __name__ == "__main__":
    main()
