"""One process of a multi-process FadeGRPOTrainer run (launched by tests/test_trl.py with torchrun).

Each rank trains the shipped arithmetic policy for a few steps and writes, per generation, the
gathered rewards, the whole batch's advantages, its own slice and the estimator's state to
OUT/rank{r}.json, so the test can check that every rank computed the same advantages, kept its
own slice, and evolved the same FADE state.
"""

import json
import sys

import torch
from trl import GRPOConfig

from fade.integrations.trl import FadeGRPOTrainer
from fade.testbed.policy import load_policy
from fade.testbed.tasks import get_task
from fade.testbed.trainer import base_model_dir
from fade.testbed.trl_task import prompt_dataset, reward_function


class Recording(FadeGRPOTrainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.records = []

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.records.append({
                "rewards": self.fade_last["rewards"].tolist(),
                "advantages": self.fade_last["advantages"].tolist(),
                "local": out["advantages"].tolist(),
                "state": self.fade_estimator.state_dict(),
                "alpha": self.fade_estimator.last["alpha"],
                "delta": self.fade_estimator.last["delta"],
            })
        return out


def main(out: str) -> None:
    torch.set_num_threads(1)
    task = get_task("arithmetic")
    model, tokenizer = load_policy(base_model_dir("arithmetic"))
    problems = task.problems("train", n=64, seed=0)
    args = GRPOConfig(
        output_dir=out, per_device_train_batch_size=8, num_generations=4, gradient_accumulation_steps=2,
        max_completion_length=task.max_answer_chars + 1, max_steps=3, logging_steps=1, learning_rate=1e-4,
        bf16=False, use_cpu=True, report_to="none", save_strategy="no", gradient_checkpointing=False,
        temperature=1.0, beta=0.0, seed=0, disable_tqdm=True, scale_rewards="none",
    )
    trainer = Recording(
        model=model, reward_funcs=[reward_function(task, problems)], args=args,
        train_dataset=prompt_dataset(problems, tokenizer.bos_token), processing_class=tokenizer, advantage="fade",
    )
    trainer.train()
    rank = trainer.accelerator.process_index
    with open(f"{out}/rank{rank}.json", "w") as f:
        json.dump({"world": trainer.accelerator.num_processes, "records": trainer.records}, f)


if __name__ == "__main__":
    main(sys.argv[1])
