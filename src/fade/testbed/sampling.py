"""Rollouts from a causal LM: batched sampling with a KV cache, and scoring of given sequences.

``sample`` draws ``num_samples`` completions per prompt in one left-padded batch (one prefill
forward over the distinct prompts, its cache repeated to the group, then one token per step
through the model's KV cache) and records, per token, the log-probability and entropy of the
distribution it was drawn from. ``sequence_logprobs`` computes the same quantities for given
completions in one differentiable pass (the rows of a group share their prompt's forward): it is
what the policy-gradient update calls, and on the sampled rows it agrees with what ``sample``
recorded (the tests hold it to 1e-5), which is the check that the cache path, the left padding
and the position ids are right. Both work on token ids only and run wherever the model lives.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import DynamicCache, PreTrainedModel

__all__ = ["Rollouts", "greedy", "join_rollouts", "sample", "sequence_logprobs"]


@dataclass
class Rollouts:
    """A batch of sampled completions, ``num_samples`` rows per prompt, grouped by prompt.

    Prompt ``i``'s samples are rows ``i * G .. i * G + G - 1``. ``T`` is the number of decoding
    steps actually run: ``max_new_tokens``, or fewer when every row emitted eos early.

    Attributes:
        prompt_index: (B,) long, the prompt each row came from.
        prompt_ids: (B, P) long, left-padded with ``pad_id``.
        prompt_mask: (B, P) bool, True on real prompt tokens.
        completion_ids: (B, T) long, the sampled tokens; ``pad_id`` after eos.
        completion_mask: (B, T) bool, True on sampled tokens up to and including eos.
        logprobs: (B, T) float32, log pi(token) under logits / temperature; 0 where masked out.
        entropy: (B, T) float32, entropy of that sampling distribution; 0 where masked out.
        lengths: (B,) long, completion tokens per row (eos included when emitted).
        finished: (B,) bool, the row emitted eos within ``max_new_tokens``.
    """

    prompt_index: torch.Tensor
    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    logprobs: torch.Tensor
    entropy: torch.Tensor
    lengths: torch.Tensor
    finished: torch.Tensor


def join_rollouts(parts: Sequence[tuple[Rollouts, torch.Tensor]], pad_id: int) -> Rollouts:
    """One batch of the given rows of several batches, in order, with their prompts renumbered.

    Each part is (rollouts, rows): the rows of one batch to keep, whose ``prompt_index`` values
    become consecutive group numbers in the order they first appear, continuing from the previous
    part's. Prompts are left-padded again to the widest, completions right-padded to the longest
    (with ``pad_id``, and 0 for the log-probs and entropies), so the result reads as one batch.
    """
    if not parts:
        raise ValueError("join_rollouts needs at least one part")
    prompt_w = max(r.prompt_ids.shape[1] for r, _ in parts)
    completion_w = max(r.completion_ids.shape[1] for r, _ in parts)
    fields: dict[str, list[torch.Tensor]] = {name: [] for name in Rollouts.__dataclass_fields__}
    groups = 0
    for r, rows in parts:
        rows = rows.to(r.prompt_index.device)
        _, index = torch.unique_consecutive(r.prompt_index[rows], return_inverse=True)
        fields["prompt_index"].append(index + groups)
        groups += int(index.max()) + 1 if index.numel() else 0
        left = prompt_w - r.prompt_ids.shape[1]
        fields["prompt_ids"].append(F.pad(r.prompt_ids[rows], (left, 0), value=pad_id))
        fields["prompt_mask"].append(F.pad(r.prompt_mask[rows], (left, 0), value=False))
        right = completion_w - r.completion_ids.shape[1]
        fields["completion_ids"].append(F.pad(r.completion_ids[rows], (0, right), value=pad_id))
        fields["completion_mask"].append(F.pad(r.completion_mask[rows], (0, right), value=False))
        for name in ("logprobs", "entropy"):
            fields[name].append(F.pad(getattr(r, name)[rows], (0, right), value=0.0))
        for name in ("lengths", "finished"):
            fields[name].append(getattr(r, name)[rows])
    return Rollouts(**{name: torch.cat(values) for name, values in fields.items()})


def _model_device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def _check_temperature(temperature: float) -> None:
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")


def _positions(mask: torch.Tensor) -> torch.Tensor:
    # Each row counts from 0 at its first real token; pads before it get 0 and are masked anyway.
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


def _left_pad(
    prompts: Sequence[Sequence[int]], repeats: int, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, prompt in enumerate(prompts):
        ids[i, width - len(prompt) :] = torch.as_tensor(list(prompt), dtype=torch.long)
        mask[i, width - len(prompt) :] = True
    # Build once on the host and repeat on the device: one transfer, not one per sample.
    ids, mask = ids.to(device), mask.to(device)
    return ids.repeat_interleave(repeats, dim=0), mask.repeat_interleave(repeats, dim=0)


@torch.no_grad()
def sample(
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    *,
    num_samples: int,
    max_new_tokens: int,
    eos_id: int,
    pad_id: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    greedy: bool = False,
) -> Rollouts:
    """Sample ``num_samples`` completions of each prompt from softmax(logits / temperature).

    All ``len(prompts) * num_samples`` rows decode together: the prompts are left-padded so that
    every row's next token sits in the last column, each row's positions start at 0 at its first
    real token, one prefill forward over the distinct prompts fills a ``DynamicCache`` that is
    then repeated ``num_samples`` times along the batch, and each later step feeds one token.
    A row stops at its first eos and emits (masked) pad from then on; decoding ends when every
    row has stopped or after ``max_new_tokens`` steps. Log-probabilities and entropies are taken
    in float32 whatever the model's dtype.

    Args:
        model: a causal LM taking ``input_ids``, ``attention_mask``, ``position_ids``,
            ``past_key_values``, ``use_cache`` and ``logits_to_keep`` (any transformers causal LM).
        prompts: token ids, one non-empty sequence per prompt.
        num_samples: completions per prompt (the group size G), >= 1.
        max_new_tokens: decoding steps at most, >= 1; the longest prompt plus this must fit in
            ``model.config.max_position_embeddings``.
        eos_id, pad_id: end-of-sequence and padding token ids.
        temperature: > 0; the recorded log-probs and entropies are those of the tempered
            distribution the tokens were drawn from.
        generator: the source of randomness, on the model's device (for a model on CUDA make it
            with ``torch.Generator(device="cuda")``); ``None`` uses the global generator. The
            same generator state gives identical rollouts.
        greedy: take the most likely token at every step instead of sampling (the recorded
            log-probs and entropies are still those of the tempered distribution).

    Raises:
        ValueError: empty ``prompts`` or an empty prompt, a token id outside the vocabulary,
            ``num_samples`` < 1, ``max_new_tokens`` < 1, ``temperature`` <= 0, a prompt too long
            for the model's positions, or a generator on another device.
    """
    if len(prompts) == 0:
        raise ValueError("prompts is empty: expected at least one prompt")
    for i, prompt in enumerate(prompts):
        if len(prompt) == 0:
            raise ValueError(f"prompt {i} is empty: every prompt needs at least one token")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be an integer >= 1, got {num_samples!r}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    _check_temperature(temperature)
    longest = max(len(p) for p in prompts)
    max_positions = model.config.max_position_embeddings
    if longest + max_new_tokens > max_positions:
        raise ValueError(
            f"longest prompt ({longest} tokens) + max_new_tokens ({max_new_tokens}) = "
            f"{longest + max_new_tokens} exceeds the model's max_position_embeddings ({max_positions})"
        )
    vocab = model.config.vocab_size
    for name, token in (("eos_id", eos_id), ("pad_id", pad_id)):
        if not 0 <= token < vocab:
            raise ValueError(f"{name} must be in [0, {vocab}), got {token}")
    low = min(min(p) for p in prompts)
    high = max(max(p) for p in prompts)
    if low < 0 or high >= vocab:
        bad = low if low < 0 else high
        raise ValueError(f"prompt token ids must be in [0, {vocab}), got {bad}")
    device = _model_device(model)
    if generator is not None and generator.device != device:
        raise ValueError(
            f"generator is on {generator.device} but the model is on {device}: create it with "
            f"torch.Generator(device={str(device)!r})"
        )

    prompt_ids, prompt_mask = _left_pad(prompts, num_samples, pad_id, device)
    batch, width = prompt_ids.shape
    prompt_index = torch.arange(len(prompts), device=device).repeat_interleave(num_samples)

    completion_ids = torch.full((batch, max_new_tokens), pad_id, dtype=torch.long, device=device)
    completion_mask = torch.zeros((batch, max_new_tokens), dtype=torch.bool, device=device)
    logprobs = torch.zeros((batch, max_new_tokens), dtype=torch.float32, device=device)
    entropy = torch.zeros((batch, max_new_tokens), dtype=torch.float32, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    # One mask buffer for prompt + completion, sliced per step, so nothing is re-concatenated.
    attention_mask = torch.zeros((batch, width + max_new_tokens), dtype=torch.long, device=device)
    attention_mask[:, :width] = prompt_mask
    next_position = prompt_mask.sum(-1)

    cache = DynamicCache(config=model.config)
    # The G rows of a prompt share its prefill: one forward over the distinct prompts fills the
    # cache, which is then repeated G times along the batch (as is the first step's logits).
    unique = slice(None, None, num_samples)
    output = model(
        input_ids=prompt_ids[unique],
        attention_mask=attention_mask[unique, :width],
        position_ids=_positions(prompt_mask[unique]),
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    logits = output.logits[:, -1]
    if num_samples > 1:
        cache.batch_repeat_interleave(num_samples)
        logits = logits.repeat_interleave(num_samples, dim=0)
    steps = max_new_tokens
    for t in range(max_new_tokens):
        step_logprobs = F.log_softmax(logits.float() / temperature, dim=-1)
        probs = step_logprobs.exp()
        if greedy:
            token = probs.argmax(-1)
        else:
            token = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        alive = ~finished
        token = torch.where(alive, token, pad_id)
        completion_ids[:, t] = token
        completion_mask[:, t] = alive
        chosen = step_logprobs.gather(-1, token[:, None]).squeeze(-1)
        logprobs[:, t] = torch.where(alive, chosen, 0.0)
        entropy[:, t] = torch.where(alive, -(probs * step_logprobs).sum(-1), 0.0)
        finished |= alive & (token == eos_id)
        # The last step's token is never fed back, and a batch that has all stopped is done.
        if t == max_new_tokens - 1 or bool(finished.all()):
            steps = t + 1
            break
        attention_mask[:, width + t] = alive
        logits = model(
            input_ids=token[:, None],
            attention_mask=attention_mask[:, : width + t + 1],
            position_ids=(next_position + t)[:, None],
            past_key_values=cache,
            use_cache=True,
        ).logits[:, -1]

    return Rollouts(
        prompt_index=prompt_index,
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=completion_ids[:, :steps],
        completion_mask=completion_mask[:, :steps],
        logprobs=logprobs[:, :steps],
        entropy=entropy[:, :steps],
        lengths=completion_mask.sum(-1),
        finished=finished,
    )


#: Sequences up to this many tokens run SDPA's math kernel on CPU in ``sequence_logprobs``: at the
#: testbed's lengths (tens of tokens) it takes the update's forward and backward about a fifth
#: faster than the flash kernel the CPU build picks by default, and its attention matrix is small.
SHORT_SEQUENCE = 128


def _attention_kernel(device: torch.device, length: int) -> contextlib.AbstractContextManager:
    if device.type == "cpu" and length <= SHORT_SEQUENCE:
        return sdpa_kernel(SDPBackend.MATH)
    return contextlib.nullcontext()


def _distinct_prompts(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(first, inverse): the first row of each distinct (prompt, mask) and each row's distinct prompt."""
    key = torch.where(prompt_mask, prompt_ids, -1)  # pads read alike whatever id they hold
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    rows = torch.arange(key.shape[0], device=key.device)
    first = torch.full((int(inverse.max()) + 1,), key.shape[0], dtype=torch.long, device=key.device)
    return first.scatter_reduce(0, inverse, rows, reduce="amin"), inverse


