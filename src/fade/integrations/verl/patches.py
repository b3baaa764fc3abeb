"""Everything fade changes inside verl, in one table, and the one helper that changes it.

verl offers hooks for an advantage estimator (``register_adv_est``), a trainer
(``register_trainer``), a platform and a rollout replica; fade uses them. What it cannot reach
through a hook it changes here: :data:`PATCHES` lists each module global fade rebinds, overwrites
or writes an entry of, with what fade puts there and why, and :func:`patch` is the only code that
makes such a change. :data:`OVERRIDES` lists the verl methods ``FadeTrainer`` overrides and the
instance attributes it relies on. Every entry is checked against the installed verl before it is
used (:func:`fade.integrations.ledger.resolve`): a verl that moved or changed one of them fails
with one line naming verl's version, the module and the attribute, and
``tests/test_engine_patches.py`` checks the whole ledger against the installed verl.

To add a patch: its :class:`~fade.integrations.ledger.Touch` in :data:`PATCHES` (and the
parameters of verl's function fade relies on), and a :func:`patch` call where fade applies it
(docs/architecture.md, "How to add an engine patch").
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Hashable
from typing import Any

from verl.plugin.platform import PlatformRegistry, set_platform
from verl.workers.rollout.replica import RolloutReplicaRegistry

from fade.integrations.ledger import Touch, resolve
from fade.integrations.verl_cpu.config import cpu_auto_set_device
from fade.integrations.verl_cpu.platform import CpuPlatform, gloo_process_group
from fade.integrations.verl_cpu.rollout import ROLLOUT_NAME, HFReplica, HFServerAdapter

__all__ = [
    "OVERRIDES", "PATCHES", "VERL_CHECKED", "cpu_mode", "guard_value_head", "patch", "trl_has_value_head",
    "verl_original",
]

#: The verl release every entry of the ledger was checked against.
VERL_CHECKED = "0.9.1"

_TRAINER_BASE = "verl.trainer.ppo.v1.trainer_base"


def _verl(module: str, attribute: str, kind: str, replacement: str, why: str,
          params: tuple[str, ...] | None = None) -> Touch:
    return Touch("verl", module, attribute, kind, replacement, why, params, VERL_CHECKED)


#: Every module global of verl that fade changes.
PATCHES: tuple[Touch, ...] = (
    _verl("verl.models.transformers.monkey_patch", "is_trl_available", "wrap",
          "verl's check, and TRL has AutoModelForCausalLMWithValueHead (trl_has_value_head)",
          "verl's model setup (apply_monkey_patch) imports TRL's value-head class whenever TRL is importable "
          "and fails with TRL 1.x, which removed it", ()),
    _verl(_TRAINER_BASE, "compute_advantage_for_multi_trajectories", "wrap",
          "verl's function, with its final-session rule applied to fade's counterparts of grpo "
          "(trainer.session_advantages)",
          "verl's v1 trainers score a multi-output agent-loop session by its final output for the name "
          "'grpo' only, so fade_grpo needs the same rule to be verl's grpo",
          ("data", "batch_keys", "adv_estimator", "gamma", "lam", "num_repeat", "norm_adv_by_std_in_grpo",
           "config")),
    _verl("verl.trainer.ppo.core_algos", "ADV_ESTIMATOR_REGISTRY", "entry",
          "fade's estimator function under its verl name",
          "register_adv_est refuses a second function under a name, and the plug-in imported again must "
          "replace its own entries"),
    _verl(_TRAINER_BASE, "TRAINER_REGISTRY", "entry",
          "FadeTrainer under trainer_mode 'fade'",
          "register_trainer refuses a second class under a name, and the trainer module imported again must "
          "replace its own entry"),
    _verl("verl.utils.distributed", "initialize_global_process_group_ray", "wrap",
          "verl's function with backend 'gloo' by default (verl_cpu.platform.gloo_process_group)",
          "CPU mode: verl builds the backend 'cpu:gloo,<device>:<backend>', which is 'cpu:gloo,cpu:gloo' on "
          "CPU and refused by torch", ("timeout_second", "backend")),
    _verl("verl.utils.device", "auto_set_device", "wrap",
          "verl's function, then the config rewritten for CPU (verl_cpu.config.cpu_auto_set_device)",
          "CPU mode: the driver's first look at the config, before verl validates it", ("config",)),
    _verl("verl.workers.engine.fsdp.transformer_impl", "device_name", "value", "'cpu'",
          "CPU mode: the module reads the platform's device into this constant on import, so a process that "
          "imported it before CPU mode was on holds 'cuda'"),
    _verl("verl.experimental.separation.engine_workers", "device_name", "value", "'cpu'",
          "CPU mode: as transformer_impl, the platform's device read on import"),
    _verl("verl.workers.rollout.base", "_ROLLOUT_REGISTRY", "entry",
          "('hf', 'async') -> the dotted path of verl_cpu.rollout.HFServerAdapter",
          "CPU mode: verl's rollout registry is a private dict with no register function, and knows only the "
          "CUDA-bound vllm, sglang and trtllm rollouts"),
)

_TRAINER = "verl.trainer.ppo.v1"

#: The methods of verl's synchronous trainer (``PPOTrainerSync``) that ``FadeTrainer`` overrides,
#: and the instance attributes of verl's ``PPOTrainer`` it sets or reads.
OVERRIDES: tuple[Touch, ...] = (
    _verl(_TRAINER, "PPOTrainerSync.__init__", "override", "check_run(config) first, then verl's",
          "settings the estimator cannot honour stop the run before any worker starts", ("config",)),
    _verl(_TRAINER, "PPOTrainerSync._build_replay_buffer", "override",
          "trainer_mode and parameter_sync_step set as trainer_mode='sync' sets them, then verl's",
          "verl compares trainer_mode with the literal 'sync' to choose its synchronous code paths, and "
          "PPOTrainer.__init__ calls this right after reading trainer_mode", ()),
    _verl(_TRAINER, "PPOTrainerSync._compute_advantage", "override",
          "the estimator observes the batch's entropy and the step, then verl's, then fade/... metrics",
          "FADE needs the entropy verl computed in its old-log-prob pass, which verl's estimator call lacks",
          ("batch", "metrics")),
    _verl(_TRAINER, "PPOTrainerSync._save_checkpoint", "override", "the estimator's state first, then verl's",
          "the checkpoint folder holds FADE's state before verl marks it as the latest", ()),
    _verl(_TRAINER, "PPOTrainerSync._load_checkpoint", "override", "verl's, then the estimator's state",
          "FADE's state is restored once verl has set the resumed step", ()),
    _verl(_TRAINER_BASE, "PPOTrainer.trainer_mode", "attribute", "'sync'",
          "verl's synchronous code paths test trainer_mode == 'sync'"),
    _verl(_TRAINER_BASE, "PPOTrainer.parameter_sync_step", "attribute", "trainer.v1.sync.parameter_sync_step",
          "PPOTrainer.__init__ reads it from the section named by trainer_mode, which 'fade' does not name"),
    _verl(_TRAINER_BASE, "PPOTrainer.global_steps", "attribute", "read",
          "FADE observes the step (updates before this batch) and saves its state per checkpoint step"),
)

# verl's own function under each of fade's wrappers, so that a second patch wraps verl's, not fade's.
_ORIGINALS: dict[tuple[str, str], Callable[..., Any]] = {}


def _entry(module: str, name: str) -> Touch:
    for touch in PATCHES:
        if (touch.module, touch.attribute) == (module, name):
            return touch
    raise ValueError(f"{module}.{name} is not in fade's ledger of verl patches (fade.integrations.verl.patches."
                     "PATCHES); add its entry first")


def verl_original(module: str, name: str) -> Any:
    """verl's own object at ``module.name``: the function fade wrapped, or what is there now."""
    found = _ORIGINALS.get((module, name))
    return found if found is not None else resolve(_entry(module, name))


