"""``FadeTrainer``, verl's synchronous PPO trainer feeding FADE, and verl's final-session rule for
fade's counterparts of ``grpo``.

verl calls a registered estimator with token-level rewards, the response mask, the prompt uids
and the algorithm config, and nothing about training dynamics. FADE needs the policy's entropy,
so :class:`FadeTrainer`, registered as ``trainer.v1.trainer_mode=fade``, is verl's
``PPOTrainerSync`` whose advantage step first hands the estimator ``metrics["actor/entropy"]``
(the mean token entropy verl has just computed for this very batch in its old-log-prob pass) and
the step, then adds FADE's schedule and the batch's gradient-mass diagnostics to verl's metrics as
``fade/...``, and which saves the estimator's state in each checkpoint folder and restores it on
resume. The verl methods it overrides are listed, and checked against the installed verl when
this module is imported, in ``patches.OVERRIDES``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import torch
from omegaconf import DictConfig

import fade
from fade.integrations.ledger import resolve
from fade.integrations.state import STATE_FILE, load_estimator_state, save_estimator_state
from fade.integrations.verl.estimators import (
    COUNTERPARTS,
    ENTROPY_METRIC,
    TRAINER_NAME,
    check_run,
    estimator_for,
    fade_metrics,
    feed,
    is_fade_name,
    resolve_params,
)
from fade.integrations.verl.patches import OVERRIDES, patch

__all__ = ["TRAINER_MISSING", "final_sessions", "session_advantages"]

logger = logging.getLogger(__name__)

try:
    # The v1 trainer imports transfer_queue, fastapi and uvicorn, which verl does not declare. The
    # estimators must register even without them (verl hides a plugin's import error).
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.ray_trainer import compute_advantage as _verl_compute_advantage
    from verl.trainer.ppo.v1 import PPOTrainerSync
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY, register_trainer
except ImportError as _exc:  # pragma: no cover - the fade-rl[verl] extra installs them
    TRAINER_MISSING: str | None = f"verl's v1 trainer cannot be imported ({_exc}); install fade-rl[verl]"
    logger.warning("fade: trainer_mode=%s is unavailable: %s", TRAINER_NAME, TRAINER_MISSING)
else:
    TRAINER_MISSING = None


def final_sessions(batch_keys: list[str]) -> tuple[list[int], list[int]]:
    """verl's v1 multi-output agent loops key each output ``{uid}_{session}_{index}``. Returns the row of
    each session's final output (highest index), in order of each session's first row, and for every
    row the position of its session in that list."""
    finals: dict[str, tuple[int, int]] = {}
    session_of = []
    for row, key in enumerate(batch_keys):
        session, sep, index = str(key).rpartition("_")
        if not sep or "_" not in session or not index.isdigit():
            raise ValueError(f"batch key {key!r} is not verl's {{uid}}_{{session}}_{{index}}")
        session_of.append(session)
        if session not in finals or finals[session][0] < int(index):
            finals[session] = (int(index), row)
    position = {session: i for i, session in enumerate(finals)}
    return [row for _, row in finals.values()], [position[s] for s in session_of]


def session_advantages(verl_fn: Callable[..., Any]) -> Callable[..., Any]:
    """verl's ``compute_advantage_for_multi_trajectories`` (trainer/ppo/v1/utils.py), applying its
    final-session rule to fade's counterparts of verl's ``grpo`` as verl applies it to ``grpo``."""

    def compute_advantage_for_multi_trajectories(data, batch_keys, adv_estimator, gamma=1.0, lam=1.0, num_repeat=1,
                                                 norm_adv_by_std_in_grpo=True, config=None):
        cp = COUNTERPARTS.get(adv_estimator) if isinstance(adv_estimator, str) else None
        if cp is None or not cp.sessions:
            return verl_fn(data, batch_keys, adv_estimator, gamma=gamma, lam=lam, num_repeat=num_repeat,
                           norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo, config=config)
        # Each session's final output is one rollout of its prompt's group; every output of the
        # session takes that rollout's advantage (its value at the first response token, 0 when empty).
        rows, session_of = final_sessions(batch_keys)
        final = _verl_compute_advantage(data.select_idxs(rows), adv_estimator=adv_estimator, gamma=gamma, lam=lam,
                                        num_repeat=num_repeat, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
                                        config=config)
        first = (final.batch["response_mask"] != 0).to(torch.int64).argmax(dim=1, keepdim=True)
        per_session = final.batch["advantages"].gather(1, first).squeeze(1)
        token_adv = per_session[torch.as_tensor(session_of)].unsqueeze(-1) * data.batch["response_mask"]
        data.batch["advantages"] = token_adv
        data.batch["returns"] = token_adv
        return data

    return compute_advantage_for_multi_trajectories


if TRAINER_MISSING is None:
    patch("verl.trainer.ppo.v1.trainer_base", "compute_advantage_for_multi_trajectories", session_advantages)
    for _touch in OVERRIDES:
        resolve(_touch)

    class FadeTrainer(PPOTrainerSync):
        """verl's synchronous PPO trainer, feeding FADE the entropy of each batch.

        Selected by ``trainer.v1.trainer_mode=fade``. It behaves exactly as
        ``trainer_mode=sync`` (it reads ``trainer.v1.sync``) except for three methods of verl's
        ``PPOTrainer`` (all it overrides is listed in ``patches.OVERRIDES``):

        - ``_compute_advantage``: hands the estimator of ``algorithm.adv_estimator`` the entropy
          that ``_compute_old_log_prob`` has just put in ``metrics["actor/entropy"]`` for this
          batch, and the step (``global_steps - 1``), for its next weighing (``feed``); lets verl
          compute the advantages (which calls fade's registered function, which weighs the batch
          through :func:`fade.weigh`, observing them first); then adds ``fade/...`` metrics. verl's
          own estimators pass through untouched.
        - ``_save_checkpoint``: writes the estimator's state to ``global_step_N/fade_estimator.json``
          first, so the folder holds it before verl marks the checkpoint as the latest.
        - ``_load_checkpoint``: restores that state once verl has set the resumed step.
        """

        def __init__(self, config: DictConfig, *args: Any, **kwargs: Any) -> None:
            # Settings the estimator cannot honour stop the run here, before any worker starts.
            check_run(config)
            super().__init__(config, *args, **kwargs)

        def _build_replay_buffer(self) -> ReplayBuffer:
            # verl compares trainer_mode with the literal "sync" (replay buffer, dataloader refill,
            # checkpoints of in-flight prompts); any other name gets the async code paths.
            # PPOTrainer.__init__ calls this right after reading trainer_mode, before any of those uses.
            self.trainer_mode = "sync"
            self.parameter_sync_step = self.config.trainer.v1.get("sync", {}).get("parameter_sync_step", 1)
            return super()._build_replay_buffer()

        def _fade_estimator(self) -> fade.Estimator | None:
            name = self.config.algorithm.adv_estimator
            if not is_fade_name(name):
                return None
            return estimator_for(name, resolve_params(name, self.config.algorithm))

        def _compute_advantage(self, batch: KVBatchMeta, metrics: dict[str, Any]) -> KVBatchMeta:
            est = self._fade_estimator()
            if est is not None and est.stateful:
                entropy = metrics.get(ENTROPY_METRIC)
                if entropy is None and est.reads_entropy:
                    raise ValueError(
                        f"{self.config.algorithm.adv_estimator} needs the policy entropy, but verl computed none "
                        f"before the advantage (metrics has no {ENTROPY_METRIC!r}): with "
                        "algorithm.rollout_correction.bypass_mode=True verl skips its old-log-prob pass. "
                        "Turn bypass mode off, fix the knobs that read it (+algorithm.fade.delta=1.0), "
                        "or use fade_decay"
                    )
                signals = {"step": self.global_steps - 1}  # updates before this batch (the rule of fade.weigh)
                if entropy is not None:
                    signals["entropy"] = float(entropy)
                feed(est, **signals)  # observed by the weighing verl's call of fade's function makes
            batch = super()._compute_advantage(batch, metrics)
            if est is not None:
                name = self.config.algorithm.adv_estimator
                metrics.update(fade_metrics(name, resolve_params(name, self.config.algorithm)))
            return batch

        def _save_checkpoint(self) -> None:
            est = self._fade_estimator()
            if est is not None and est.stateful:
                folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
                save_estimator_state(est, folder, global_step=self.global_steps)
            super()._save_checkpoint()

        def _load_checkpoint(self) -> None:
            super()._load_checkpoint()
            est = self._fade_estimator()
            if est is None or not est.stateful or self.global_steps == 0:
                return
            trainer = self.config.trainer
            if trainer.resume_mode == "resume_path":
                folder = trainer.resume_from_path
            else:
                folder = os.path.join(trainer.default_local_dir, f"global_step_{self.global_steps}")
            folder = os.path.abspath(folder)
            saved = load_estimator_state(est, folder)
            path = os.path.join(folder, STATE_FILE)
            if saved is None:
                # A checkpoint of a run that used another estimator until now: FADE starts afresh.
                logger.warning("resuming at step %d without %s: %s starts from its initial state",
                               self.global_steps, path, est.name)
                return
            logger.info("restored %s state from %s: %s", est.name, path, saved["state"])

    __all__ += ["FadeTrainer", "register"]

    def register() -> None:
        """Register :class:`FadeTrainer` as ``trainer_mode=fade``; safe to call again, and when this
        module is imported again (the newest class wins)."""
        existing = TRAINER_REGISTRY.get(TRAINER_NAME)
        if existing is FadeTrainer:
            return
        if existing is not None and existing.__module__ == __name__:
            patch("verl.trainer.ppo.v1.trainer_base", "TRAINER_REGISTRY", FadeTrainer, key=TRAINER_NAME)
        else:
            register_trainer(TRAINER_NAME)(FadeTrainer)
