"""verl on CPU: run verl's own ``python -m verl.trainer.main_ppo`` with a small Hugging Face model and
no GPU, to check a recipe (config, reward, estimator, checkpoints) before queueing for GPUs.

Switched on by one environment variable, ``FADE_VERL_CPU=1``, in the shell that launches verl. fade's
verl plug-in imports this module in every process that imports verl (the driver, the TaskRunner, the
workers, the rollout servers: on one node Ray processes inherit the launching shell's environment,
and the driver also forwards the switch to them through Ray's runtime environment). Off, the module
only defines its classes: nothing is registered or rewritten, and a GPU run is untouched. On, it
fills the gaps that keep verl 0.9.1 off CPU (docs/engines/verl.md lists verl's source lines):

- a CPU platform in verl's ``PlatformRegistry``: device ``cpu``, collective backend ``gloo``,
  ``torch.cuda``-style memory calls answered with the host's memory;
- the process group: verl builds ``cpu:gloo,<device>:<backend>``, which is ``cpu:gloo,cpu:gloo`` on
  CPU and refused by torch; the workers get a plain ``gloo`` group;
- the engine: verl registers its FSDP engines for cuda and npu only; ``VERL_ENGINE_DEVICE=cuda``,
  verl's own switch, selects them, and FSDP2 shards on a CPU mesh;
- the config, rewritten once in the driver before verl validates it (:func:`adapt_config`, one
  printed line per change): ``sdpa`` attention instead of flash-attention, no padding removal, FSDP2
  instead of FSDP1, no torch.compile, the rollout backend ``hf``, and fake Ray GPUs, one per worker,
  because verl's resource pools ask Ray for "GPU";
- a rollout backend, ``actor_rollout_ref.rollout.name=hf``: one Ray actor per replica serving verl's
  token-in-token-out protocol (``generate`` returning a ``TokenOutput``) with Hugging Face
  ``generate``, registered in verl's two rollout registries; verl's weight sync hands it the actor's
  weights after every step, as it does vLLM's.

Sampling is reproducible: each request draws from a seed made of ``rollout.seed``, the weights'
version (verl's global step), the prompt's tokens and how many times that prompt was asked for at
that version (and the replica), so with one rollout replica a run resumed from a checkpoint
samples what the uninterrupted run sampled.

What it does not do: tensor, pipeline, data or expert parallel rollouts, sequence parallelism,
Megatron, LoRA weight sync, multi-modal prompts, quantised or speculative rollouts, generative
reward models, verl's asynchronous trainer modes and its legacy trainer; asking for any of them stops the run with one line naming the setting
(:func:`check_config`). It is for small models: the rollout keeps a full copy of the weights in one
process and decodes one request at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

import ray
import torch
from omegaconf import OmegaConf, open_dict
from transformers import AutoModelForCausalLM, GenerationConfig
from verl.plugin.platform import PlatformBase, PlatformRegistry, set_platform
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

__all__ = [
    "ENV_SWITCH",
    "ROLLOUT_NAME",
    "CpuPlatform",
    "HFReplica",
    "HFRolloutServer",
    "HFServerAdapter",
    "adapt_config",
    "check_config",
    "enable",
    "enabled",
    "request_seed",
]

#: The environment variable that switches CPU mode on (``1``) in every verl process.
ENV_SWITCH = "FADE_VERL_CPU"

#: ``actor_rollout_ref.rollout.name`` of the Hugging Face ``generate`` rollout.
ROLLOUT_NAME = "hf"

_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")

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


def enabled() -> bool:
    """Whether ``FADE_VERL_CPU`` switches CPU mode on in this process."""
    value = os.environ.get(ENV_SWITCH, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ValueError(f"{ENV_SWITCH}={os.environ[ENV_SWITCH]!r}: expected 1 (CPU mode on) or 0 (off)")


# -- the platform ----------------------------------------------------------------------------------


def _host_memory() -> tuple[int, int]:
    """(available, total) bytes of host memory, as ``torch.cuda.mem_get_info`` reports a GPU's."""
    page = os.sysconf("SC_PAGE_SIZE")
    return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


