"""verl on CPU (``fade.integrations.verl_cpu``) and verl's worker setup with TRL 1.x, against verl 0.9.1.

The pieces one by one: the switch, the CPU platform against verl's platform interface, the config
rewrite and its refusals against verl's own Hydra config and validation, the Hugging Face rollout
server against the model it samples from, and, in fresh interpreters, that the switch turns all of
it on in a process that imports verl and that without it verl is untouched. The whole of it runs
in ``tests/test_verl_cpu_e2e.py`` (verl's ``main_ppo``, minutes; ``make test-e2e``).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("verl")


from fade.integrations import verl_cpu  # noqa: E402
from fade.testbed.trainer import base_model_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASE = base_model_dir("arithmetic")

pytestmark = pytest.mark.filterwarnings("ignore:Disabled critic:UserWarning")


def compose(*overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def fresh_python(code: str, **env: str) -> dict:
    """Run ``code`` in a new interpreter with ``env`` on top of this one's; its last stdout line is JSON."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FADE_VERL", "VERL_USE_EXTERNAL"))}
    proc = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the switch and the platform ---------------------------------------------------------------------


@pytest.mark.parametrize(("value", "on"), [("1", True), ("true", True), ("ON", True), ("", False), ("0", False),
                                            ("off", False)])
def test_one_variable_switches_cpu_mode(monkeypatch, value, on):
    monkeypatch.setenv(verl_cpu.ENV_SWITCH, value)
    assert verl_cpu.enabled() is on


def test_a_bad_switch_value_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(verl_cpu.ENV_SWITCH, "cpu")
    with pytest.raises(ValueError, match=r"^FADE_VERL_CPU='cpu': expected 1 \(CPU mode on\) or 0 \(off\)$"):
        verl_cpu.enabled()


def test_cpu_platform_answers_every_device_call_verl_makes():
    """Every ``get_torch_device().X`` verl 0.9.1 calls (grep of its sources) and the platform interface."""
    platform = verl_cpu.CpuPlatform()  # instantiable: every abstract method of PlatformBase is implemented
    assert (platform.device_name, platform.communication_backend_name(), platform.ray_resource_name()) == (
        "cpu", "gloo", "GPU")
    assert platform.current_device() == "cpu" and torch.zeros(1).to(platform.current_device()).device.type == "cpu"
    assert platform.is_available() and not platform.is_ipc_supported() and platform.cudart() is None
    with platform.nvtx_range("x"):
        pass
    device = platform.device_module
    for name in ("empty_cache", "synchronize", "is_available", "current_stream", "set_device", "mem_get_info",
                 "stream", "Stream", "set_rng_state", "set_per_process_memory_fraction", "ipc_collect",
                 "get_rng_state", "device_count", "memory_reserved", "memory_allocated", "max_memory_reserved",
                 "max_memory_allocated", "get_device_name", "Event"):
        assert callable(getattr(device, name)), name
    free, total = device.mem_get_info()
    assert 0 < free <= total and device.memory_allocated() == 0 and device.get_device_name() == "cpu"
    state = device.get_rng_state()
    a = torch.rand(3)
    device.set_rng_state(state)
    assert torch.equal(a, torch.rand(3))


# -- the config ----------------------------------------------------------------------------------------

GPU_RECIPE_SETTINGS = (
    "actor_rollout_ref.model.path=" + str(BASE),
    "actor_rollout_ref.model.use_remove_padding=True",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "trainer.n_gpus_per_node=2",
    "algorithm.adv_estimator=fade",
    "actor_rollout_ref.actor.use_dynamic_bsz=True",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=1024",
)


def test_adapt_config_rewrites_the_gpu_settings_and_verl_validates_the_result():
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    cfg = compose(*GPU_RECIPE_SETTINGS)
    changes = verl_cpu.adapt_config(cfg)
    arr = cfg.actor_rollout_ref
    assert cfg.trainer.device == "cpu" and arr.rollout.name == "hf"
    assert arr.model.override_config.attn_implementation == "sdpa" and arr.model.use_remove_padding is False
    assert arr.actor.strategy == "fsdp2" and arr.actor.fsdp_config.use_torch_compile is False
    ray_init = cfg.ray_kwargs.ray_init
    assert ray_init.num_gpus == 2 and ray_init.num_cpus >= 3 * 2
    assert ray_init.runtime_env.env_vars[verl_cpu.ENV_SWITCH] == "1"
    printed = "\n".join(changes)
    for line in ("actor_rollout_ref.rollout.name: 'vllm' -> 'hf'", "trainer.device: 'cuda' -> 'cpu'",
                 "actor_rollout_ref.actor.strategy: 'fsdp' -> 'fsdp2'",
                 "ray_kwargs.ray_init.num_gpus (fake GPUs, one per worker): None -> 2",
                 "not used by the hf rollout (GPU engine memory and scheduling): "
                 "actor_rollout_ref.rollout.gpu_memory_utilization"):
        assert line in printed
    assert "critic." not in printed  # no critic in this run, nothing rewritten for one
    with pytest.warns(UserWarning, match="Disabled critic"):
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert verl_cpu.adapt_config(cfg) == []  # a second pass changes nothing


