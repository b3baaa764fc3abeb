"""Speed of the testbed trainer against TRL's GRPOTrainer on equal work, at three policy sizes.

    python benchmarks/trainer.py [--sizes 1M,20M,50M] [--steps 12] [--estimators grpo,fade] [--no-trl] [--smoke]

For each size (the shipped ~1M arithmetic base, and ~20M and ~50M Llamas of random weights built
from a seed: speed only), each trainer runs the same seeded steps in a process of its own (so its
peak memory is its own), and the table gives the mean of steps 3..N per part: sampling, the
policy pass (old log-probs and entropy before the update; verification is counted here too),
the advantage, the update (forward and backward of the policy loss, and the optimizer step), the
whole step, completion tokens per step and per second, and the process's peak resident memory.

Equal work, as the table states it: both trainers sample ``--prompts`` prompts x G completions
from the same model at temperature 1 with the same completion-length cap, and update every one
of those rows in one optimizer step (no row skipped: fade's trainer runs with an entropy term of
coefficient 0, which makes it feed every row through the loss, as TRL does, instead of leaving
out rows whose advantages are all 0). TRL runs with one generation per optimizer step (so no
old-log-prob pass), beta=0, no evaluation and no checkpoints. The tokens sampled differ between
the trainers (other random draws), so the table gives each one's tokens per step.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

#: (hidden, layers, heads, intermediate) of the larger timing models; the 1M size is the shipped base.
SIZES = {"20M": (512, 6, 8, 1408), "50M": (768, 7, 12, 2048)}
#: The entropy term that makes fade's trainer update every row, as TRL does (it adds 0 to the loss).
EVERY_ROW = "entropy_bonus:coef=0"
EQUAL_WORK = (
    "Equal work: both trainers sample the same prompts x G from the same model with the same length cap and "
    "update every sampled row in one optimizer step (fade with an entropy term of coefficient 0, which leaves "
    "no row out; TRL with one generation per step, beta=0)."
)


def policy_folder(size: str, root: Path) -> str:
    """The policy of a timing size: the shipped arithmetic base for 1M, else a Llama of random
    weights (seed 0) with the arithmetic tokenizer, saved under ``root``."""
    from fade.testbed.policy import build_policy, save_policy, tiny_llama_config
    from fade.testbed.tasks import get_task
    from fade.testbed.tokenizer import task_tokenizer
    from fade.testbed.trainer import base_model_dir

    if size == "1M":
        return str(base_model_dir("arithmetic"))
    if size not in SIZES:
        raise SystemExit(f"unknown size {size!r}: expected 1M or one of {', '.join(SIZES)}")
    hidden, layers, heads, inter = SIZES[size]
    tok = task_tokenizer(get_task("arithmetic"))
    config = tiny_llama_config(len(tok), hidden_size=hidden, num_layers=layers, num_heads=heads,
                               intermediate_size=inter, max_positions=64)
    save_policy(build_policy(config, seed=0), tok, root / size)
    return str(root / size)


def length_cap() -> int:
    """The completion-length cap both trainers use: the arithmetic task's (its longest answer and eos)."""
    from fade.testbed.tasks import get_task

    return get_task("arithmetic").max_answer_chars + 1