def _logits_over_shared_prompts(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    first: torch.Tensor,
    inverse: torch.Tensor,
) -> torch.Tensor:
    """(B, T, V) logits predicting each completion token, the distinct prompts run once.

    The prompt forward over the rows ``first`` fills a cache and gives the logits that predict
    completion token 0; the cache is gathered to every row by ``inverse`` and the completion's
    first T - 1 tokens run on top of it, at the positions a full forward gives them."""
    width, length = prompt_ids.shape[1], completion_ids.shape[1]
    cache = DynamicCache(config=model.config)
    distinct_mask = prompt_mask[first]
    head = model(
        input_ids=prompt_ids[first],
        attention_mask=distinct_mask.long(),
        position_ids=_positions(distinct_mask),
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    ).logits[inverse]
    if length == 1:
        return head
    cache.batch_select_indices(inverse)
    mask = torch.cat([prompt_mask, completion_mask[:, :-1]], dim=1)
    rest = model(
        input_ids=completion_ids[:, :-1],
        attention_mask=mask.long(),
        position_ids=_positions(mask)[:, width:],
        past_key_values=cache,
        use_cache=True,
    ).logits
    return torch.cat([head, rest], dim=1)


def greedy(
    model: PreTrainedModel, prompts: Sequence[Sequence[int]], *, max_new_tokens: int, eos_id: int, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy completion of each prompt: (completion_ids, completion_mask), one row per prompt."""
    rollouts = sample(
        model, prompts, num_samples=1, max_new_tokens=max_new_tokens, eos_id=eos_id, pad_id=pad_id, greedy=True
    )
    return rollouts.completion_ids, rollouts.completion_mask


def sequence_logprobs(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    share_prompts: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log pi(completion | prompt) under logits / temperature, in one differentiable pass.

    For row b and completion position t this is log softmax(z / temperature)[c_bt], with z the
    logits at the position before c_bt, and optionally the entropy -sum_v p_v log p_v of that
    distribution. It runs under whatever grad mode the caller set, so the result is
    differentiable in the model's parameters. Only the positions that predict a completion token
    go through the output head, and the log-softmax is over them only, in float32.

    Rows that share a prompt (a group's G completions) share its forward: with
    ``share_prompts`` and fewer distinct prompts than rows, the distinct prompts go through the
    model once, filling a KV cache whose keys and values are then gathered to every row, and the
    completions run on top of it, so the prompt costs one row's compute per distinct prompt
    instead of one per row. The gradient flows through the gathered cache into the shared
    prompt's forward, summing over the rows that share it: the same function of the parameters
    as one full forward over concat(prompt, completion) per row (``share_prompts=False``, and
    the path taken when every prompt is distinct), equal within float error (the tests hold
    both the values and the gradient to it).

    Args:
        prompt_ids, prompt_mask: (B, P) long and bool, left-padded (the last column real in
            every row), as in ``Rollouts``.
        completion_ids, completion_mask: (B, T) long and bool, right-padded (the mask a prefix
            of True in every row), as in ``Rollouts``.
        temperature: > 0, the temperature the completions were sampled at.
        with_entropy: also return the per-token entropy.
        share_prompts: run each distinct prompt once (above); False runs every row in full.

    Returns:
        ``(logprobs, entropy)``: float32 (B, T), 0 where ``completion_mask`` is False; ``entropy``
        is ``None`` unless ``with_entropy``.

    Raises:
        ValueError: mismatched shapes, an empty prompt or completion axis, a prompt that is not
            left-padded or a completion that is not right-padded, or ``temperature`` <= 0.
    """
    _check_temperature(temperature)
    if prompt_ids.ndim != 2 or prompt_mask.shape != prompt_ids.shape:
        raise ValueError(
            f"prompt_ids and prompt_mask must be (B, P) of one shape, got {tuple(prompt_ids.shape)} "
            f"and {tuple(prompt_mask.shape)}"
        )
    if completion_ids.ndim != 2 or completion_mask.shape != completion_ids.shape:
        raise ValueError(
            f"completion_ids and completion_mask must be (B, T) of one shape, got "
            f"{tuple(completion_ids.shape)} and {tuple(completion_mask.shape)}"
        )
    if completion_ids.shape[0] != prompt_ids.shape[0]:
        raise ValueError(
            f"prompt and completion batch sizes differ: {prompt_ids.shape[0]} and {completion_ids.shape[0]}"
        )
    if prompt_ids.shape[1] == 0 or completion_ids.shape[1] == 0:
        raise ValueError(
            f"prompt and completion need at least one column each, got P={prompt_ids.shape[1]} "
            f"and T={completion_ids.shape[1]}"
        )
    prompt_mask = prompt_mask.bool()
    completion_mask = completion_mask.bool()
    # The logits that score completion token 0 come from the last prompt column, so that column
    # must be a real token; a completion token after a pad would be scored after a hole.
    if not bool(prompt_mask[:, -1].all()):
        raise ValueError("prompt_mask must be left-padded: the last prompt column must be real in every row")
    if bool((completion_mask[:, 1:] & ~completion_mask[:, :-1]).any()):
        raise ValueError("completion_mask must be right-padded: each row's True entries must come first")

    first, inverse = _distinct_prompts(prompt_ids, prompt_mask) if share_prompts else (None, None)
    length = completion_ids.shape[1]
    with _attention_kernel(prompt_ids.device, prompt_ids.shape[1] + length):
        if first is not None and first.numel() < prompt_ids.shape[0]:
            logits = _logits_over_shared_prompts(model, prompt_ids, prompt_mask, completion_ids, completion_mask,
                                                 first, inverse)
        else:
            mask = torch.cat([prompt_mask, completion_mask], dim=1)
            output = model(
                input_ids=torch.cat([prompt_ids, completion_ids], dim=1),
                attention_mask=mask.long(),
                position_ids=_positions(mask),
                use_cache=False,
                logits_to_keep=length + 1,
            )
            # Position P - 1 + t predicts completion token t; the very last position predicts nothing.
            logits = output.logits[:, :-1]
    scaled = logits.float() / temperature
    token_logprobs = F.log_softmax(scaled, dim=-1)
    chosen = token_logprobs.gather(-1, completion_ids[..., None]).squeeze(-1)
    logprobs = torch.where(completion_mask, chosen, 0.0)
    if not with_entropy:
        return logprobs, None
    token_entropy = -(token_logprobs.exp() * token_logprobs).sum(-1)
    return logprobs, torch.where(completion_mask, token_entropy, 0.0)
