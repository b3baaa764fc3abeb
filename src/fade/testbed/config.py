"""The testbed's configs: the settings of a training run and of a pretraining, each field with its flag.

:class:`TrainConfig` is everything an RL run depends on and :class:`PretrainConfig` everything a
base policy's pretraining does; each field is declared with :func:`fade.options.option`, so its
help and default are those of its ``fade train`` / ``fade pretrain`` flag (the fields' order is
the help's). This module imports the standard library and the core only, so the command line
can describe the flags without the testbed extra.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fade import losses
from fade.options import flags, option
from fade.specs import parse_params, parse_spec

from .datasets import VERIFIERS
from .tasks import TASKS, get_task, select_difficulties

__all__ = [
    "DATA_FORMAT",
    "LOSS_AGGREGATIONS",
    "LOSS_AGG_ALIASES",
    "OLD_LOGPROBS",
    "OPTIMIZERS",
    "POOL_SEED",
    "PREDATES",
    "RESUME_MAY_CHANGE",
    "PretrainConfig",
    "TrainConfig",
    "resume_rule",
]

#: The optimizers ``TrainConfig.optimizer`` names: AdamW (with the adam_* settings), or plain SGD
#: (no momentum, no dampening, weight decay only if asked), the gradient step first-order theory
#: such as the entropy formula of docs/method.md, section 4, is about.
OPTIMIZERS = ("adamw", "sgd")
#: Old names of loss aggregations, kept so that runs recorded with them still resume: ``seq-mean``
#: (each response's token mean, averaged over the responses) is verl's ``seq-mean-token-mean``.
LOSS_AGG_ALIASES = {"seq-mean": "seq-mean-token-mean"}
#: The loss aggregations ``TrainConfig.loss_agg`` names: verl's five (``fade.losses.AGGREGATIONS``)
#: and the old names of :data:`LOSS_AGG_ALIASES`.
LOSS_AGGREGATIONS = (*losses.AGGREGATIONS, *LOSS_AGG_ALIASES)
#: The symmetric PPO clip ``clip_eps`` defaults to (verl's clip_ratio_low = clip_ratio_high).
CLIP_EPS = 0.2
#: Where the update's old log-probs and the step's entropy come from (``TrainConfig.old_logprobs``):
#: what sampling recorded for each token, or a recomputation in one no-grad forward (the order
#: verl uses when its rollout engine differs from its training engine).
OLD_LOGPROBS = ("sampler", "recompute")
#: How many times a step may draw prompts when the zero-variance filter is on, by default.
FILTER_MAX_DRAWS = 10
#: The seed of the training pool's one draw (``train_pool``): fixed, not the run's seed, so that
#: every seed of an experiment trains on the same pool.
POOL_SEED = 12345

#: What a ``--data`` file holds (docs/verifiers.md has the code verifier's test formats).
DATA_FORMAT = (
    "one JSON object a line: 'prompt' and 'answer' (strings), optionally 'id', 'difficulty' (a positive integer "
    "bucket, 1 when absent) and 'split' ('train' or 'test'; without it 20% of the prompts go to test, by a hash "
    "of the prompt); with --verifier code a line may hold its tests in place of 'answer' (docs/verifiers.md)"
)


def _estimator_args(text: str) -> dict[str, Any]:
    return parse_params(text, where=f"--estimator-args {text}")


def _difficulties(text: str) -> list[int]:
    """``2`` or ``2,3``: the bucket numbers, in increasing order."""
    try:
        return sorted(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"--difficulties {text}: expected bucket numbers separated by commas, e.g. 2 or 2,3") from None


@dataclass(kw_only=True)
class TrainConfig:
    """Everything a run depends on; saved as ``run.json`` next to the metrics."""

    task: str = option("arithmetic", "the built-in task", choices=TASKS)
    estimator: str = option("fade", "a registered estimator, with parameters if wanted (power:alpha=3)", metavar="SPEC")
    estimator_args: dict[str, Any] = option(
        default_factory=dict, help="more estimator parameters, merged with the spec's (default: none)",
        metavar="K=V[,K=V...]", parse=_estimator_args)
    steps: int = option(400, "training steps; with --resume, more extends the run", metavar="N")
    seed: int = option(0, "seeds every random draw of the run")
    out: str = option(help="the run's folder", metavar="DIR")
    eval_every: int = option(100, "evaluate every N steps; 0: never", metavar="N")
    eval_prompts: int = option(200, "held-out prompts per evaluation", metavar="N")
    eval_samples: int = option(64, "samples per held-out prompt (the n of pass@k)", metavar="N")
    model: str | None = option(None, "a local transformers causal LM (default: the task's shipped base policy)",
                               metavar="DIR")
    data: str | None = option(
        None,
        f"your problems in place of --task: {DATA_FORMAT} (default: none, the built-in task)",
        metavar="FILE.jsonl",
    )
    verifier: str | None = option(
        None, f"how --data answers are checked: {', '.join(VERIFIERS)} (math needs the 'math' extra) "
              "(default: none; required with --data)", choices=VERIFIERS, metavar="NAME")
    difficulties: list[int] | None = option(
        None, "train and evaluate on these difficulty buckets of the task only, e.g. 2 or 2,3: the training draws "
              "(and --train-pool) and the held-out evaluation set both come from them (default: none, every bucket)",
        metavar="D[,D...]", parse=_difficulties)
    train_pool: int | None = option(
        None, f"train on a fixed pool of N problems of the train split, drawn once (stratified over the buckets, "
              f"with the fixed seed {POOL_SEED}, so every --seed trains on the same pool); each step's prompts are "
              "a draw of distinct problems from it with the step's seed. The held-out evaluation set is unchanged "
              "(default: none, the whole train split)", metavar="N")
    max_new_tokens: int | None = option(
        None,
        "completion length cap (default: the task's longest answer; 4x it, at least 16, with --model)",
        metavar="N",
    )
    device: str = option("auto", "auto, cpu, cuda or cuda:N")
    prompts_per_step: int = option(32, "prompts drawn per step", metavar="N")
    group_size: int = option(8, "completions sampled per prompt", metavar="G")
    temperature: float = option(1.0, "sampling temperature of the rollouts", metavar="T")
    filter_zero_variance: bool = option(
        False, "DAPO's dynamic sampling: drop the groups whose raw rewards all agree and draw more prompts until "
               "--prompts-per-step groups are kept or --filter-max-draws draws are made (then train on what was kept)")
    filter_max_draws: int = option(FILTER_MAX_DRAWS, "draws of prompts a step may make with --filter-zero-variance, "
                                                     "the first included", metavar="N")
    optimizer: str = option(
        "adamw",
        "adamw, or sgd: plain gradient steps (no momentum), as first-order theory assumes "
        "(--grad-clip still clips; the --adam-* flags apply to adamw only)",
        choices=OPTIMIZERS,
    )
    lr: float = option(1e-4, "learning rate")
    weight_decay: float = option(0.0, "weight decay (AdamW's decoupled decay; an L2 term for sgd)", metavar="WD")
    adam_beta1: float = option(0.9, "AdamW beta1", metavar="B1")
    adam_beta2: float = option(0.99, "AdamW beta2", metavar="B2")
    adam_eps: float = option(1e-8, "AdamW epsilon", metavar="EPS")
    grad_clip: float = option(1.0, "gradient norm clip", metavar="NORM")
    epochs: int = option(1, "passes over each batch", metavar="N")
    minibatches: int = option(1, "optimizer steps per pass", metavar="N")
    policy_loss: str = option(
        "ppo_clip", f"the policy loss, a spec of fade.losses: {', '.join(losses.available('policy'))}, with parameters "
                    "if wanted (ppo_clip:clip_ratio_high=0.28 is DAPO's clip-higher; docs/losses.md)", metavar="SPEC")
    clip_eps: float = option(CLIP_EPS, "PPO ratio clip: the policy loss's clip_ratio_low and clip_ratio_high where its "
                                       "spec leaves them unset", metavar="EPS")
    loss_agg: str = option("token-mean", "how token losses become the loss, verl's loss_agg_mode (seq-mean is the old "
                                         "name of seq-mean-token-mean; seq-mean-token-sum-norm divides by the "
                                         "completion length cap)", choices=LOSS_AGGREGATIONS)
    entropy: str | None = option(
        None, f"an entropy term added to the loss, a spec of fade.losses: {', '.join(losses.available('entropy'))} "
              "(entropy_bonus:coef=0.001, adaptive_entropy:target_ratio=0.7) (default: none)", metavar="SPEC")
    kl_coef: float = option(0.0, "weight of KL to the base policy", metavar="C")
    old_logprobs: str = option(
        "sampler", "the old log-probs of the policy loss and the entropy fed to the estimator: 'sampler', what "
                   "sampling recorded for each token (the same policy and temperature; equal to a full forward's "
                   "within 1e-5), or 'recompute', one more no-grad forward over the batch before the update",
        choices=OLD_LOGPROBS)
    checkpoint_every: int = option(50, "checkpoint every N steps (and at the last)", metavar="N")
    progress: bool = option(True, "no progress bar")

    def validate(self) -> None:
        positive = (
            "steps",
            "prompts_per_step",
            "group_size",
            "epochs",
            "minibatches",
            "eval_samples",
            "checkpoint_every",
        )
        for key in positive:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
        if self.max_new_tokens is not None and (
            isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1
        ):
            raise ValueError(
                "max_new_tokens must be a positive integer (or None for the task's default), "
                f"got {self.max_new_tokens!r}"
            )
        for key in ("eval_every", "eval_prompts"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key} must be an integer >= 0 (0 turns evaluation off), got {value!r}")
        for key, low in (("lr", 0.0), ("temperature", 0.0), ("clip_eps", 0.0), ("grad_clip", 0.0)):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > low):
                raise ValueError(f"{key} must be a finite number > {low}, got {value!r}")
        for key in ("adam_beta1", "adam_beta2"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < 1.0):
                raise ValueError(f"{key} must be a number in [0, 1), got {value!r}")
        for key in ("weight_decay", "kl_coef", "adam_eps"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{key} must be a finite number >= 0, got {value!r}")
        if self.old_logprobs not in OLD_LOGPROBS:
            raise ValueError(f"old_logprobs must be one of {', '.join(map(repr, OLD_LOGPROBS))}, "
                             f"got {self.old_logprobs!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))}, got {self.optimizer!r}")
        if self.loss_agg not in LOSS_AGGREGATIONS:
            raise ValueError(f"loss_agg must be one of {', '.join(map(repr, LOSS_AGGREGATIONS))} ('seq-mean' is the "
                             f"old name of 'seq-mean-token-mean'), got {self.loss_agg!r}")
        rows = self.prompts_per_step * self.group_size
        if self.minibatches > rows:
            raise ValueError(f"minibatches ({self.minibatches}) cannot exceed the rollouts per step ({rows})")
        if not isinstance(self.filter_zero_variance, bool):
            raise ValueError(f"filter_zero_variance must be true or false, got {self.filter_zero_variance!r}")
        value = self.filter_max_draws
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"filter_max_draws must be a positive integer, got {value!r}")
        if self.filter_zero_variance and self.group_size < 2:
            raise ValueError("--filter-zero-variance needs --group-size 2 or more: a group of one rollout has no "
                             "rewards that could agree or differ, so nothing would be filtered")
        if not self.filter_zero_variance and value != FILTER_MAX_DRAWS:
            raise ValueError(f"--filter-max-draws {value} applies with --filter-zero-variance only: add it, or drop "
                             "--filter-max-draws")
        self._check_problem_selection()
        self.build_policy_loss()
        self.build_entropy_term()
        if self.data is not None and self.verifier is None:
            raise ValueError("--data needs --verifier NAME (how to score a completion against the answer)")
        if self.data is None and self.verifier is not None:
            raise ValueError(f"--verifier {self.verifier} scores --data files only; the built-in task {self.task!r} "
                             "has its own verifier: drop --verifier or give --data")

    def _check_problem_selection(self) -> None:
        """``difficulties`` and ``train_pool``. A --data file's buckets are checked once it is read
        (:func:`fade.testbed.session.prepare`)."""
        value = self.difficulties
        if value is not None:
            if not isinstance(value, (list, tuple)) or not value or any(
                isinstance(d, bool) or not isinstance(d, int) for d in value
            ):
                raise ValueError(f"difficulties must be a non-empty list of bucket numbers (or None for every "
                                 f"bucket), got {value!r}")
            if list(value) != sorted(set(value)):
                raise ValueError(f"difficulties must name each bucket once, in increasing order, got {value!r}")
            if self.data is None:
                select_difficulties(self.task, get_task(self.task).difficulties, value)
        value = self.train_pool
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"train_pool must be a positive integer (or None for the whole train split), "
                                 f"got {value!r}")
            if value < self.prompts_per_step:
                raise ValueError(f"--train-pool {value} is smaller than --prompts-per-step {self.prompts_per_step}: "
                                 "each step draws that many distinct problems from the pool; use a pool of at least "
                                 f"{self.prompts_per_step}")

    @property
    def aggregation(self) -> str:
        """``loss_agg`` by its name in ``fade.losses.AGGREGATIONS`` (an old name read as the new)."""
        return LOSS_AGG_ALIASES.get(self.loss_agg, self.loss_agg)

    def build_policy_loss(self) -> losses.PolicyLoss:
        """The policy loss ``policy_loss`` names, ``clip_eps`` filling the clip ratios its spec leaves
        unset. A ``clip_eps`` other than the default where no ratio is left to fill is refused."""
        name, given = parse_spec(self.policy_loss, what="policy loss")
        ratios = [k for k in ("clip_ratio_low", "clip_ratio_high") if k in losses.spec(name, "policy").defaults]
        unset = [k for k in ratios if k not in given]
        if self.clip_eps != CLIP_EPS and not unset:
            why = (f"{name} has no ratio clip" if not ratios else
                   "its spec sets both clip_ratio_low and clip_ratio_high")
            raise ValueError(f"--clip-eps {self.clip_eps} cannot apply to --policy-loss {self.policy_loss}: {why}; "
                             "drop --clip-eps")
        return losses.from_spec(self.policy_loss, "policy", **dict.fromkeys(unset, self.clip_eps))  # type: ignore[return-value]

    def build_entropy_term(self) -> losses.EntropyTerm | None:
        """The entropy term ``entropy`` names, or None."""
        if self.entropy is None:
            return None
        return losses.from_spec(self.entropy, "entropy")  # type: ignore[return-value]


@dataclass
class PretrainConfig:
    """Everything a pretraining depends on. The model's shape, the optimizer's schedule and the
    validation and test sets are set in code, not on the command line (``cli=False``)."""

    task: str = option(help="the built-in task", choices=TASKS)
    out: str = option(help="the policy's folder; replaced when done", metavar="DIR")
    seed: int = option(0, "seeds the initial weights and the training problems")
    max_steps: int = option(2000, "stop here if the target is never reached", metavar="N")
    batch_size: int = option(256, cli=False)
    lr: float = option(1e-3, cli=False)
    warmup: int = option(20, cli=False)
    hidden_size: int = option(128, cli=False)
    num_layers: int = option(4, cli=False)
    num_heads: int = option(4, cli=False)
    intermediate_size: int = option(512, cli=False)
    max_positions: int = option(64, cli=False)
    eval_every: int = option(50, cli=False)
    target_pass1: float = option(0.3, "stop once validation pass@1 reaches this", metavar="P")
    val_prompts: int = option(200, cli=False)
    val_samples: int = option(16, cli=False)
    test_prompts: int = option(200, cli=False)
    test_samples: int = option(64, cli=False)
    device: str = option("auto", "auto, cpu or cuda")
    progress: bool = option(True, "no progress bar")


#: What a run recorded before a setting existed did, where that is not the setting's default now:
#: a checkpoint without ``old_logprobs`` recomputed them, so resuming it with the sampler's is a change.
PREDATES = {"old_logprobs": "recompute"}

#: Settings a resumed run may change, because the training trajectory does not depend on them:
#: where the run lives and how it reports (out, progress, checkpoint_every, eval_every: evaluation
#: draws from its own generator), the device (a different one continues the run but draws other
#: random numbers from then on, so not bit for bit), and steps (to extend a run, or end it early;
#: never below the checkpoint's step). Any other change (lr, seed, group size, estimator and its
#: arguments, task, model, data, difficulties and train_pool, optimizer, eval_prompts and
#: eval_samples, which define what eval.jsonl measures) is refused (:func:`fade.testbed.trainer.resume_changes`).
RESUME_MAY_CHANGE = ("out", "progress", "checkpoint_every", "eval_every", "device", "steps")


def resume_rule() -> str:
    """The resume rule in words, as ``fade train --help`` prints it: the refused and the allowed
    flags are read from :data:`RESUME_MAY_CHANGE` and TrainConfig's fields, so the help says what
    :func:`~fade.testbed.trainer.resume_changes` enforces."""
    named = flags(TrainConfig)
    refused = [flag for key, flag in named.items() if key not in RESUME_MAY_CHANGE]
    allowed = [named[key] for key in RESUME_MAY_CHANGE if key != "out"]
    steps = (" (--steps to extend a run, or to end it early but not before the checkpoint)"
             if "steps" in RESUME_MAY_CHANGE else "")
    return (
        "--resume continues the run in --out from its checkpoint. It is refused, naming each changed "
        "setting with its old and new value, when a setting that changes what the run computes differs "
        f"from the checkpoint's: {', '.join(refused)}. {', '.join(allowed)} may change{steps}; the changes "
        "are recorded in resumes.jsonl. A different --device continues the run but not bit for bit. A "
        "checkpoint that fails its sha256 check or holds NaN or inf weights is refused; temporary files "
        "left by a kill are removed when the run restarts."
    )
