"""Inputs of the verl CPU smoke run, built locally (no download): a tiny causal LM with its tokenizer,
and train/test parquet files of the testbed's arithmetic task in verl's dataset format.

    python examples/verl/cpu_smoke_inputs.py OUT [--train 64] [--test 16] [--seed 0]

writes ``OUT/model`` (the testbed's shipped arithmetic base policy: a 4-layer Llama of 1M parameters
that solves about a third of the one- and two-digit sums, so groups carry signal) and
``OUT/data/{train,test}.parquet``. Each row is a verl RLHF row: ``data_source``, a one-message
``prompt``, ``ability``, ``reward_model.ground_truth`` (the sum) and ``extra_info``. The tokenizer gets
a chat template that writes ``<bos>`` and the prompt, the text the base policy was trained on, since
verl's agent loop builds every prompt with the chat template.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from fade.testbed.tasks import ArithmeticTask
from fade.testbed.trainer import base_model_dir

#: bos then the message texts: "<bos>37+48=", the testbed's prompt encoding.
CHAT_TEMPLATE = "{{ bos_token }}{% for message in messages %}{{ message['content'] }}{% endfor %}"


def build_model(out: Path) -> Path:
    from transformers import AutoTokenizer

    target = out / "model"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(base_model_dir("arithmetic"), target)
    tokenizer = AutoTokenizer.from_pretrained(target, local_files_only=True)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(target)
    return target


def build_data(out: Path, train: int, test: int, seed: int) -> dict[str, Path]:
    import pandas as pd

    task = ArithmeticTask(max_digits=2)
    paths = {}
    for split, n in (("train", train), ("test", test)):
        rows = [
            {
                "data_source": "fade/arithmetic",
                "prompt": [{"role": "user", "content": p.prompt}],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": p.answer},
                "extra_info": {"split": split, "index": i, "id": p.id, "difficulty": p.difficulty},
            }
            for i, p in enumerate(task.problems(split, n=n, seed=seed))
        ]
        path = out / "data" / f"{split}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_parquet(path)
        paths[split] = path
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--train", type=int, default=64, help="training prompts")
    parser.add_argument("--test", type=int, default=16, help="test prompts")
    parser.add_argument("--seed", type=int, default=0, help="which problems are drawn")
    args = parser.parse_args()
    for name in ("train", "test"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    args.out.mkdir(parents=True, exist_ok=True)
    model = build_model(args.out)
    data = build_data(args.out, args.train, args.test, args.seed)
    print(f"model {model}\ntrain {data['train']}\ntest {data['test']}")


if __name__ == "__main__":
    main()