def _zero(*args: Any, **kwargs: Any) -> int:
    return 0


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _device_module() -> types.ModuleType:
    """A ``torch.cuda``-shaped namespace for the CPU: verl calls these on ``get_torch_device()``."""
    module = types.ModuleType("fade_verl_cpu_device")
    cpu = torch.cpu
    for name in ("synchronize", "current_stream", "stream", "Stream", "Event", "is_available", "device_count",
                 "set_device", "current_device"):
        setattr(module, name, getattr(cpu, name))
    for name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
        setattr(module, name, _zero)
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated", "empty_cache", "ipc_collect",
                 "set_per_process_memory_fraction"):
        setattr(module, name, _nothing)
    module.mem_get_info = lambda *args, **kwargs: _host_memory()
    module.get_device_name = lambda *args, **kwargs: "cpu"
    module.manual_seed = module.manual_seed_all = torch.manual_seed
    module.get_rng_state = lambda *args, **kwargs: torch.get_rng_state()
    module.set_rng_state = lambda state, *args, **kwargs: torch.set_rng_state(state)
    return module


class CpuPlatform(PlatformBase):
    """verl's platform interface for a machine without accelerators."""

    _module = _device_module()

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return self._module

    def is_available(self) -> bool:
        return True

    def current_device(self) -> str:
        # verl moves tensors with ``.to(get_device_id())``: the device, not an index, on CPU.
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: Any) -> None:
        return None

    def synchronize(self, device_index: Any = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[None, None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        # verl's resource pools and their check ask Ray for "GPU"; the driver declares fake ones.
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> None:
        return None


# -- the process group -----------------------------------------------------------------------------


def _gloo_process_group(original):
    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        # verl's default backend string names the CPU twice ("cpu:gloo,cpu:gloo"), which torch refuses.
        return original(timeout_second=timeout_second, backend=backend or "gloo")

    initialize_global_process_group_ray.fade_wraps = original
    return initialize_global_process_group_ray


# -- the config ------------------------------------------------------------------------------------


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
    lora = _select(config, "actor_rollout_ref.model.lora.rank", 0) or _select(config, "actor_rollout_ref.model.lora_rank", 0)
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
    # Each worker's placement bundle asks for 3 CPUs beside its GPU (single_controller/ray/base.py:146),
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


def _auto_set_device(original):
    def auto_set_device(config) -> None:
        original(config)
        if config is None or not hasattr(config, "actor_rollout_ref"):
            return
        for line in adapt_config(config):
            print(f"fade ({ENV_SWITCH}=1): {line}", flush=True)

    auto_set_device.fade_wraps = original
    return auto_set_device


# -- the rollout -----------------------------------------------------------------------------------


def request_seed(seed: int, version: Any, prompt_ids: Iterable[int], occurrence: int, replica: int = 0) -> int:
    """The sampling seed of one request: ``rollout.seed``, the weights' version (verl's global
    step), the prompt's tokens, the how-manieth request for that prompt at that version it is on
    this replica, and the replica.

    With one replica the same requests draw the same samples in any order of arrival within a
    prompt's group (its rollouts are exchangeable), in any process, so a resumed run repeats the
    uninterrupted one. With several, the rollouts of a prompt stay distinct, but which replica
    serves which request is verl's load balancing, so runs differ.
    """
    text = f"{int(seed)}|{version}|{','.join(str(int(t)) for t in prompt_ids)}|{int(occurrence)}|{int(replica)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") & ((1 << 63) - 1)


class HFRolloutServer:
    """One rollout replica's server: verl's token-in-token-out ``generate`` on Hugging Face ``generate``.

    Runs as a Ray actor (named ``fade_hf_server_<replica>``). It loads the model from
    ``actor_rollout_ref.model`` and then takes the actor's weights from verl's weight sync
    (:meth:`update_weights`) before each step's rollouts. The lifecycle calls verl's replicas make
    (sleep, wake_up, cache and profiling calls) have nothing to free or resume on CPU.
    """

    def __init__(self, config: Any, model_config: Any, replica_rank: int) -> None:
        from verl.utils.config import omega_conf_to_dataclass
        from verl.utils.torch_dtypes import PrecisionType

        self.config = omega_conf_to_dataclass(config)
        self.model_config = omega_conf_to_dataclass(model_config)
        self.replica_rank = replica_rank
        hf_config = self.model_config.hf_config
        dtype = PrecisionType.to_dtype(self.config.dtype)
        self.model = AutoModelForCausalLM.from_pretrained(
            self.model_config.local_path, config=hf_config, dtype=dtype,
            trust_remote_code=self.model_config.trust_remote_code,
        ).eval()
        generation = self.model_config.generation_config
        eos = getattr(generation, "eos_token_id", None) if generation is not None else None
        if eos is None:
            eos = hf_config.eos_token_id
        self.eos_ids = sorted({int(e) for e in (eos if isinstance(eos, list | tuple) else [eos]) if e is not None})
        pad = getattr(hf_config, "pad_token_id", None)
        self.pad_id = int(pad) if pad is not None else (self.eos_ids[0] if self.eos_ids else 0)
        self.max_positions = getattr(hf_config, "max_position_embeddings", None)
        # Every request brings verl's sampling settings; the checkpoint's own defaults (a Qwen's
        # top_k=20, repetition_penalty=1.05, ...) must not slip in under them, as vLLM overrides them.
        self.model.generation_config = GenerationConfig(pad_token_id=self.pad_id, bos_token_id=hf_config.bos_token_id)
        self.global_steps: Any = None
        self._asked: dict[tuple[int, ...], int] = {}
        self._lock = asyncio.Lock()

    def address(self) -> str:
        return f"fade-hf-{self.replica_rank}"

    async def update_weights(self, weights: Mapping[str, torch.Tensor], global_steps: Any = None) -> None:
        """Load the actor's full weights (verl's names, which are Hugging Face's)."""
        async with self._lock:
            with torch.no_grad():
                result = self.model.load_state_dict(dict(weights), strict=False)
            # a tied output head is one tensor under two names; the actor may send either
            missing = [k for k in result.missing_keys if not self._tied(k, weights)]
            if missing or result.unexpected_keys:
                raise ValueError(f"the actor's weights do not fit the {ROLLOUT_NAME} rollout's model: missing "
                                 f"{missing[:5]}, unexpected {list(result.unexpected_keys)[:5]}")
            self.global_steps = global_steps
            self._asked.clear()

    def _tied(self, name: str, weights: Mapping[str, torch.Tensor]) -> bool:
        state = self.model.state_dict(keep_vars=True)
        return any(state[name] is state[other] for other in weights if other in state)

    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str,
                       image_data: Any = None, video_data: Any = None, audio_data: Any = None,
                       mm_processor_kwargs: Any = None, priority: int = 0, **kwargs: Any) -> Any:
        if image_data is not None or video_data is not None or audio_data is not None:
            raise ValueError(f"the {ROLLOUT_NAME} rollout takes text prompts only, got multi-modal data")
        params = dict(sampling_params)
        prompt = [int(t) for t in prompt_ids]
        max_tokens = params.pop("max_tokens", params.pop("max_new_tokens", None))
        budget = self.config.prompt_length + self.config.response_length - len(prompt)
        if max_tokens is None:
            max_tokens = min(self.config.response_length, budget)
        if self.max_positions:
            max_tokens = min(max_tokens, self.max_positions - len(prompt))
        if max_tokens < 1:
            raise ValueError(f"prompt of {len(prompt)} tokens leaves no room to generate (prompt_length "
                             f"{self.config.prompt_length}, response_length {self.config.response_length}, "
                             f"model positions {self.max_positions})")
        async with self._lock:
            key = tuple(prompt)
            occurrence = self._asked.get(key, 0)
            self._asked[key] = occurrence + 1
            seed = request_seed(self.config.seed, self.global_steps, prompt, occurrence, self.replica_rank)
            tokens, log_probs = self._sample(prompt, params, int(max_tokens), seed)
        return TokenOutput(
            token_ids=tokens,
            log_probs=log_probs,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )

    def _sample(self, prompt: list[int], params: dict[str, Any], max_tokens: int, seed: int):
        temperature = float(params.get("temperature", 1.0))
        greedy = temperature <= 0 or not params.get("do_sample", True)
        eos = [] if params.get("ignore_eos", self.config.ignore_eos) else self.eos_ids
        want_log_probs = bool(params.get("logprobs"))
        settings: dict[str, Any] = {
            "do_sample": not greedy, "max_new_tokens": max_tokens,
            "repetition_penalty": float(params.get("repetition_penalty", 1.0)),
            "output_scores": want_log_probs, "return_dict_in_generate": True,
        }
        if eos:
            settings["eos_token_id"] = eos
        if not greedy:
            top_k = int(params.get("top_k", -1) or -1)
            # verl's top_k=-1 (vLLM's "off") is Hugging Face's 0
            settings.update(temperature=temperature, top_p=float(params.get("top_p", 1.0)), top_k=max(top_k, 0))
        inputs = torch.tensor([prompt], dtype=torch.long)
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            out = self.model.generate(inputs, attention_mask=torch.ones_like(inputs), **settings)
        new = out.sequences[0, len(prompt):].tolist()
        length = len(new)
        if eos:
            for i, t in enumerate(new):
                if t in eos:
                    length = i + 1
                    break
        new = new[:length]
        log_probs = None
        if want_log_probs:
            # the processed distribution each token was drawn from (verl's logprobs_mode default)
            log_probs = [float(torch.log_softmax(out.scores[i][0].float(), dim=-1)[t]) for i, t in enumerate(new)]
        return new, log_probs

    async def wake_up(self, *args: Any, **kwargs: Any) -> None:
        return None

    sleep = clear_kv_cache = release_kv_cache = resume_kv_cache = wake_up
    resume_generation = start_profile = stop_profile = wake_up

    async def abort_all_requests(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"aborted_count": 0, "request_ids": []}


