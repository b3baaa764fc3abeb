"""verl's rollout on CPU, ``actor_rollout_ref.rollout.name=hf``: one Ray actor per replica serving
verl's token-in-token-out protocol (``generate`` returning a ``TokenOutput``) with Hugging Face
``generate``. verl's weight sync hands it the actor's weights after every step, as it does vLLM's.

Sampling is reproducible: each request draws from a seed made of ``rollout.seed``, the weights'
version (verl's global step), the prompt's tokens and how many times that prompt was asked for at
that version (and the replica), so with one rollout replica a run resumed from a checkpoint
samples what the uninterrupted run sampled. It is for small models: the rollout keeps a full copy
of the weights in one process and decodes one request at a time.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

import ray
import torch
from transformers import AutoModelForCausalLM, GenerationConfig
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput

__all__ = ["ROLLOUT_NAME", "HFReplica", "HFRolloutServer", "HFServerAdapter", "request_seed"]

#: ``actor_rollout_ref.rollout.name`` of the Hugging Face ``generate`` rollout.
ROLLOUT_NAME = "hf"


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

