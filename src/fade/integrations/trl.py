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
get advantage 0, as TRL does.

``advantage="grpo"`` is TRL's own advantage with every TRL setting honoured (:func:`trl_params`):
``scale_rewards`` (group, batch, none and the booleans), eps 1e-4, both
``multi_objective_aggregation`` modes, reward weights and None rewards, so a swap to
FadeGRPOTrainer changes nothing until ``advantage`` does. A setting an estimator cannot honour (a
std scale for an estimator that sets its own, per-function normalisation for one that needs one
reward per completion, real-valued rewards for one that reads successes without a success option)
is refused at construction, with one line naming the setting and the estimator.

The private names of TRL this trainer overrides, calls or rewrites are listed in :data:`PRIVATE`
and checked against the installed TRL when this module is imported; the one private structure it
rewrites, the completion table's ``_logs["advantages"]``, is reached only through
:func:`replace_logged_advantages`.

fade's batch diagnostics and FADE's schedule are appended to TRL's metrics under ``fade/...``, so they
reach whatever logger the run reports to. The estimator's
state is saved as ``fade_estimator.json`` in each checkpoint folder and restored on resume.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import torch
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import GRPOTrainer

import fade
from fade.integrations.ledger import Touch, mismatch, resolve
from fade.integrations.state import STATE_FILE, load_estimator_state, save_estimator_state
from fade.registry import check_inputs, check_real_valued
from fade.weighing import measure, observe

__all__ = [
    "ENTROPY_SOURCES", "PRIVATE", "STATE_FILE", "TRL_CHECKED", "TRL_EPS", "FadeGRPOTrainer",
    "replace_logged_advantages", "trl_params",
]

logger = logging.getLogger(__name__)

#: Where the entropy fed to the estimator comes from (see the module docstring).
ENTROPY_SOURCES = ("previous", "current")


# Model inputs beyond ids and masks that TRL passes to its log-prob pass (vision-language models).
_FORWARD_KEYS = (
    "pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes", "num_tiles",
    "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids",
)


#: TRL's GRPO advantage: eps added to the std (a constant in GRPOTrainer).
TRL_EPS = 1e-4

#: The TRL release every entry of :data:`PRIVATE` was checked against.
TRL_CHECKED = "1.16.0"


def _trl(attribute: str, kind: str, replacement: str, why: str, params: tuple[str, ...] | None = None) -> Touch:
    return Touch("trl", "trl", f"GRPOTrainer.{attribute}", kind, replacement, why, params, TRL_CHECKED)


#: TRL's private names that :class:`FadeGRPOTrainer` overrides, calls or rewrites; TRL has no
#: advantage hook, so these are where fade steps in.
PRIVATE: tuple[Touch, ...] = (
    _trl("_calculate_rewards", "override", "TRL's, keeping the gathered rewards",
         "the rewards of the whole generation batch, before TRL reduces them to its own advantage",
         ("inputs", "prompts", "completions", "completion_ids_list")),
    _trl("_compute_loss", "override", "TRL's, keeping the micro-batch's reduced entropy",
         "entropy='previous' feeds FADE the entropy TRL's loss pass computes", ("model", "inputs")),
    _trl("_generate_and_score_completions", "override", "TRL's, then fade's advantages in place of TRL's",
         "TRL computes GRPO's advantage inline here", ("inputs",)),
    _trl("_get_per_token_logps_and_entropies", "call", "called with compute_entropy=True",
         "entropy='current': the policy's entropy on the generation batch",
         ("model", "input_ids", "attention_mask", "logits_to_keep", "batch_size", "compute_entropy", *_FORWARD_KEYS)),
    _trl("_save_checkpoint", "override", "TRL's, then the estimator's state in the checkpoint folder",
         "FADE's state is saved with each checkpoint", ("model", "trial")),
    _trl("_load_optimizer_and_scheduler", "override", "TRL's, then the estimator's state",
         "FADE's state is restored on resume", ("checkpoint",)),
    _trl("_get_output_dir", "call", "the checkpoint folder's parent", "where _save_checkpoint wrote", ("trial",)),
    _trl("_metrics", "attribute", "fade/... values appended per mode",
         "fade's diagnostics reach whatever logger TRL reports to; the loss pass's entropy is read from it"),
    _trl("_logs", "attribute", "the last N entries of _logs['advantages'] replaced by fade's "
         "(replace_logged_advantages)",
         "TRL's completion table logs TRL's own advantages of the whole generation batch"),
)

for _touch in PRIVATE:
    resolve(_touch)


def replace_logged_advantages(trainer: GRPOTrainer, count: int, advantages: list[float]) -> None:
    """Put ``advantages`` in place of the last ``count`` advantages TRL logged for its completion
    table: ``trainer._logs["advantages"]``, a deque bounded by the generation batch, which TRL has
    just extended by its own advantages of the whole generation batch."""
    logs = getattr(trainer, "_logs", None)
    logged = logs.get("advantages") if isinstance(logs, Mapping) else None
    if not all(hasattr(logged, method) for method in ("pop", "extend", "__len__")):
        touch = next(t for t in PRIVATE if t.attribute == "GRPOTrainer._logs")
        raise mismatch(touch, f"has no ['advantages'] sequence to rewrite (got {type(logged).__name__})")
    for _ in range(min(count, len(logged))):
        logged.pop()
    logged.extend(advantages)