def test_adapt_config_keeps_what_already_runs_on_cpu():
    cfg = compose(*GPU_RECIPE_SETTINGS, "+actor_rollout_ref.model.override_config.attn_implementation=eager",
                  "ray_kwargs.ray_init.num_cpus=64", "actor_rollout_ref.rollout.name=hf")
    changes = verl_cpu.adapt_config(cfg)
    assert cfg.actor_rollout_ref.model.override_config.attn_implementation == "eager"
    assert cfg.ray_kwargs.ray_init.num_cpus == 64
    assert not any("rollout.name" in c or "attn_implementation" in c or "num_cpus" in c for c in changes)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("actor_rollout_ref.rollout.tensor_model_parallel_size=2",
         r"actor_rollout_ref.rollout.tensor_model_parallel_size=2 \(the hf rollout runs one process per replica"),
        ("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2",
         r"actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \(sequence parallelism needs flash-attention"),
        ("actor_rollout_ref.actor.strategy=megatron", r"actor_rollout_ref.actor.strategy=megatron \(CPU mode trains "
                                                      r"with FSDP"),
        ("actor_rollout_ref.model.lora_rank=8", r"LoRA \(rank 8\): the hf rollout syncs full weights only"),
        ("reward.reward_model.enable=True", r"reward.reward_model.enable=True \(a generative reward model"),
        ("actor_rollout_ref.rollout.quantization=fp8", r"actor_rollout_ref.rollout.quantization=fp8"),
        ("trainer.v1.trainer_mode=separate_async", r"trainer.v1.trainer_mode=separate_async \(CPU mode runs the "
                                                   r"synchronous trainers: sync, fade\)"),
        ("trainer.use_v1=False", r"trainer.use_v1=False \(CPU mode runs verl's v1 trainer\)"),
    ],
)
def test_what_cpu_mode_cannot_run_is_refused_in_one_line(override, message):
    cfg = compose(*GPU_RECIPE_SETTINGS, override)
    before = copy.deepcopy(cfg)
    with pytest.raises(ValueError, match=rf"^FADE_VERL_CPU=1 cannot run {message}") as caught:
        verl_cpu.adapt_config(cfg)
    assert "\n" not in str(caught.value)
    assert cfg == before  # refused before anything is rewritten


# -- the rollout server ----------------------------------------------------------------------------------


