"""A small real TRL GRPOTrainer run on CPU that writes the dump ``fade analyze`` reads.

TRL's own GRPOTrainer (not fade's) trains the testbed's shipped arithmetic base policy for a few
steps with ``log_completions=True``, so TRL writes ``OUT/completions/completions_NNNNN.parquet``
at every step, and ``save_state`` writes ``OUT/trainer_state.json`` (the entropy and
frac_reward_zero_std TRL logged). Then:

    python examples/analyze/trl_tiny_run.py OUT [--steps 12]
    fade analyze OUT --out ANALYSIS

About a minute on 2 CPU cores. Needs the testbed and trl extras.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="TRL's output_dir")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--generations", type=int, default=8, help="num_generations (the group size)")
    args = ap.parse_args()

    import torch
    from trl import GRPOConfig, GRPOTrainer

    from fade.testbed.policy import load_policy
    from fade.testbed.tasks import get_task
    from fade.testbed.trainer import base_model_dir
    from fade.testbed.trl_task import prompt_dataset, reward_function

    torch.manual_seed(0)
    task = get_task("arithmetic")
    model, tokenizer = load_policy(base_model_dir("arithmetic"))
    problems = task.problems("train", n=256, seed=0)
    config = GRPOConfig(
        output_dir=str(Path(args.out)), per_device_train_batch_size=8 * args.generations,
        num_generations=args.generations, max_completion_length=8, max_steps=args.steps, logging_steps=1,
        learning_rate=2e-4, bf16=False, use_cpu=True, report_to="none", save_strategy="no",
        temperature=1.0, beta=0.0, seed=0, disable_tqdm=True, log_completions=True,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[reward_function(task, problems)], args=config,
                          train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer)
    trainer.train()
    trainer.save_state()


if __name__ == "__main__":
    main()