def run(estimator: str, steps: int, prompts: int, group: int, seed: int, *, model: str | None = None,
        device: str = "auto", every_row: bool = True) -> dict[str, float]:
    """Steps of fade's testbed trainer on the arithmetic task (``model``: a policy folder; default
    the shipped base policy), at the length cap of :func:`length_cap`; ``every_row`` updates every
    row (equal work with TRL) rather than leaving out the rows whose advantages are all 0."""
    from fade.testbed.runlog import load_run
    from fade.testbed.trainer import TrainConfig, train

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / estimator
        t0 = time.perf_counter()
        train(TrainConfig(out=str(out), task="arithmetic", estimator=estimator, steps=steps, seed=seed,
                          prompts_per_step=prompts, group_size=group, eval_every=0, eval_prompts=0,
                          checkpoint_every=steps, progress=False, model=model, device=device,
                          max_new_tokens=length_cap(), entropy=EVERY_ROW if every_row else None))
        wall = time.perf_counter() - t0
        rows = load_run(out).metrics[2:]

    def mean_ms(key: str) -> float:
        return 1e3 * statistics.fmean(r[key] for r in rows)

    step = mean_ms("step_seconds")
    parts = {"sample_ms": mean_ms("sample_seconds"), "advantage_ms": mean_ms("advantage_seconds"),
             "update_ms": mean_ms("update_seconds")}
    # What is left of the step: verification, the policy pass and the step's bookkeeping.
    parts["policy_ms"] = step - sum(parts.values())
    tokens = statistics.fmean(r["completion_tokens"] for r in rows)
    return {"wall": wall, "step_ms": step, "steps_per_s": 1e3 / step, "tokens": tokens,
            "tokens_per_s": 1e3 * tokens / step, "advantage_share": parts["advantage_ms"] / step, **parts}


