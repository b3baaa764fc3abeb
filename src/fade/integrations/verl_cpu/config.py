"""verl's composed config rewritten for CPU, and what CPU mode refuses.

:func:`adapt_config` runs once in the driver, inside verl's ``auto_set_device`` (the driver's first
look at the config, before verl validates it), so every Ray process gets the CPU settings from it:
``sdpa`` attention instead of flash-attention, no padding removal, FSDP2 instead of FSDP1, no
torch.compile, the rollout backend ``hf``, and fake Ray GPUs, one per worker, because verl's
resource pools ask Ray for "GPU". :func:`check_config` refuses, in one line naming the setting,
what CPU mode cannot run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from omegaconf import OmegaConf, open_dict
from verl.trainer.ppo.utils import need_critic, need_reference_policy

from fade.integrations.verl_cpu.platform import ENV_SWITCH
from fade.integrations.verl_cpu.rollout import ROLLOUT_NAME

__all__ = ["ASYNC_MODES", "ENGINE_ONLY", "GPU_ROLLOUTS", "adapt_config", "check_config", "cpu_auto_set_device"]

#: verl's GPU rollout backends, which CPU mode replaces with ``hf``.
GPU_ROLLOUTS = ("vllm", "sglang", "trtllm")

#: verl's asynchronous trainer modes: partial rollouts aborted mid-generation, standalone rollout
#: servers with their own weight transfer; the hf rollout serves the synchronous ones.
ASYNC_MODES = ("colocate_async", "separate_async")

#: Rollout settings that tune a GPU engine's memory and scheduling; they do not change what is
#: sampled, so the ``hf`` rollout runs without them (one printed line names them).
ENGINE_ONLY = (
    "gpu_memory_utilization", "enforce_eager", "cudagraph_capture_sizes", "free_cache_engine",
    "max_num_batched_tokens", "max_num_seqs", "enable_chunked_prefill", "enable_prefix_caching",
    "scheduling_policy", "load_format", "layered_summon", "multi_stage_wake_up", "engine_kwargs",
)


#: Ray CPUs verl's placement groups reserve per worker, and a budget for the single actors.
_CPUS_PER_WORKER, _CPUS_FOR_ACTORS = 3, 16


def _select(config: Any, key: str, default: Any = None) -> Any:
    value = OmegaConf.select(config, key, default=default)
    return default if value is None else value


def check_config(config: Any) -> None:
    """Refuse, in one line naming the setting, what CPU mode cannot run."""
    rollout = config.actor_rollout_ref.rollout
    refusals = []
    for key in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size",
                "expert_parallel_size"):
        if int(_select(rollout, key, 1)) != 1:
            refusals.append(f"actor_rollout_ref.rollout.{key}={rollout[key]} (the hf rollout runs one process per "
                            "replica: set it to 1)")
    for role in ("actor", "ref"):
        sp = _select(config, f"actor_rollout_ref.{role}.ulysses_sequence_parallel_size", 1)
        if int(sp) != 1:
            refusals.append(f"actor_rollout_ref.{role}.ulysses_sequence_parallel_size={sp} (sequence parallelism "
                            "needs flash-attention: set it to 1)")
    strategy = _select(config, "actor_rollout_ref.actor.strategy", "fsdp")
    if strategy not in ("fsdp", "fsdp2"):
        refusals.append(f"actor_rollout_ref.actor.strategy={strategy} (CPU mode trains with FSDP: fsdp or fsdp2)")
    name = _select(rollout, "name")
    if name not in (ROLLOUT_NAME, *GPU_ROLLOUTS):
        refusals.append(f"actor_rollout_ref.rollout.name={name} (CPU mode rolls out with {ROLLOUT_NAME})")
    mode = _select(rollout, "mode", "async")
    if mode != "async":
        refusals.append(f"actor_rollout_ref.rollout.mode={mode} (verl's trainers use the async server protocol)")
    if _select(rollout, "quantization") is not None:
        refusals.append(f"actor_rollout_ref.rollout.quantization={rollout.quantization} (the hf rollout samples "
                        "from the actor's own weights)")
    for key in ("mtp.enable", "disaggregation.enabled", "enable_rollout_routing_replay"):
        if _select(rollout, key, False):
            refusals.append(f"actor_rollout_ref.rollout.{key}=True (a vLLM/SGLang feature the hf rollout lacks)")
    lora = _select(config, "actor_rollout_ref.model.lora.rank", 0) or _select(
        config, "actor_rollout_ref.model.lora_rank", 0
    )
    if int(lora) > 0:
        refusals.append(f"LoRA (rank {lora}): the hf rollout syncs full weights only")
    if not _select(config, "trainer.use_v1", True):
        refusals.append("trainer.use_v1=False (CPU mode runs verl's v1 trainer)")
    trainer_mode = _select(config, "trainer.v1.trainer_mode", "sync")
    if trainer_mode in ASYNC_MODES:
        refusals.append(f"trainer.v1.trainer_mode={trainer_mode} (CPU mode runs the synchronous trainers: sync, "
                        "fade)")
    if _select(config, "reward.reward_model.enable", False):
        refusals.append("reward.reward_model.enable=True (a generative reward model needs a GPU rollout server)")
    if refusals:
        raise ValueError(f"{ENV_SWITCH}=1 cannot run " + "; ".join(refusals))


def adapt_config(config: Any) -> list[str]:
    """Rewrite verl's composed config for CPU (in place) and return one line per change.

    Called in the driver before verl validates the config, so every Ray process gets the CPU
    settings from it. Refuses what CPU mode cannot run (:func:`check_config`).
    """
    check_config(config)
    changes: list[str] = []

    def put(node: Any, key: str, value: Any, path: str) -> None:
        old = node.get(key) if key in node else None
        if old != value:
            with open_dict(node):
                node[key] = value
            changes.append(f"{path}: {old!r} -> {value!r}")

    put(config.trainer, "device", "cpu", "trainer.device")
    arr = config.actor_rollout_ref
    switched = arr.rollout.name != ROLLOUT_NAME
    if switched:
        put(arr.rollout, "name", ROLLOUT_NAME, "actor_rollout_ref.rollout.name")
    critic, ref = need_critic(config), need_reference_policy(config)
    models = [(arr.model, "actor_rollout_ref.model")] + ([(config.critic.model, "critic.model")] if critic else [])
    for model, path in models:
        if "override_config" not in model or model.override_config is None:
            with open_dict(model):
                model.override_config = {}
        attn = model.override_config.get("attn_implementation")
        if attn is None or str(attn).startswith("flash"):
            put(model.override_config, "attn_implementation", "sdpa", f"{path}.override_config.attn_implementation")
        if model.get("use_remove_padding", False):
            put(model, "use_remove_padding", False, f"{path}.use_remove_padding")
    # FSDP1 insists on GPU-resident parameters when it syncs module states; FSDP2 shards on a CPU mesh.
    for path, used in (("actor_rollout_ref.actor", True), ("actor_rollout_ref.ref", ref), ("critic", critic)):
        node = _select(config, path) if used else None
        if node is not None and "strategy" in node and node.strategy == "fsdp":
            put(node, "strategy", "fsdp2", f"{path}.strategy")
    for role in ("actor", "ref") if ref else ("actor",):
        fsdp = _select(arr, f"{role}.fsdp_config")
        if fsdp is not None and fsdp.get("use_torch_compile", False):
            put(fsdp, "use_torch_compile", False, f"actor_rollout_ref.{role}.fsdp_config.use_torch_compile")
    if _select(arr, "actor.use_fused_kernels", False) or _select(arr, "model.use_fused_kernels", False):
        put(arr.model, "use_fused_kernels", False, "actor_rollout_ref.model.use_fused_kernels")

    ray_init = config.ray_kwargs.ray_init
    gpus = int(config.trainer.n_gpus_per_node) * int(config.trainer.nnodes)
    if int(_select(ray_init, "num_gpus", 0)) < gpus:
        put(ray_init, "num_gpus", gpus, "ray_kwargs.ray_init.num_gpus (fake GPUs, one per worker)")
    # Each worker's placement bundle asks for 3 CPUs beside its GPU (verl's RayResourcePool),
    # and the TaskRunner, TransferQueue, agent-loop, reward and rollout actors one each: Ray's CPU
    # count is a scheduling budget, not the cores the processes share.
    cpus = _CPUS_PER_WORKER * gpus + _CPUS_FOR_ACTORS
    if _select(ray_init, "num_cpus") is None or int(ray_init.num_cpus) < cpus:
        put(ray_init, "num_cpus", max(cpus, os.cpu_count() or 1), "ray_kwargs.ray_init.num_cpus (Ray's CPU budget)")
    if "runtime_env" not in ray_init or ray_init.runtime_env is None:
        with open_dict(ray_init):
            ray_init.runtime_env = {}
    runtime_env = ray_init.runtime_env
    if "env_vars" not in runtime_env or runtime_env.env_vars is None:
        with open_dict(runtime_env):
            runtime_env.env_vars = {}
    # Ray workers on one node inherit the driver's environment; on a cluster they get it from here.
    for key, value in ((ENV_SWITCH, "1"), ("VERL_ENGINE_DEVICE", "cuda")):
        if runtime_env.env_vars.get(key) != value:
            with open_dict(runtime_env.env_vars):
                runtime_env.env_vars[key] = value

    if switched:
        changes.append(f"not used by the {ROLLOUT_NAME} rollout (GPU engine memory and scheduling): "
                       + ", ".join(f"actor_rollout_ref.rollout.{k}" for k in ENGINE_ONLY if k in arr.rollout))
    return changes


def cpu_auto_set_device(verl_fn: Callable[..., Any]) -> Callable[..., Any]:
    """verl's ``auto_set_device`` followed by :func:`adapt_config`, one printed line per change."""

    def auto_set_device(config) -> None:
        verl_fn(config)
        if config is None or not hasattr(config, "actor_rollout_ref"):
            return
        for line in adapt_config(config):
            print(f"fade ({ENV_SWITCH}=1): {line}", flush=True)

    return auto_set_device
