"""verl on CPU: run verl's own ``python -m verl.trainer.main_ppo`` with a small Hugging Face model and
no GPU, to check a recipe (config, reward, estimator, checkpoints) before queueing for GPUs.

Switched on by one environment variable, ``FADE_VERL_CPU=1``, in the shell that launches verl. fade's
verl plug-in reads it in every process that imports verl (the driver, the TaskRunner, the workers,
the rollout servers: on one node Ray processes inherit the launching shell's environment, and the
driver also forwards the switch to them through Ray's runtime environment). This package only
defines the pieces; the plug-in puts them in verl through its ledger of patches
(``fade.integrations.verl.patches``), so off, nothing is registered or rewritten and a GPU run is
untouched. On, they fill the gaps that keep verl 0.9.1 off CPU (docs/engines/verl.md):

- :mod:`.platform`: a CPU platform in verl's ``PlatformRegistry`` (device ``cpu``, collective
  backend ``gloo``, ``torch.cuda``-style memory calls answered with the host's memory), and the
  process group: verl builds ``cpu:gloo,<device>:<backend>``, which is ``cpu:gloo,cpu:gloo`` on CPU
  and refused by torch, so the workers get a plain ``gloo`` group;
- the engine: verl registers its FSDP engines for cuda and npu only; ``VERL_ENGINE_DEVICE=cuda``,
  verl's own switch, selects them, and FSDP2 shards on a CPU mesh;
- :mod:`.config`: the config, rewritten once in the driver before verl validates it
  (:func:`adapt_config`, one printed line per change): ``sdpa`` attention instead of
  flash-attention, no padding removal, FSDP2 instead of FSDP1, no torch.compile, the rollout backend
  ``hf``, and fake Ray GPUs, one per worker, because verl's resource pools ask Ray for "GPU";
- :mod:`.rollout`: a rollout backend, ``actor_rollout_ref.rollout.name=hf``: one Ray actor per
  replica serving verl's token-in-token-out protocol with Hugging Face ``generate``, registered in
  verl's two rollout registries; verl's weight sync hands it the actor's weights after every step,
  as it does vLLM's. Sampling is reproducible (:func:`request_seed`).

What it does not do: tensor, pipeline, data or expert parallel rollouts, sequence parallelism,
Megatron, LoRA weight sync, multi-modal prompts, quantised or speculative rollouts, generative
reward models, verl's asynchronous trainer modes and its legacy trainer; asking for any of them
stops the run with one line naming the setting (:func:`check_config`). It is for small models: the
rollout keeps a full copy of the weights in one process and decodes one request at a time.

The dependency runs one way: fade's verl plug-in imports this package's modules, never the reverse.
"""

# verl first: importing verl loads its plug-ins, fade's among them, which imports this package's
# modules (and, with FADE_VERL_CPU=1, switches CPU mode on). A process that imports this package
# before verl (a Ray actor unpickling the rollout server) must let that finish before the modules
# below start importing verl's, or the plug-in would meet them half-imported.
import verl  # noqa: F401, I001

from fade.integrations.verl_cpu.config import ASYNC_MODES, ENGINE_ONLY, GPU_ROLLOUTS, adapt_config, check_config
from fade.integrations.verl_cpu.platform import ENV_SWITCH, CpuPlatform, enabled
from fade.integrations.verl_cpu.rollout import ROLLOUT_NAME, HFReplica, HFRolloutServer, HFServerAdapter, request_seed

__all__ = [
    "ASYNC_MODES",
    "ENGINE_ONLY",
    "ENV_SWITCH",
    "GPU_ROLLOUTS",
    "ROLLOUT_NAME",
    "CpuPlatform",
    "HFReplica",
    "HFRolloutServer",
    "HFServerAdapter",
    "adapt_config",
    "check_config",
    "enabled",
    "request_seed",
]