def _refuse(what: str) -> ValueError:
    return ValueError(f"FadeGRPOTrainer: {what}")


def trl_params(
    advantage: str, advantage_kwargs: Mapping[str, Any] | None, *, scale_rewards: Any = "group",
    multi_objective_aggregation: str = "sum_then_normalize",
) -> dict[str, Any]:
    """The parameters of fade's estimator ``advantage`` under TRL's advantage settings.

    ``advantage="grpo"`` is TRL's own advantage: eps 1e-4 (TRL's constant) and ``scale`` from
    ``scale_rewards`` (``True``/``False`` are ``"group"``/``"none"``, as GRPOConfig reads them);
    under ``multi_objective_aggregation="normalize_then_sum"`` it is TRL's per-function, then
    batch, normalisation. ``grpo_passk`` takes ``norm_by_std`` from ``scale_rewards``. Every other
    estimator sets its own scale, so it needs ``scale_rewards="none"``, and needs one reward per
    completion, so it needs ``"sum_then_normalize"``. A setting that cannot be honoured, or one
    that contradicts ``advantage_kwargs``, raises one line naming both.
    """
    given = dict(advantage_kwargs or {})
    params = dict(given)
    scale = {True: "group", False: "none"}.get(scale_rewards, scale_rewards)
    if scale not in ("group", "batch", "none"):
        raise _refuse(f"scale_rewards must be 'group', 'batch', 'none', True or False, got {scale_rewards!r}")
    if multi_objective_aggregation not in ("sum_then_normalize", "normalize_then_sum"):
        raise _refuse(f"multi_objective_aggregation must be 'sum_then_normalize' or 'normalize_then_sum', "
                      f"got {multi_objective_aggregation!r}")

    def take(key: str, value: Any, setting: str) -> None:
        if key in given and given[key] != value:
            raise _refuse(f"{setting} means {key}={value!r} for estimator {advantage!r}, but advantage_kwargs has "
                          f"{key}={given[key]!r}; set one of them")
        params[key] = value

    if multi_objective_aggregation == "normalize_then_sum":
        if advantage != "grpo":
            raise _refuse(
                f"multi_objective_aggregation='normalize_then_sum' is TRL's GRPO recipe (each reward function "
                f"normalised within its group, the weighted sum over the batch); estimator {advantage!r} "
                "needs one reward per completion: use 'sum_then_normalize', or advantage='grpo'"
            )
        take("scale", "group", "multi_objective_aggregation='normalize_then_sum'")
        params.setdefault("eps", TRL_EPS)
        if scale != "group":
            logger.warning("scale_rewards=%r has no effect under multi_objective_aggregation='normalize_then_sum': "
                           "TRL normalises by the group std and then the batch std, and so does fade's grpo", scale)
    elif advantage == "grpo":
        take("scale", scale, f"scale_rewards={scale_rewards!r}")
        params.setdefault("eps", TRL_EPS)
    elif advantage == "grpo_passk":
        if scale == "batch":
            raise _refuse("scale_rewards='batch' cannot be honoured by estimator 'grpo_passk', which divides by its "
                          "group's std or by nothing: use 'group' or 'none'")
        take("norm_by_std", scale == "group", f"scale_rewards={scale_rewards!r}")
    elif scale != "none":
        raise _refuse(f"scale_rewards={scale_rewards!r} divides TRL's advantage by the reward std; estimator "
                      f"{advantage!r} sets its own scale and cannot honour it: set scale_rewards='none' (or False)")
    return params


def _reward_range(weights: list[float]) -> tuple[float, float]:
    """The range of the weighted sum of rewards that each lie in [0, 1]."""
    return sum(min(w, 0.0) for w in weights), sum(max(w, 0.0) for w in weights)


class FadeGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` with the advantage of any fade estimator.

    Args:
        *args, **kwargs: as for ``trl.GRPOTrainer``.
        advantage: a name from ``fade.available()`` (default ``"fade"``).
        advantage_kwargs: the estimator's parameters, e.g. ``{"h_star_ratio": 0.5}`` for FADE or
            ``{"k": 8}`` for passk; ``{"success_threshold": 0.5}`` (or ``reward_min``/``reward_max``)
            says what counts as a success for estimators that read one (FADE, maxrl, passk, ...).
        entropy: ``"previous"`` or ``"current"``: where FADE's entropy comes from (module docstring).

    ``advantage="grpo"`` is TRL's own advantage, with every TRL setting honoured
    (:func:`trl_params`): the same advantages as ``GRPOTrainer`` for every ``scale_rewards`` and
    ``multi_objective_aggregation``, reward weights and None rewards. Other estimators take the
    weighted sum of the reward functions as each completion's reward and need
    ``scale_rewards="none"``; settings that cannot be honoured are refused at construction.

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
        fade.estimator(advantage, **dict(advantage_kwargs or {}))
        check_inputs(fade.spec(advantage), {"lengths"}, where="GRPOTrainer does not generate; choose another estimator",
                     called={"baseline_rewards": "a baseline response per prompt (ReMax's greedy decode)"})
        config = kwargs.get("args", args[2] if len(args) > 2 else None)
        if config is not None:
            trl_params(advantage, advantage_kwargs, scale_rewards=config.scale_rewards,
                       multi_objective_aggregation=config.multi_objective_aggregation)
        super().__init__(*args, **kwargs)
        params = trl_params(advantage, advantage_kwargs, scale_rewards=self.scale_rewards,
                            multi_objective_aggregation=self.multi_objective_aggregation)
        self.fade_estimator = est = fade.estimator(advantage, **params)
        self._fade_check_rewards(est)
        self.fade_entropy_source = entropy
        self.fade_last: dict[str, torch.Tensor] = {}
        self._fade_rewards_per_func: torch.Tensor | None = None
        self._fade_pending_entropy: list[float] = []

    def _fade_check_rewards(self, est: fade.Estimator) -> None:
        """An estimator that reads rewards as successes, without a success option, is refused here
        when the rewards can leave [0, 1]: a reward model's scores, or weights whose sum can."""
        models = [name for f, name in zip(self.reward_funcs, self.reward_func_names) if isinstance(f, torch.nn.Module)]
        weights = [float(w) for w in self.reward_weights]
        low, high = _reward_range(weights)
        why = (f"reward function {models[0]!r} is a reward model with real-valued scores" if models
               else f"reward_weights {weights} sum rewards in [0, 1] to values in [{low:g}, {high:g}]"
               if low < 0 or high > 1 else None)
        check_real_valued(est, why, who=f"FadeGRPOTrainer: estimator {est.name!r}",
                          hint="pass advantage_kwargs={'success_threshold': T} or {'reward_min': LO, 'reward_max': HI}")

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
            raise RuntimeError(
                "TRL did not compute rewards through _calculate_rewards; this TRL version is not supported"
            )
        est = self.fade_estimator
        train = mode == "train"  # evaluation weighs at the present state: it must not advance the schedule
        entropy = self._fade_entropy(out) if train else None
        # The step is fed with the entropy (the rule of fade.weigh); with no entropy to feed, neither is.
        signals = {"entropy": entropy, "step": self.state.global_step} if entropy is not None else {}

        device = rewards_per_func.device
        n = rewards_per_func.shape[0]
        size = self.num_generations if train else self.num_generations_eval
        weights = self.reward_weights.to(device)
        rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        scorable = ~torch.isnan(rewards_per_func).all(dim=1)
        groups = torch.div(torch.arange(n, device=device), size, rounding_mode="floor")
        advantages = torch.zeros_like(rewards)
        if not bool(scorable.any()):
            # Every completion was declined: nothing to weigh, every advantage 0. The generation's signals
            # are fed all the same (the schedule hears the step), and nothing is logged under fade/: no
            # batch was weighed, so there is no schedule or mass of this step to report.
            observe(est, **signals)
            weighing = None
        elif self.multi_objective_aggregation == "normalize_then_sum":
            # TRL's recipe, with fade's grpo at both stages: each reward function normalised within its
            # group (a None leaves that function out of the row), then the weighted sum over the batch.
            normalised = torch.full_like(rewards_per_func, torch.nan)
            for k in range(rewards_per_func.shape[1]):
                given = ~torch.isnan(rewards_per_func[:, k])
                if bool(given.any()):
                    normalised[given, k] = fade.weigh(est, rewards_per_func[given, k], groups[given],
                                                      advance=train).advantages
            summed = (normalised * weights.unsqueeze(0)).nansum(dim=1)
            final = fade.weigh(est, summed[scorable], torch.zeros_like(groups[scorable]), advance=train, **signals)
            advantages[scorable] = final.advantages
            # What the loss receives, measured against the completions' rewards and groups.
            weighing = measure(est, advantages[scorable], rewards[scorable], groups[scorable], final.record)
        else:

            def lengths() -> torch.Tensor:
                gathered = self.accelerator.gather(out["completion_mask"].sum(dim=1).to(rewards.dtype))
                # An empty completion still holds its EOS token in TRL's mask; 1 keeps opo's weights defined.
                return gathered[scorable].clamp_min(1)

            weighing = fade.weigh(est, rewards[scorable], groups[scorable], inputs={"lengths": lengths},
                                  advance=train, **signals)
            advantages[scorable] = weighing.advantages
        local = out["advantages"].numel()
        start = self.accelerator.process_index * local
        out["advantages"] = advantages[start:start + local].to(out["advantages"].dtype)

        # TRL logged its own advantages of the whole batch for the completion table: swap in ours.
        replace_logged_advantages(self, n, advantages.tolist())

        self.fade_last = {"rewards": rewards, "groups": groups, "advantages": advantages, "scorable": scorable}
        for key, value in ({} if weighing is None else weighing.metrics()).items():
            self._metrics[mode][key].append(value)
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

    # -- checkpoints -------------------------------------------------------------------------

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = os.path.join(
                self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
            )
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

