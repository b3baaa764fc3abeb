"""The testbed's tasks for TRL's ``GRPOTrainer``: a prompt dataset and a reward function.

With these, TRL trains the shipped base policies on the same problems and verifiers as
``fade train``, so the two trainers can be compared on equal work (``benchmarks/trainer.py``)
and ``fade.integrations.trl.FadeGRPOTrainer`` can be tested end to end without downloads.
Prompts start with the tokenizer's bos token, as the testbed encodes them, and each row carries
its problem id, which TRL hands to the reward function as a keyword argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .tasks import Problem, Task

__all__ = ["prompt_dataset", "reward_function"]


def prompt_dataset(problems: Sequence[Problem], bos_token: str | None = None) -> Any:
    """A ``datasets.Dataset`` with columns ``prompt`` (bos + the problem's prompt) and ``problem_id``."""
    from datasets import Dataset  # a TRL dependency, not one of the testbed's

    if not problems:
        raise ValueError("prompt_dataset needs at least one problem")
    return Dataset.from_list([{"prompt": (bos_token or "") + p.prompt, "problem_id": p.id} for p in problems])


def reward_function(task: Task, problems: Sequence[Problem]) -> Callable[..., list[float]]:
    """A TRL reward function scoring each completion with ``task``'s verifier (1.0 or 0.0)."""
    by_id = {p.id: p for p in problems}

    def verified(prompts: list[Any], completions: list[Any], problem_id: list[str], **_: Any) -> list[float]:
        scores = []
        for pid, completion in zip(problem_id, completions):
            if pid not in by_id:
                raise ValueError(
                    f"problem id {pid!r} is not among the {len(by_id)} problems this reward function was built with"
                )
            text = completion if isinstance(completion, str) else completion[-1]["content"]
            scores.append(task.verify(by_id[pid], text).score)
        return scores

    verified.__name__ = f"{task.name}_verified"
    return verified
