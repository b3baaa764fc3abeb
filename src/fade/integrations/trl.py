"""fade inside TRL: a ``GRPOTrainer`` whose advantages come from any fade estimator.

TRL 1.16 has no advantage hook: ``GRPOTrainer._generate_and_score_completions`` gathers every
process's rewards (``_calculate_rewards``, one column per reward function, NaN where a function
returned None), computes GRPO's advantage inline with ``view(-1, num_generations)``, keeps this
process's slice, and ``_prepare_inputs`` shuffles the result into micro-batches afterwards.
:class:`FadeGRPOTrainer` keeps the gathered rewards when they are computed, lets TRL finish, then
recomputes the advantages of the whole generation batch with the fade estimator, replaces this
process's slice before the shuffle, and fixes TRL's logged completion table. Every process sees
the same gathered rewards and the same (reduced) entropy, so every process's estimator, FADE's
state included, evolves identically without communication.

Entropy, the one training signal FADE needs (``entropy=`` chooses the source):

- ``"previous"`` (default, free): the mean token entropy TRL's loss pass already computes and
  reduces over processes, averaged over the micro-batches since the last generation. It is the
  policy's entropy on the previous generation batch, one generation behind; FADE smooths it with
  an EMA of weight 0.02 (a window of about 50 steps), so the lag does not move the schedule
  measurably. The very first generation has no previous value: it runs one extra no-grad pass so
  that H* is a fraction of the initial policy's entropy, as the paper sets it.
- ``"current"``: one extra no-grad forward pass over every generation batch (about a third of a
  training step's compute), giving the current batch's entropy, the order verl uses.

Rows of the generation batch come from TRL's ``RepeatSampler``: each run of ``num_generations``
consecutive rows answers one prompt, so the groups are ``arange(N) // num_generations``.
Completions that every reward function declined (all None) are left out of the estimator and
get advantage 0, as TRL does. fade's batch diagnostics and FADE's schedule are appended to TRL's
metrics under ``fade/...``, so they reach whatever logger the run reports to. The estimator's
state is saved as ``fade_estimator.json`` in each checkpoint folder and restored on resume.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping
from typing import Any

import torch
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

import fade
from fade.integrations.diagnostics import batch_metrics
from fade.integrations.state import STATE_FILE, load_estimator_state, save_estimator_state

__all__ = ["ENTROPY_SOURCES", "STATE_FILE", "FadeGRPOTrainer"]

logger = logging.getLogger(__name__)

#: Where the entropy fed to the estimator comes from (see the module docstring).
ENTROPY_SOURCES = ("previous", "current")


# Model inputs beyond ids and masks that TRL passes to its log-prob pass (vision-language models).
_FORWARD_KEYS = (
    "pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes", "num_tiles",
    "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids",
)


class FadeGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` with the advantage of any fade estimator.

    Args:
        *args, **kwargs: as for ``trl.GRPOTrainer``.
        advantage: a name from ``fade.available()`` (default ``"fade"``).
        advantage_kwargs: the estimator's parameters, e.g. ``{"h_star_ratio": 0.5}`` for FADE or
            ``{"k": 8}`` for passk.
        entropy: ``"previous"`` or ``"current"``: where FADE's entropy comes from (module docstring).

    TRL's own advantage settings (``scale_rewards``) do not apply; the estimator decides its
    scale (``advantage="grpo", advantage_kwargs={"eps": 1e-4, "std": "unbiased"}`` is TRL's
    default GRPO advantage). Rewards are the weighted sum of the reward functions, as TRL's
    default ``multi_objective_aggregation="sum_then_normalize"`` forms them before normalising.

    After each generation, ``fade_estimator`` holds the estimator (``.last`` has FADE's schedule)
    and ``fade_last`` the rewards, groups and advantages of the whole generation batch.
    """

    def __init__(
        self,
        *args: Any,
        advantage: str = "fade",
        advantage_kwargs: Mapping[str, Any] | None = None,
        entropy: str = "previous",
        **kwargs: Any,
    ) -> None:
        # Validate before TRL loads a model: a typo should cost a second, not a model load.
        if entropy not in ENTROPY_SOURCES:
            raise ValueError(f"entropy must be one of {ENTROPY_SOURCES}, got {entropy!r}")
        est = fade.estimator(advantage, **dict(advantage_kwargs or {}))
        if "baseline_rewards" in est.spec.needs:
            raise ValueError(
                f"estimator {advantage!r} needs a baseline response per prompt (ReMax's greedy decode), "
                "which GRPOTrainer does not generate; choose another estimator"
            )
        super().__init__(*args, **kwargs)
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                "FadeGRPOTrainer computes advantages from the weighted sum of the rewards; "
                f"multi_objective_aggregation must be 'sum_then_normalize', got {self.multi_objective_aggregation!r}"
            )
        self.fade_estimator = est
        self.fade_entropy_source = entropy
        self.fade_last: dict[str, torch.Tensor] = {}
        self._fade_rewards_per_func: torch.Tensor | None = None
        self._fade_pending_entropy: list[float] = []

    # -- what TRL computes on the way --------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._fade_rewards_per_func = rewards_per_func  # gathered over processes: (N, reward functions)
        return rewards_per_func

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        if self.model.training and self._metrics["train"]["entropy"]:
            # TRL reduced this micro-batch's masked mean entropy over processes before logging it.
            self._fade_pending_entropy.append(float(self._metrics["train"]["entropy"][-1]))
        return loss

    # -- the advantage -----------------------------------------------------------------------

    def _generate_and_score_completions(self, inputs):
        self._fade_rewards_per_func = None
        out = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        rewards_per_func = self._fade_rewards_per_func
        if rewards_per_func is None:
            raise RuntimeError("TRL did not compute rewards through _calculate_rewards; this TRL version is not supported")
        est = self.fade_estimator
        if mode == "train":
            entropy = self._fade_entropy(out)
            if entropy is not None:
                est.observe(entropy=entropy, step=self.state.global_step)
        else:
            # Evaluation must not advance the estimator's schedule: score with a copy.
            est = copy.deepcopy(est)

        device = rewards_per_func.device
        n = rewards_per_func.shape[0]
        size = self.num_generations if mode == "train" else self.num_generations_eval
        rewards = (rewards_per_func * self.reward_weights.to(device).unsqueeze(0)).nansum(dim=1)
        scorable = ~torch.isnan(rewards_per_func).all(dim=1)
        groups = torch.div(torch.arange(n, device=device), size, rounding_mode="floor")
        inputs_ = {}
        if "lengths" in {*est.spec.needs, *est.spec.uses}:
            lengths = self.accelerator.gather(out["completion_mask"].sum(dim=1).to(rewards.dtype))
            inputs_["lengths"] = lengths[scorable].clamp_min(1)
        advantages = torch.zeros_like(rewards)
        if bool(scorable.any()):
            advantages[scorable] = est(rewards[scorable], groups[scorable], **inputs_)
        local = out["advantages"].numel()
        start = self.accelerator.process_index * local
        out["advantages"] = advantages[start:start + local].to(out["advantages"].dtype)

        # TRL logged its own advantages of the whole batch for the completion table: swap in ours.
        logged = self._logs["advantages"]
        for _ in range(min(n, len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())

        self.fade_last = {"rewards": rewards, "groups": groups, "advantages": advantages, "scorable": scorable}
        self._fade_log(mode, est, advantages[scorable], rewards[scorable], groups[scorable])
        return out

    def _fade_entropy(self, out: Mapping[str, Any]) -> float | None:
        """The entropy to feed this generation, per ``entropy=`` (None: feed nothing)."""
        if self.fade_entropy_source == "previous" and self._fade_pending_entropy:
            value = sum(self._fade_pending_entropy) / len(self._fade_pending_entropy)
            self._fade_pending_entropy.clear()
            return value
        if self.fade_entropy_source == "current" or self.fade_estimator.awaiting_entropy:
            return self._current_entropy(out)
        return None  # resumed with no loss pass since: the restored state carries on

    @torch.no_grad()
    def _current_entropy(self, out: Mapping[str, Any]) -> float:
        """Mean token entropy of the policy on this generation batch, over every process's tokens."""
        prompt_ids, completion_ids = out["prompt_ids"], out["completion_ids"]
        ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        extra = {key: out[key] for key in _FORWARD_KEYS if key in out}
        _, entropies, _ = self._get_per_token_logps_and_entropies(
            self.model, ids, attention, completion_ids.size(1),
            batch_size=self.args.per_device_train_batch_size, compute_entropy=True, **extra,
        )
        mask = out["completion_mask"] if "tool_mask" not in out else out["completion_mask"] * out["tool_mask"]
        mask = mask.to(entropies.dtype)
        totals = self.accelerator.reduce(torch.stack([(entropies * mask).sum(), mask.sum()]), reduction="sum")
        return float(totals[0] / totals[1].clamp(min=1.0))

    def _fade_log(self, mode: str, est: fade.Estimator, adv: torch.Tensor, rewards: torch.Tensor, groups: torch.Tensor) -> None:
        for key, value in batch_metrics(est, adv, rewards, groups).items():
            self._metrics[mode][key].append(value)

    # -- checkpoints -------------------------------------------------------------------------

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            save_estimator_state(self.fade_estimator, folder, pending_entropy=list(self._fade_pending_entropy))

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        saved = load_estimator_state(self.fade_estimator, checkpoint)
        if saved is None:
            if self.fade_estimator.stateful:
                # A checkpoint of a run that used another advantage until now: FADE starts afresh.
                path = os.path.join(checkpoint, STATE_FILE)
                logger.warning("resuming without %s: %s starts from its initial state", path, self.fade_estimator.name)
            return
        self._fade_pending_entropy = [float(x) for x in saved.get("pending_entropy", [])]