def patch(module: str, name: str, replacement: Any, *, key: Hashable | None = None) -> None:
    """Make the change the ledger lists for ``module.name``, after checking verl still has it.

    ``wrap``: ``replacement`` is called with verl's own function and its result is bound in its
    place (again: verl's function is wrapped anew, never fade's). ``value``: ``replacement`` is
    bound. ``entry``: ``replacement`` is written under ``key`` of the registry dict. A target not in
    the ledger raises ValueError; one verl no longer has raises ``EngineMismatch`` in one line.
    """
    touch = _entry(module, name)
    if touch.kind == "wrap":
        verl_fn = verl_original(module, name)
        _ORIGINALS[(module, name)] = verl_fn
        setattr(importlib.import_module(module), name, replacement(verl_fn))
    elif touch.kind == "entry":
        if key is None:
            raise ValueError(f"{touch.where} is a registry: patch() needs the key to write")
        resolve(touch)[key] = replacement
    else:
        resolve(touch)
        setattr(importlib.import_module(module), name, replacement)


# -- verl's worker setup with TRL 1.x ---------------------------------------------------------------


@functools.cache
def trl_has_value_head() -> bool:
    """Whether the installed TRL has ``AutoModelForCausalLMWithValueHead`` (TRL 1.x removed it)."""
    for module in ("trl.experimental.ppo", "trl"):
        try:
            if hasattr(importlib.import_module(module), "AutoModelForCausalLMWithValueHead"):
                return True
        except ImportError:
            continue
    return False


def _value_head_checked(verl_fn: Callable[[], bool]) -> Callable[[], bool]:
    def is_trl_available() -> bool:
        return bool(verl_fn()) and trl_has_value_head()

    return is_trl_available


def guard_value_head() -> None:
    """verl's model setup patches TRL's value-head class whenever TRL is importable; its check is
    made to ask what it means, TRL *with* that class. Where TRL has it, verl patches it as before."""
    patch("verl.models.transformers.monkey_patch", "is_trl_available", _value_head_checked)


# -- CPU mode ----------------------------------------------------------------------------------------

_in_cpu_mode = False  # cpu_mode() has run in this process


def cpu_mode() -> None:
    """Switch this process's verl to CPU (``FADE_VERL_CPU=1``, :mod:`fade.integrations.verl_cpu`):
    the CPU platform, the gloo process group, the FSDP engine on CPU, the ``hf`` rollout and the
    driver's config rewrite. Idempotent."""
    global _in_cpu_mode
    if _in_cpu_mode:
        return
    PlatformRegistry.register(platform="cpu")(CpuPlatform)
    set_platform(CpuPlatform())
    os.environ.setdefault("VERL_ENGINE_DEVICE", "cuda")  # verl's switch for its FSDP engines
    patch("verl.utils.distributed", "initialize_global_process_group_ray", gloo_process_group)
    patch("verl.utils.device", "auto_set_device", cpu_auto_set_device)
    patch("verl.workers.rollout.base", "_ROLLOUT_REGISTRY", f"{HFServerAdapter.__module__}.HFServerAdapter",
          key=(ROLLOUT_NAME, "async"))
    RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: HFReplica)
    for touch in PATCHES:
        if touch.attribute == "device_name" and touch.module in sys.modules:  # imported before CPU mode
            patch(touch.module, "device_name", "cpu")
    _in_cpu_mode = True
