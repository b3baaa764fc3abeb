"""fade inside verl: every fade estimator in verl's advantage registry, and a trainer that feeds FADE.

Importing this module registers each name of ``fade.available()`` with verl's ``register_adv_est``:
names that start with ``fade`` keep their name (``fade``, ``fade_alpha``, ...), the others get a
``fade_`` prefix (``fade_grpo``, ``fade_maxrl``, ``fade_passk``, ...) so they never clash with
verl's own. A run selects one with ``algorithm.adv_estimator=NAME`` and passes its parameters as
``+algorithm.fade.KEY=VALUE``. verl imports the module itself, in every Ray process, on each
``import verl``: through the ``verl.plugins`` entry point this package installs, or through
``VERL_USE_EXTERNAL_MODULES=fade.integrations.verl`` (forward it to the workers of a multi-node run
with ``+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=...``).

verl calls a registered estimator with token-level rewards, the response mask, the prompt uids
and the algorithm config, and nothing about training dynamics. FADE needs the policy's entropy,
so this module also registers :class:`FadeTrainer` as ``trainer.v1.trainer_mode=fade``: verl's
synchronous PPO trainer (``PPOTrainerSync``) whose advantage step first hands the estimator
``metrics["actor/entropy"]`` (the mean token entropy verl has just computed for this very batch in
its old-log-prob pass) and the global step, then adds FADE's schedule and the batch's gradient-mass
diagnostics to verl's metrics as ``fade/...``, and which saves the estimator's state in each
checkpoint folder and restores it on resume. Estimators live in this process (verl computes
advantages in the trainer's process), one per (name, parameters), so FADE's state carries over
from step to step; :func:`estimator_for` returns the one verl's call will use.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo import core_algos

import fade
from fade.integrations.diagnostics import batch_metrics
from fade.integrations.state import STATE_FILE, load_estimator_state, save_estimator_state

__all__ = [
    "ENTROPY_METRIC",
    "STATE_FILE",
    "TRAINER_NAME",
    "current_estimators",
    "estimator_for",
    "fade_metrics",
    "fade_name",
    "is_fade_name",
    "params_from_config",
    "register",
    "registered_names",
    "reset_estimators",
    "verl_name",
]

logger = logging.getLogger(__name__)

#: The metric verl's v1 trainer writes in its old-log-prob pass: the mean token entropy of the
#: current batch under the current policy, aggregated with the actor's ``loss_agg_mode``.
ENTROPY_METRIC = "actor/entropy"

#: ``trainer.v1.trainer_mode`` value that selects :class:`FadeTrainer`.
TRAINER_NAME = "fade"


# -- names ---------------------------------------------------------------------------------------


def verl_name(name: str) -> str:
    """The name under which fade's estimator ``name`` is registered in verl."""
    return name if name.startswith("fade") else f"fade_{name}"


def _name_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for name in fade.available():
        v = verl_name(name)
        if v in table:
            raise ValueError(f"fade estimators {table[v]!r} and {name!r} would both be registered in verl as {v!r}")
        table[v] = name
    return table


def registered_names() -> dict[str, str]:
    """verl name -> fade name, for every fade estimator (``{"fade": "fade", "fade_grpo": "grpo", ...}``)."""
    return dict(_name_table())


def is_fade_name(name: Any) -> bool:
    """Whether ``name`` (an ``algorithm.adv_estimator`` value) is one of fade's verl names."""
    return isinstance(name, str) and name in _name_table()


def fade_name(name: str) -> str:
    """fade's estimator for ``name``, a verl name (``fade_grpo``) or a fade name (``grpo``)."""
    table = _name_table()
    if name in table:
        return table[name]
    if name in fade.available():
        return name
    raise ValueError(f"{name!r} is not a fade estimator in verl; fade's verl names: {', '.join(sorted(table))}")


# -- parameters and the estimators of this process -----------------------------------------------


def params_from_config(config: Any) -> dict[str, Any]:
    """The estimator parameters in ``config.fade`` (``+algorithm.fade.k=8`` on verl's command line).

    ``config`` is what verl passes as the algorithm config: an OmegaConf ``DictConfig`` (verl
    0.9's trainers), a plain mapping, verl's ``AlgoConfig`` dataclass (a Mapping too), or None.
    """
    if config is None:
        return {}
    if not hasattr(config, "get"):
        raise ValueError(
            f"the algorithm config must be a mapping, DictConfig or AlgoConfig, got {type(config).__name__}"
        )
    section = config.get("fade")
    if section is None:
        return {}
    if isinstance(section, DictConfig):
        section = OmegaConf.to_container(section, resolve=True)
    if not isinstance(section, Mapping):
        raise ValueError(
            f"algorithm.fade must map estimator parameters to values (e.g. +algorithm.fade.k=8), got {section!r}"
        )
    return {str(k): v for k, v in section.items()}


