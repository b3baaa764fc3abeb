"""verl's platform on a machine without accelerators: the ``FADE_VERL_CPU`` switch, the CPU
platform verl's ``PlatformRegistry`` lacks (device ``cpu``, collective backend ``gloo``,
``torch.cuda``-style memory calls answered with the host's memory), and verl's process-group
setup with a plain ``gloo`` group. ``fade.integrations.verl.patches`` puts them in verl.
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Callable
from typing import Any

import torch
from verl.plugin.platform import PlatformBase

__all__ = ["ENV_SWITCH", "CpuPlatform", "enabled", "gloo_process_group"]

#: The environment variable that switches CPU mode on (``1``) in every verl process.
ENV_SWITCH = "FADE_VERL_CPU"

_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


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



def gloo_process_group(verl_fn: Callable[..., Any]) -> Callable[..., Any]:
    """verl's ``initialize_global_process_group_ray`` with a plain ``gloo`` backend by default."""

    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        # verl's default backend string names the CPU twice ("cpu:gloo,cpu:gloo"), which torch refuses.
        return verl_fn(timeout_second=timeout_second, backend=backend or "gloo")

    return initialize_global_process_group_ray