def run_trl(advantage: str | None, steps: int, prompts: int, group: int, seed: int, *, model: str | None = None,
            device: str = "cpu", bf16: bool = False) -> dict[str, float]:
    """Steps of TRL's GRPOTrainer (``advantage=None``) or FadeGRPOTrainer on the testbed's arithmetic
    task (``model``: a policy folder, default the shipped base policy; ``device`` "cpu" or "cuda"),
    at the length cap of :func:`length_cap`, timed per part by wrapping the trainer's own methods."""
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from fade.integrations.trl import FadeGRPOTrainer
    from fade.testbed.policy import load_policy
    from fade.testbed.tasks import get_task
    from fade.testbed.trainer import base_model_dir
    from fade.testbed.trl_task import prompt_dataset, reward_function

    parts: dict[str, float] = {}

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.ends: list[float] = [time.perf_counter()]
            self.parts: list[dict[str, float]] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())
            self.parts.append(dict(parts))
            parts.clear()

    def timed(name: str, fn: Callable) -> Callable:
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                parts[name] = parts.get(name, 0.0) + time.perf_counter() - t0
        return wrapper

    task = get_task("arithmetic")
    policy, tokenizer = load_policy(model or base_model_dir("arithmetic"))
    problems = task.problems("train", n=prompts * steps, seed=seed)
    clock = StepClock()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        config = GRPOConfig(
            output_dir=tmp, per_device_train_batch_size=prompts * group, num_generations=group,
            gradient_accumulation_steps=1, max_completion_length=length_cap(), max_steps=steps,
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
        for name, method in (("sample", "_generate"), ("prepare", "_generate_and_score_completions"),
                             ("step", "training_step")):
            setattr(trainer, method, timed(name, getattr(trainer, method)))
        trainer.train()
    lengths = [row["completions/mean_length"] for row in trainer.state.log_history if "completions/mean_length" in row]
    times = [b - a for a, b in zip(clock.ends, clock.ends[1:])][2:]
    kept = clock.parts[2:]
    step = 1e3 * statistics.fmean(times)
    sample = 1e3 * statistics.fmean(p.get("sample", 0.0) for p in kept)
    prepare = 1e3 * statistics.fmean(p.get("prepare", 0.0) for p in kept)
    update = 1e3 * statistics.fmean(p.get("step", 0.0) - p.get("prepare", 0.0) for p in kept)
    tokens = statistics.fmean(lengths[2:]) * prompts * group
    return {"wall": time.perf_counter() - t0, "step_ms": step, "steps_per_s": 1e3 / step, "tokens": tokens,
            "tokens_per_s": 1e3 * tokens / step, "sample_ms": sample, "policy_ms": prepare - sample,
            "advantage_ms": float("nan"), "update_ms": update}


def _child(threads: int, fn: Callable, args: tuple, kwargs: dict) -> dict[str, float]:
    torch.set_num_threads(threads)
    result = fn(*args, **kwargs)
    result["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def isolated(threads: int, fn: Callable, *args, **kwargs) -> dict[str, float]:
    """``fn(*args, **kwargs)`` in a fresh process with ``threads`` torch threads, with its peak RSS."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_child, threads, fn, args, kwargs).result()


def _progress(size: str, trainer: str, advantage: str, r: dict[str, float]) -> None:
    print(f"{size} {trainer} ({advantage}): {r['step_ms']:.0f} ms a step, {r['wall']:.0f} s in all", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,20M,50M", help="policy sizes, some of 1M,20M,50M")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--estimators", default="grpo,fade")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-trl", action="store_true", help="skip TRL's GRPOTrainer")
    ap.add_argument("--smoke", action="store_true",
                    help="3 steps of 2 prompts x G=2 at 1M: checks that the script runs (CI), measures nothing")
    args = ap.parse_args()
    if args.smoke:
        args.steps, args.prompts, args.group_size, args.sizes = 3, 2, 2, "1M"
    if args.steps < 3:
        raise SystemExit(f"--steps must be at least 3 (the first two are warm-up), got {args.steps}")
    from fade.testbed.trainer import base_model_dir

    if not (base_model_dir("arithmetic") / "config.json").is_file():
        raise SystemExit("no shipped arithmetic base policy: run `make base` first")
    if not args.no_trl:
        try:
            import trl  # noqa: F401
        except ImportError:
            raise SystemExit(
                "TRL is not installed (pip install -e '.[trl]' from the clone); rerun with --no-trl to skip it"
            ) from None
    estimators = [name.strip() for name in args.estimators.split(",")]
    table = Table(title=f"arithmetic, {args.prompts} prompts x G={args.group_size}, length cap {length_cap()}, "
                        f"{args.threads} thread(s), mean of steps 3..{args.steps}, CPU")
    for col in ("size", "trainer", "advantage", "sampling (ms)", "verify + policy pass (ms)", "advantage (ms)",
                "update (ms)", "step (ms)", "tokens/step", "tokens/s", "peak RSS (MiB)", "TRL / fade"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            folder = policy_folder(size.strip(), Path(tmp))
            ours: dict[str, dict[str, float]] = {}
            rows: list[tuple[str, str, dict[str, float], str]] = []
            for name in estimators:
                ours[name] = isolated(args.threads, run, name, args.steps, args.prompts, args.group_size, args.seed,
                                      model=folder, device="cpu")
                rows.append(("fade train", name, ours[name], ""))
                _progress(size, "fade train", name, ours[name])
            if not args.no_trl:
                for label, advantage in (("TRL GRPOTrainer", None), ("FadeGRPOTrainer", "fade")):
                    if advantage is not None and advantage not in ours:
                        continue
                    r = isolated(args.threads, run_trl, advantage, args.steps, args.prompts, args.group_size,
                                 args.seed, model=folder)
                    mine = ours.get(advantage or "grpo") or next(iter(ours.values()))
                    rows.append((label, advantage or "TRL's grpo", r, f"{r['step_ms'] / mine['step_ms']:.2f}x"))
                    _progress(size, label, advantage or "TRL's grpo", r)
            for label, advantage, r, ratio in rows:
                table.add_row(size, label, advantage, f"{r['sample_ms']:.0f}", f"{r['policy_ms']:.0f}",
                              "-" if r["advantage_ms"] != r["advantage_ms"] else f"{r['advantage_ms']:.1f}",
                              f"{r['update_ms']:.0f}", f"{r['step_ms']:.0f}", f"{r['tokens']:.0f}",
                              f"{r['tokens_per_s']:,.0f}", f"{r['peak_mib']:,.0f}", ratio)
    Console(width=200).print(table)
    print(EQUAL_WORK)
    print("TRL / fade: TRL's step time over fade train's with the same advantage (TRL's grpo against fade's grpo); "
          "above 1, fade's trainer takes the same step faster. TRL's advantage and its verification are inside "
          "its 'verify + policy pass' column.")


if __name__ == "__main__":
    main()
