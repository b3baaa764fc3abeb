"""Settings of a verl run that fail only once it is under way, refused by ``FadeTrainer`` before any
worker starts, in one line naming the setting (:func:`check`):

- fade's reward function (``reward.custom_reward_function.path`` naming fade.verifiers.rewards) with
  ``reward_kwargs`` it refuses: verl calls the reward in its reward workers, where the refusal
  would come at the first reward, inside a worker's traceback;
- a resume whose saved data loader ran with another ``data.dataloader_num_workers``: verl restores
  torchdata's ``StatefulDataLoader`` state as it was saved, and torchdata fails on a state saved
  with another worker count (an ``AssertionError`` when the first batch is drawn, after the workers
  have started and loaded the checkpoint) whichever estimator the run uses. fade's own state does not
  depend on the worker count, but the
  data order does, so fade refuses the resume rather than rewrite verl's data-loader state.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from fade.verifiers import rewards

__all__ = ["check", "check_resume", "check_reward_settings", "saved_dataloader_workers"]

#: The functions of fade.verifiers.rewards a verl run may name as its custom reward function.
REWARD_FUNCTIONS = ("compute_score", "compute_math_score", "compute_code_score")


def check(config: Any) -> None:
    """Both checks of the module docstring, on verl's whole trainer config."""
    check_reward_settings(config)
    check_resume(config)


def _names_fade_rewards(path: str) -> bool:
    if path.startswith("pkg://"):
        return path.removeprefix("pkg://").replace("/", ".").removesuffix(".py") == rewards.__name__
    try:
        return Path(path).resolve() == Path(rewards.__file__).resolve()
    except OSError:
        return False


def check_reward_settings(config: Any) -> None:
    """Refuse ``reward_kwargs`` that fade's reward function would refuse at its first call."""
    custom = OmegaConf.select(config, "reward.custom_reward_function") or {}
    path, name = custom.get("path"), custom.get("name")
    if not path or name not in REWARD_FUNCTIONS or not _names_fade_rewards(str(path)):
        return
    kwargs = custom.get("reward_kwargs") or {}
    rewards.check_settings(name, OmegaConf.to_container(kwargs) if OmegaConf.is_config(kwargs) else dict(kwargs))


def saved_dataloader_workers(state: dict) -> int | None:
    """The ``num_workers`` a torchdata ``StatefulDataLoader`` state was saved with (None: not one)."""
    if "_num_yielded" in state:
        return 0  # the single-process loader's state
    try:
        return int(state["_snapshot"]["_main_snapshot"]["_num_workers"])
    except (KeyError, TypeError, ValueError):
        return None


def _resume_folder(trainer: Any) -> str | None:
    """The checkpoint folder verl's ``_load_checkpoint`` will resume from (trainer_base.py:850-877)."""
    mode = trainer.get("resume_mode", "auto")
    if mode == "resume_path":
        folder = trainer.get("resume_from_path")
        return os.path.abspath(folder) if isinstance(folder, str) else None
    if mode != "auto":
        return None
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    return find_latest_ckpt_path(os.path.abspath(trainer.get("default_local_dir") or "."))


def check_resume(config: Any) -> None:
    """Refuse a resume whose data-loader state was saved with another ``data.dataloader_num_workers``."""
    folder = _resume_folder(config.trainer)
    saved = os.path.join(folder, "data.pt") if folder else None
    if saved is None or not os.path.isfile(saved):
        return
    import torch

    workers = saved_dataloader_workers(torch.load(saved, weights_only=False))
    now = int(config.data.get("dataloader_num_workers", 0))
    if workers is not None and workers != now:
        raise ValueError(f"data.dataloader_num_workers={now}, but the checkpoint {folder} saved its data loader with "
                         f"{workers}: verl's StatefulDataLoader resumes only with the same count, so set "
                         f"data.dataloader_num_workers={workers} to resume this run")