def _server_name(replica_rank: int) -> str:
    return f"fade_hf_server_{replica_rank}"


class HFReplica(RolloutReplica):
    """A rollout replica served by one :class:`HFRolloutServer` actor."""

    async def launch_servers(self) -> None:
        server = ray.remote(HFRolloutServer).options(
            name=_server_name(self.replica_rank), max_concurrency=self.max_concurrency,
        ).remote(self.config, self.model_config, self.replica_rank)
        self.servers = [server]
        self._server_handle = server
        self._server_address = await server.address.remote()

    def rollout_worker_use_gpu(self) -> bool:
        return False


class HFServerAdapter(BaseRollout):
    """The rollout side of an actor worker: hands the actor's weights to its replica's server."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, replica_rank: int = -1) -> None:
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", 0))
        self.replica_rank = rank if replica_rank == -1 else replica_rank
        self.server = None

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(self, weights: Any, wire_format: str = "named_tensors", global_steps: Any = None,
                             peft_config: Any = None, **kwargs: Any) -> None:
        if wire_format != "named_tensors" or peft_config is not None:
            raise ValueError(f"the {ROLLOUT_NAME} rollout syncs full named tensors only, got "
                             f"wire_format={wire_format!r}, peft_config={peft_config!r}")
        # Every rank consumes the generator: gathering a sharded tensor is a collective.
        state = {}
        for name, tensor in weights:
            state[name] = tensor.detach().to("cpu", copy=True)
        if self.server is None:
            self.server = ray.get_actor(_server_name(self.replica_rank))
        await self.server.update_weights.remote(state, global_steps)


# -- switching it on -------------------------------------------------------------------------------

_ENABLED: list[bool] = []

#: verl modules that read the platform into a module constant on import.
_PLATFORM_CONSTANTS = ("verl.workers.engine.fsdp.transformer_impl", "verl.experimental.separation.engine_workers")


def enable() -> None:
    """Register the CPU platform, the gloo process group, the FSDP engine on CPU, the ``hf`` rollout
    and the driver's config rewrite in this process. Idempotent."""
    if _ENABLED:
        return
    from verl.utils import device, distributed
    from verl.workers.rollout import base

    PlatformRegistry.register(platform="cpu")(CpuPlatform)
    set_platform(CpuPlatform())
    os.environ.setdefault("VERL_ENGINE_DEVICE", "cuda")
    distributed.initialize_global_process_group_ray = _gloo_process_group(
        getattr(distributed.initialize_global_process_group_ray, "fade_wraps",
                distributed.initialize_global_process_group_ray))
    device.auto_set_device = _auto_set_device(getattr(device.auto_set_device, "fade_wraps", device.auto_set_device))
    base._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = f"{__name__}.HFServerAdapter"
    RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: HFReplica)
    for name in _PLATFORM_CONSTANTS:
        if name in sys.modules:  # imported before this module (see enable_from_environment)
            sys.modules[name].device_name = "cpu"
    _ENABLED.append(True)


def enable_from_environment() -> bool:
    """:func:`enable` if ``FADE_VERL_CPU`` says so; whether CPU mode is on."""
    if enabled():
        enable()
    return bool(_ENABLED)


# fade's verl plug-in calls this too; when this module is imported first, the plug-in runs (from
# the verl import above) before this point and leaves it to here.
enable_from_environment()


