"""FADE on a math dataset with TRL's GRPOTrainer: a Qwen-class model, math-verify rewards, vLLM.

    accelerate launch --num_processes 8 examples/trl/fade_grpo_math.py \
        --model Qwen/Qwen2.5-Math-1.5B --use-vllm --output-dir runs/qwen-math-fade

    python examples/trl/fade_grpo_math.py --dry-run      # validate the settings, load nothing

The only fade-specific lines are the import of FadeGRPOTrainer and its three arguments
(advantage, advantage_kwargs, entropy); everything else is a plain TRL run. The dataset is
GSM8K from the Hugging Face hub (any dataset with a question and a final answer works with
--question-column/--answer-column); the reward is fade's math-verify reward, which reads the
``answer`` column. See README.md beside this file for the hardware it is sized for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

import fade
from fade.specs import parse_params
from fade.verifiers.rewards import math_reward

SYSTEM = "Solve the problem step by step, then give the final answer in \\boxed{}."


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen/Qwen2.5-Math-1.5B", help="hub id or local directory of a causal LM")
    ap.add_argument("--dataset", default="openai/gsm8k")
    ap.add_argument("--dataset-config", default="main")
    ap.add_argument("--question-column", default="question")
    ap.add_argument("--answer-column", default="answer", help="GSM8K's answers end in '#### <final answer>'")
    ap.add_argument("--output-dir", default="runs/fade-grpo-math")
    ap.add_argument("--advantage", default="fade", help="any name in fade.available()")
    ap.add_argument("--advantage-args", default="h_star_ratio=0.5", metavar="K=V[,K=V...]")
    ap.add_argument("--entropy", default="previous", choices=("previous", "current"))
    ap.add_argument("--num-generations", type=int, default=8, help="completions per prompt (the group size G)")
    ap.add_argument("--per-device-batch-size", type=int, default=16, help="completions per GPU per micro-batch")
    ap.add_argument("--gradient-accumulation-steps", type=int, default=4)
    ap.add_argument("--learning-rate", type=float, default=1e-6)
    ap.add_argument("--max-completion-length", type=int, default=1024)
    ap.add_argument("--max-steps", type=int, default=1000)
    ap.add_argument("--use-vllm", action="store_true", help="generate with vLLM, colocated with training")
    ap.add_argument("--report-to", default="tensorboard")
    ap.add_argument(
        "--dry-run", action="store_true", help="validate the settings and print them; load no model or data"
    )
    return ap.parse_args(argv)


def grpo_config_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The GRPOConfig of the run, as keyword arguments."""
    return dict(
        output_dir=args.output_dir,
        num_generations=args.num_generations,
        per_device_train_batch_size=args.per_device_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=10,
        max_completion_length=args.max_completion_length,
        max_steps=args.max_steps,
        temperature=1.0,
        beta=0.0,  # no KL term: FADE's sign knob is what holds the entropy up
        loss_type="dapo",  # token-level aggregation
        # TRL's std scale is part of GRPO's advantage; fade's other estimators set their own scale
        scale_rewards="group" if args.advantage in ("grpo", "grpo_passk") else "none",
        bf16=True,
        gradient_checkpointing=True,
        use_vllm=args.use_vllm,
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.3,
        logging_steps=1,
        save_steps=100,
        report_to=args.report_to,
        log_completions=True,
    )


def trainer_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """FadeGRPOTrainer's fade-specific arguments; the estimator is built here to check them."""
    params = parse_params(args.advantage_args, where=args.advantage_args)
    fade.estimator(args.advantage, **params)  # unknown name or parameter: ValueError now, not after a model load
    return {"advantage": args.advantage, "advantage_kwargs": params, "entropy": args.entropy}


def prepare(dataset: Any, args: argparse.Namespace) -> Any:
    """Chat prompts and a bare final answer per row (GSM8K's answers end in '#### 42')."""

    def row(example: dict[str, Any]) -> dict[str, Any]:
        answer = str(example[args.answer_column]).split("####")[-1].strip()
        prompt = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": example[args.question_column]}]
        return {"prompt": prompt, "answer": answer}

    return dataset.map(row, remove_columns=dataset.column_names)


def dry_run(args: argparse.Namespace) -> dict[str, Any]:
    """Validate every setting without a GPU: GRPOConfig's own checks, the estimator, the reward."""
    from trl import GRPOConfig

    config = grpo_config_kwargs(args)
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = sorted(set(config) - fields)
    if unknown:
        raise ValueError(f"not GRPOConfig fields in TRL's installed version: {unknown}")
    # Device settings cannot validate on a machine without a GPU; everything else goes through TRL.
    checked = GRPOConfig(**{**config, "bf16": False, "use_cpu": True, "use_vllm": False, "report_to": "none"})
    fade_args = trainer_kwargs(args)
    from fade.integrations.trl import trl_params

    # TRL's advantage settings against the estimator, as FadeGRPOTrainer checks them before loading a model
    trl_params(args.advantage, fade_args["advantage_kwargs"], scale_rewards=checked.scale_rewards,
               multi_objective_aggregation=checked.multi_objective_aggregation)
    if not callable(math_reward):
        raise ValueError("fade.verifiers.rewards.math_reward is not callable")
    return {"grpo_config": config, "fade": fade_args, "reward_funcs": [math_reward.__name__]}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.dry_run:
        print(json.dumps(dry_run(args), indent=2, default=str))
        return
    from datasets import load_dataset
    from trl import GRPOConfig

    from fade.integrations.trl import FadeGRPOTrainer

    dataset = prepare(load_dataset(args.dataset, args.dataset_config, split="train"), args)
    trainer = FadeGRPOTrainer(
        model=args.model,
        reward_funcs=[math_reward],
        args=GRPOConfig(**grpo_config_kwargs(args)),
        train_dataset=dataset,
        **trainer_kwargs(args),
    )
    trainer.train()
    trainer.save_model(args.output_dir)


if __name__ == "__main__":
    main()