# One estimator per (fade name, parameters), so that FADE's state lives across verl's calls; and the
# inputs of each one's latest call, for the diagnostics of stateless estimators.
_ESTIMATORS: dict[tuple[str, str], fade.Estimator] = {}
_LAST_BATCH: dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor, Any]] = {}
_WARNED_NO_ENTROPY: set[tuple[str, str]] = set()


def _key(name: str, params: Mapping[str, Any]) -> tuple[str, str]:
    return name, json.dumps(dict(params), sort_keys=True, default=repr)


def estimator_for(name: str, params: Mapping[str, Any] | None = None) -> fade.Estimator:
    """The estimator verl's call of ``name`` with ``params`` uses in this process (built once).

    ``name`` is a verl name (``fade``, ``fade_grpo``) or a fade name (``grpo``); unknown
    parameters raise fade's ValueError naming them.
    """
    fname = fade_name(name)
    key = _key(fname, params or {})
    est = _ESTIMATORS.get(key)
    if est is None:
        try:
            est = fade.estimator(fname, **dict(params or {}))
        except ValueError as exc:
            raise ValueError(f"{exc} (verl: parameters come from algorithm.fade)") from None
        _ESTIMATORS[key] = est
    return est


def current_estimators() -> dict[tuple[str, str], fade.Estimator]:
    """Every estimator built in this process, keyed by (fade name, parameters as sorted JSON)."""
    return dict(_ESTIMATORS)


def reset_estimators() -> None:
    """Forget every estimator of this process: the next call starts from fresh state (tests, sweeps)."""
    _ESTIMATORS.clear()
    _LAST_BATCH.clear()
    _WARNED_NO_ENTROPY.clear()


def fade_metrics(name: str, params: Mapping[str, Any] | None = None) -> dict[str, float]:
    """``fade/...`` metrics of the latest call of ``name`` with ``params`` in this process.

    Gradient-mass diagnostics of the batch (positive and negative mass, sign balance, difficulty,
    effective sample fraction) for every estimator, plus FADE's schedule (alpha, delta, p_hat,
    h_hat, h_star). Undefined values (the sign balance of a batch with no signal, h_hat before any
    entropy) are left out rather than logged as NaN. Empty before the first call.
    """
    fname = fade_name(name)
    key = _key(fname, params or {})
    est = _ESTIMATORS.get(key)
    batch = _LAST_BATCH.get(key)
    if est is None or batch is None:
        return {}
    adv, scores, index = batch
    return batch_metrics(est, adv, scores, index)


# -- the functions verl calls ----------------------------------------------------------------------