def test_request_seed_depends_on_seed_version_prompt_occurrence_and_replica():
    seed = verl_cpu.request_seed
    base = seed(1, 2, [5, 6], 0)
    assert base == seed(1, 2, (5, 6), 0, 0) and 0 <= base < 2**63
    assert len({base, seed(0, 2, [5, 6], 0), seed(1, 3, [5, 6], 0), seed(1, 2, [6, 5], 0), seed(1, 2, [5, 6], 1),
                seed(1, None, [5, 6], 0), seed(1, 2, [5, 6], 0, 1)}) == 7


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A rollout server over the testbed's arithmetic policy, whose checkpoint carries sampling
    defaults that would change every draw (top_k=1, repetition_penalty=5, temperature=0.1):
    verl's request settings must be the ones used, as in verl's vLLM server."""
    model = tmp_path_factory.mktemp("hf") / "model"
    shutil.copytree(BASE, model)
    generation = json.loads((model / "generation_config.json").read_text())
    generation.update(top_k=1, repetition_penalty=5.0, temperature=0.1, do_sample=True)
    (model / "generation_config.json").write_text(json.dumps(generation))
    cfg = compose(
        "actor_rollout_ref.model.path=" + str(model), "actor_rollout_ref.rollout.name=hf",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa", "actor_rollout_ref.rollout.dtype=float32",
        "actor_rollout_ref.rollout.prompt_length=16", "actor_rollout_ref.rollout.response_length=8",
    )
    return verl_cpu.HFRolloutServer(cfg.actor_rollout_ref.rollout, cfg.actor_rollout_ref.model, replica_rank=0)


def _prompt(text: str) -> list[int]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(BASE, local_files_only=True)
    return [tok.bos_token_id, *tok.encode(text, add_special_tokens=False)]


PROMPT = _prompt("4+17=")


def generate(server, params: dict, prompt=PROMPT):
    return asyncio.run(server.generate(prompt_ids=list(prompt), sampling_params=dict(params), request_id="r"))


def test_server_samples_reproducibly_per_prompt_occurrence_and_weights_version(server):
    asyncio.run(server.update_weights(server.model.state_dict(), global_steps=5))
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": False}
    first = [generate(server, params).token_ids for _ in range(12)]
    assert len({tuple(t) for t in first}) > 1  # the k-th request of a prompt draws its own sample
    asyncio.run(server.update_weights(server.model.state_dict(), global_steps=5))  # same version, counters reset
    again = [generate(server, params) for _ in range(12)]
    assert [o.token_ids for o in again] == first
    assert all(o.extra_fields["global_steps"] == 5 and o.stop_reason == "completed" for o in again)
    asyncio.run(server.update_weights(server.model.state_dict(), global_steps=6))
    assert [generate(server, params).token_ids for _ in range(12)] != first


def greedy(model, prompt: list[int], n: int, stop: list[int]) -> tuple[list[int], list[float]]:
    """The model's own argmax continuation and its log-probabilities, one forward pass a token."""
    ids, tokens, log_probs = list(prompt), [], []
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([ids])).logits[0, -1].float()
            token = int(logits.argmax())
            tokens.append(token)
            log_probs.append(float(torch.log_softmax(logits, -1)[token]))
            ids.append(token)
            if token in stop:
                break
    return tokens, log_probs


def test_server_greedy_decoding_and_log_probs_are_the_models(server):
    model = server.model
    out = generate(server, {"temperature": 0, "logprobs": True})
    expected, log_probs = greedy(model, PROMPT, 8, server.eos_ids)
    assert out.token_ids == expected and out.token_ids[-1] in server.eos_ids and len(expected) < 8
    assert out.log_probs == pytest.approx(log_probs, abs=1e-5)
    # ignore_eos: decoding goes on past the end-of-sequence token, to the response length
    out = generate(server, {"temperature": 0, "ignore_eos": True})
    assert out.token_ids == greedy(model, PROMPT, 8, [])[0]
    # sampled at temperature T: the log-probability of each drawn token under softmax(logits / T)
    out = generate(server, {"temperature": 0.7, "logprobs": True})
    ids = list(PROMPT)
    with torch.no_grad():
        for token, logp in zip(out.token_ids, out.log_probs):
            logits = model(torch.tensor([ids])).logits[0, -1].float() / 0.7
            assert logp == pytest.approx(float(torch.log_softmax(logits, -1)[token]), abs=1e-5)
            ids.append(token)


def test_server_respects_the_token_budget_and_refuses_what_it_cannot_do(server):
    out = generate(server, {"temperature": 1.0, "max_tokens": 1, "ignore_eos": True})
    assert len(out.token_ids) == 1
    with pytest.raises(ValueError, match="leaves no room to generate"):
        generate(server, {"temperature": 1.0}, prompt=[1] * 64)  # the model's 64 positions are all prompt
    with pytest.raises(ValueError, match="takes text prompts only"):
        asyncio.run(server.generate(prompt_ids=PROMPT, sampling_params={}, request_id="r", image_data=[object()]))


def test_server_takes_the_actors_weights_and_refuses_foreign_ones(server):
    original = {k: v.clone() for k, v in server.model.state_dict().items()}
    try:
        changed = {k: v + 0.01 for k, v in original.items() if k != "lm_head.weight"}  # tied: sent once
        asyncio.run(server.update_weights(changed, global_steps=1))
        assert torch.equal(server.model.model.embed_tokens.weight, changed["model.embed_tokens.weight"])
        assert server.model.lm_head.weight is server.model.model.embed_tokens.weight
        with pytest.raises(ValueError, match=r"missing \['model.norm.weight'\]"):
            asyncio.run(server.update_weights({k: v for k, v in original.items() if k != "model.norm.weight"}))
        with pytest.raises(ValueError, match=r"unexpected \['extra.weight'\]"):
            asyncio.run(server.update_weights({**original, "extra.weight": torch.zeros(1)}))
    finally:
        asyncio.run(server.update_weights(original))


