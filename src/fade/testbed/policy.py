"""The testbed's base policy: a tiny Llama built from a seed, saved and loaded as a checkpoint.

The testbed trains a transformers ``LlamaForCausalLM`` of about a million parameters (tied
embeddings, sdpa attention) so that a full RLVR run fits in minutes on two CPU cores, while the
same model class, checkpoint format (safetensors + ``save_pretrained``) and loading path serve a
real model on a GPU. Everything here is task-agnostic: the model sees token ids only, and the
tokenizer, when there is one, travels with the checkpoint.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

__all__ = [
    "build_policy",
    "load_policy",
    "parameter_count",
    "resolve_device",
    "save_policy",
    "tiny_llama_config",
]

# Any one of these marks a directory as holding model weights that from_pretrained can read.
_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def tiny_llama_config(
    vocab_size: int,
    *,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    intermediate_size: int = 512,
    max_positions: int = 64,
    pad_token_id: int = 0,
    bos_token_id: int = 1,
    eos_token_id: int = 2,
) -> LlamaConfig:
    """A small Llama configuration with tied input/output embeddings and sdpa attention.

    The defaults (h128, 4 layers, 4 heads, intermediate 512, 64 positions) give about 1.05M
    parameters at an 18-token vocabulary, the size measured to learn multi-digit addition in
    about a minute of supervised training on two CPU cores.
    """
    for name, value in (
        ("vocab_size", vocab_size),
        ("hidden_size", hidden_size),
        ("num_layers", num_layers),
        ("num_heads", num_heads),
        ("intermediate_size", intermediate_size),
        ("max_positions", max_positions),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if hidden_size % num_heads:
        raise ValueError(
            f"hidden_size must be divisible by num_heads, got hidden_size={hidden_size} "
            f"and num_heads={num_heads}"
        )
    if (hidden_size // num_heads) % 2:
        # Rotary embeddings rotate pairs of channels, so each head needs an even width.
        raise ValueError(
            f"hidden_size / num_heads must be even for rotary embeddings, got "
            f"{hidden_size} / {num_heads} = {hidden_size // num_heads}"
        )
    for name, value in (
        ("pad_token_id", pad_token_id),
        ("bos_token_id", bos_token_id),
        ("eos_token_id", eos_token_id),
    ):
        if not 0 <= value < vocab_size:
            raise ValueError(f"{name} must be in [0, {vocab_size}), got {value}")
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_positions,
        pad_token_id=pad_token_id,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
    )


def build_policy(config: LlamaConfig, seed: int) -> LlamaForCausalLM:
    """A freshly initialised ``LlamaForCausalLM`` whose weights depend on ``seed`` alone.

    The model is built on the CPU (move it with ``.to(device)``). Initialisation draws from the
    CPU generator inside ``torch.random.fork_rng``, so the caller's global RNG state is the same
    afterwards as before and building a model never shifts the randomness of the rest of a run.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(config)


def save_policy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase | None,
    directory: str | os.PathLike,
    *,
    extra_files: Mapping[str, str] | None = None,
) -> None:
    """Write ``model`` (safetensors) and, if given, ``tokenizer`` to ``directory``, atomically.

    Everything is written into a temporary sibling directory that then replaces ``directory`` by
    rename, so a reader (or a run resumed after a crash) sees either the previous checkpoint or
    the complete new one, never a half-written one. An existing ``directory`` is replaced.
    ``extra_files`` (file name -> text) are written beside the model inside the same swap.
    """
    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        # mkdtemp makes the directory private (0700); a checkpoint should read like any other.
        staging.chmod(0o755)
        model.save_pretrained(staging, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)
        for name, text in (extra_files or {}).items():
            (staging / name).write_text(text, encoding="utf-8")
        if target.exists():
            # rename cannot replace a non-empty directory, so the old one steps aside first and
            # is restored if the new one cannot take its place.
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, retired / target.name)
            try:
                os.replace(staging, target)
            except BaseException:
                os.replace(retired / target.name, target)
                raise
            finally:
                shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def load_policy(
    directory: str | os.PathLike,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase | None]:
    """Load a causal LM (and its tokenizer, if the directory holds one) from a local directory.

    Nothing is fetched from the network (``local_files_only=True``). The tokenizer is ``None``
    when the directory has no ``tokenizer_config.json``. A tokenizer class that is not built into
    transformers must be registered with ``AutoTokenizer`` (or named in the config's
    ``auto_map``) before loading.

    Raises:
        ValueError: the directory does not exist, is not a directory, or holds no model.
    """
    path = Path(directory)
    if not path.exists():
        raise ValueError(f"policy directory {str(path)!r} does not exist")
    if not path.is_dir():
        raise ValueError(f"policy directory {str(path)!r} is not a directory")
    if not (path / "config.json").is_file() or not any((path / f).is_file() for f in _WEIGHT_FILES):
        raise ValueError(
            f"policy directory {str(path)!r} holds no model: expected config.json and one of "
            f"{', '.join(_WEIGHT_FILES)}"
        )
    kwargs = {"local_files_only": True}
    if dtype is not None:
        kwargs["dtype"] = dtype
    model = AutoModelForCausalLM.from_pretrained(path, **kwargs).to(device)
    tokenizer = None
    if (path / "tokenizer_config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def resolve_device(name: str) -> torch.device:
    """The device for a ``--device`` value: ``auto`` (CUDA when available, else CPU), ``cpu``,
    ``cuda`` or ``cuda:N``.

    Raises:
        ValueError: CUDA was asked for but is not available, the index is out of range, or the
            name is none of the above.
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r} requested but CUDA is not available; use 'cpu' or 'auto'")
        device = torch.device(name)
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"device {name!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
        return device
    raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {name!r}")


def parameter_count(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    # Module.parameters() already yields a shared tensor once, which is what makes the count
    # of a tied-embedding model right.
    return sum(p.numel() for p in model.parameters())