def _verl_fn(name: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """verl's estimator signature around fade's estimator ``name``."""
    vname = verl_name(name)
    spec = fade.spec(name)
    wants_lengths = "lengths" in spec.needs or "lengths" in spec.uses
    wants_baseline = "baseline_rewards" in spec.needs or "baseline_rewards" in spec.uses

    def compute_advantage(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        index: np.ndarray | None = None,
        config: Any = None,
        reward_baselines: torch.Tensor | None = None,
        **unused: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if index is None:
            raise ValueError(
                f"{vname}: verl passed no group ids; the batch needs its prompt uids (non_tensor_batch['uid'])"
            )
        if token_level_rewards.dim() != 2 or response_mask.shape != token_level_rewards.shape:
            raise ValueError(
                f"{vname}: expected token_level_rewards and response_mask of one shape (batch, response_length), "
                f"got {tuple(token_level_rewards.shape)} and {tuple(response_mask.shape)}"
            )
        if "baseline_rewards" in spec.needs and reward_baselines is None:
            raise ValueError(
                f"{vname} needs verl's reward_baselines (the greedy-decode reward per prompt that verl's legacy "
                "trainer computes for adv_estimator=remax); this batch has none"
            )
        params = params_from_config(config)
        est = estimator_for(name, params)
        key = _key(name, params)
        if est.awaiting_entropy and key not in _WARNED_NO_ENTROPY:
            _WARNED_NO_ENTROPY.add(key)
            logger.warning(
                "%s has been given no entropy, so its sign knob delta stays 1; run verl with "
                "trainer.v1.trainer_mode=%s so that the trainer feeds it metrics['%s']",
                vname, TRAINER_NAME, ENTROPY_METRIC,
            )
        # verl's outcome estimators score a response by the sum of its token rewards (the outcome
        # reward sits on the last token) and broadcast the advantage over the response's tokens.
        scores = token_level_rewards.sum(dim=-1)
        inputs: dict[str, torch.Tensor] = {}
        if wants_lengths:
            inputs["lengths"] = response_mask.sum(dim=-1)
        if wants_baseline and reward_baselines is not None:
            inputs["baseline_rewards"] = reward_baselines
        with torch.no_grad():
            try:
                adv = est(scores, index, **inputs)
            except ValueError as exc:
                raise ValueError(f"{vname} (fade's {name!r}): {exc}") from exc
            _LAST_BATCH[key] = (adv, scores, index)
            token_adv = adv.unsqueeze(-1) * response_mask
        return token_adv, token_adv

    compute_advantage.__name__ = compute_advantage.__qualname__ = f"compute_{vname}_advantage"
    compute_advantage.__doc__ = f"verl advantage estimator {vname!r}: fade's {name!r} ({spec.summary})"
    compute_advantage.fade_name = name  # marks the function as ours, for idempotent registration
    return compute_advantage


def register() -> list[str]:
    """Register every fade estimator in verl's advantage registry; returns the verl names.

    Safe to call again, and safe when this module is imported again (reloaded): an entry that
    fade registered earlier is replaced by this module's function. A name that another package
    took raises ValueError.
    """
    names = []
    for vname, name in _name_table().items():
        fn = _verl_fn(name)
        existing = core_algos.ADV_ESTIMATOR_REGISTRY.get(vname)
        if existing is not None and getattr(existing, "fade_name", None) == name:
            # verl's register_adv_est refuses a second function under a name; this one is ours.
            core_algos.ADV_ESTIMATOR_REGISTRY[vname] = fn
        elif existing is not None:
            raise ValueError(f"verl already has an advantage estimator {vname!r} that is not fade's: {existing!r}")
        else:
            core_algos.register_adv_est(vname)(fn)
        names.append(vname)
    return names


register()


# -- the trainer -----------------------------------------------------------------------------------

try:
    # The v1 trainer imports transfer_queue, fastapi and uvicorn, which verl does not declare. The
    # estimators above must register even without them (verl hides a plugin's import error).
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1 import PPOTrainerSync
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY, register_trainer
except ImportError as _exc:  # pragma: no cover - the fade-rl[verl] extra installs them
    _TRAINER_MISSING: str | None = f"verl's v1 trainer cannot be imported ({_exc}); install fade-rl[verl]"
    logger.warning("fade: trainer_mode=%s is unavailable: %s", TRAINER_NAME, _TRAINER_MISSING)
else:
    _TRAINER_MISSING = None


if _TRAINER_MISSING is None:

    class FadeTrainer(PPOTrainerSync):
        """verl's synchronous PPO trainer, feeding FADE the entropy of each batch.

        Selected by ``trainer.v1.trainer_mode=fade``. It behaves exactly as
        ``trainer_mode=sync`` (it reads ``trainer.v1.sync``) except for three methods of verl
        0.9.1's ``PPOTrainer`` (trainer/ppo/v1/trainer_base.py):

        - ``_compute_advantage`` (line 1743): hands the estimator of ``algorithm.adv_estimator``
          the entropy that ``_compute_old_log_prob`` (line 1634) has just put in
          ``metrics["actor/entropy"]`` (line 1684) for this batch, and the global step; lets verl
          compute the advantages (which calls fade's registered function); then adds ``fade/...``
          metrics. verl's own estimators pass through untouched.
        - ``_save_checkpoint`` (line 948): writes the estimator's state to
          ``global_step_N/fade_estimator.json`` first, so the folder holds it before verl marks
          the checkpoint as the latest.
        - ``_load_checkpoint`` (line 850): restores that state once verl has set the resumed step.
        """

        def _build_replay_buffer(self) -> ReplayBuffer:
            # verl compares trainer_mode with the literal "sync" (lines 153, 731, 902, 912, 1004,
            # 1499: replay buffer, dataloader refill, checkpoints of in-flight prompts); any other
            # name gets the async code paths. PPOTrainer.__init__ calls this right after reading
            # trainer_mode (lines 129-131), before any of those uses.
            self.trainer_mode = "sync"
            self.parameter_sync_step = self.config.trainer.v1.get("sync", {}).get("parameter_sync_step", 1)
            return super()._build_replay_buffer()

        def _fade_estimator(self) -> fade.Estimator | None:
            name = self.config.algorithm.adv_estimator
            if not is_fade_name(name):
                return None
            return estimator_for(name, params_from_config(self.config.algorithm))

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
                signals = {"step": self.global_steps}
                if entropy is not None:
                    signals["entropy"] = float(entropy)
                est.observe(**signals)
            batch = super()._compute_advantage(batch, metrics)
            if est is not None:
                metrics.update(fade_metrics(est.name, params_from_config(self.config.algorithm)))
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

    _existing = TRAINER_REGISTRY.get(TRAINER_NAME)
    if _existing is not None and _existing.__module__ == __name__:
        TRAINER_REGISTRY[TRAINER_NAME] = FadeTrainer  # this module imported again: the newest class wins
    else:
        register_trainer(TRAINER_NAME)(FadeTrainer)