# -- the switch in a process that imports verl ----------------------------------------------------------

_PROBE = """
import json
import verl
from verl.plugin.platform import get_platform
from verl.utils import device, distributed
from verl.workers.rollout.base import _ROLLOUT_REGISTRY
from verl.workers.rollout.replica import RolloutReplicaRegistry
import verl.workers.engine.fsdp.transformer_impl as engine
import verl.workers.engine_workers as workers
print(json.dumps({
    "platform": type(get_platform()).__name__,
    "engine_device": engine.device_name,
    "process_group": workers.initialize_global_process_group_ray.__module__,
    "auto_set_device": device.auto_set_device.__module__,
    "rollout": ("hf", "async") in _ROLLOUT_REGISTRY and "hf" in RolloutReplicaRegistry._registry,
}))
"""


CPU_MODE_ON = {"platform": "CpuPlatform", "engine_device": "cpu",
               "process_group": "fade.integrations.verl_cpu.platform",
               "auto_set_device": "fade.integrations.verl_cpu.config", "rollout": True}


def test_the_switch_turns_cpu_mode_on_in_a_verl_process_and_nothing_changes_without_it():
    assert fresh_python(_PROBE, FADE_VERL_CPU="1") == CPU_MODE_ON
    off = fresh_python(_PROBE)
    assert off == {"platform": "PlatformCUDA", "engine_device": "cuda", "process_group": "verl.utils.distributed",
                   "auto_set_device": "verl.utils.device", "rollout": False}


@pytest.mark.parametrize("first", ["fade.integrations.verl_cpu", "fade.integrations.verl_cpu.rollout"])
def test_cpu_mode_is_on_when_verl_cpu_is_imported_before_verl(first):
    """A Ray actor process that unpickles the rollout server imports verl_cpu's rollout module first."""
    probe = f"import {first}\n" + _PROBE
    assert fresh_python(probe, FADE_VERL_CPU="1") == CPU_MODE_ON


# -- verl's model setup with TRL 1.x --------------------------------------------------------------------

_SETUP = f"""
import json
import verl
import trl
from transformers import AutoModelForCausalLM
from verl.models.transformers.monkey_patch import apply_monkey_patch
model = AutoModelForCausalLM.from_pretrained({str(BASE)!r}, attn_implementation="sdpa")
try:
    apply_monkey_patch(model, use_remove_padding=False)
    print(json.dumps({{"ok": True, "trl": trl.__version__}}))
except ImportError as exc:
    print(json.dumps({{"ok": False, "error": str(exc)}}))
"""


def test_verls_model_setup_succeeds_with_trl_1_through_the_plugin():
    """verl's apply_monkey_patch (what every actor worker runs at init_model) in the full environment:
    with fade's plug-in loaded (its entry point) it succeeds; with verl's plug-ins off it fails."""
    import trl

    if tuple(int(x) for x in trl.__version__.split(".")[:2]) < (1, 0):
        pytest.skip(f"TRL {trl.__version__} still has AutoModelForCausalLMWithValueHead")
    assert fresh_python(_SETUP)["ok"] is True
    bare = fresh_python(_SETUP, VERL_USE_EXTERNAL_PLUGINS="none")
    assert bare["ok"] is False and "AutoModelForCausalLMWithValueHead" in bare["error"]


def test_verl_still_patches_the_value_head_of_a_trl_that_has_it(monkeypatch):
    import trl
    from verl.models.transformers.monkey_patch import apply_monkey_patch

    import fade.integrations.verl as fv

    class AutoModelForCausalLMWithValueHead(torch.nn.Module):
        pass

    monkeypatch.setattr(trl, "AutoModelForCausalLMWithValueHead", AutoModelForCausalLMWithValueHead, raising=False)
    fv.trl_has_value_head.cache_clear()
    try:
        from transformers import AutoModelForCausalLM

        apply_monkey_patch(AutoModelForCausalLM.from_pretrained(BASE, attn_implementation="sdpa"),
                           use_remove_padding=False)
        assert AutoModelForCausalLMWithValueHead.state_dict is not torch.nn.Module.state_dict  # verl patched it
    finally:
        fv.trl_has_value_head.cache_clear()
