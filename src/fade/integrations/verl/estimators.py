"""fade's estimators as verl advantage estimators: their verl names, fade's counterparts of verl's
own estimators, the parameters a run passes (``+algorithm.fade.KEY=VALUE``) and verl's settings
they read, and the function verl calls for each name, with verl's signature.

Names that start with ``fade`` keep their name (``fade``, ``fade_alpha``, ...), the others get a
``fade_`` prefix (``fade_grpo``, ``fade_maxrl``, ``fade_passk``, ...) so they never clash with
verl's own. fade's counterparts of verl's estimators (:data:`COUNTERPARTS`: ``fade_grpo`` for
``grpo``, ``fade_reinforce_pp`` for ``reinforce_plus_plus``, ...) are drop-in: swapping the name
gives verl's advantages and returns on every input verl accepts, reading every verl setting verl's
function reads (``norm_adv_by_std_in_grpo``, ``gamma``, ``epsilon``, verl's one-rollout and
multi-output session conventions, per-token returns), with verl's signature for direct calls; a
setting that cannot be honoured raises one line naming it and the estimator. fade's own estimators
(FADE, maxrl, ...) score each response by the sum of its token rewards, as verl's outcome
estimators do. Estimators live in this process (verl computes advantages in the trainer's
process), one per (name, parameters), so FADE's state carries over from step to step;
:func:`estimator_for` returns the one verl's call will use.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo import core_algos

import fade
from fade.integrations import verl_preflight
from fade.integrations.verl.patches import patch
from fade.registry import check_inputs, check_real_valued, check_signal
from fade.weighing import Weighing, measure

__all__ = [
    "COUNTERPARTS",
    "ENTROPY_METRIC",
    "TRAINER_NAME",
    "Counterpart",
    "check_run",
    "counterpart",
    "current_estimators",
    "estimator_for",
    "fade_metrics",
    "feed",
    "fade_name",
    "is_fade_name",
    "params_from_config",
    "register",
    "registered_names",
    "reset_estimators",
    "resolve_params",
    "setting",
    "verl_name",
]

logger = logging.getLogger(__name__)

#: The metric verl's v1 trainer writes in its old-log-prob pass: the mean token entropy of the
#: current batch under the current policy, aggregated with the actor's ``loss_agg_mode``.
ENTROPY_METRIC = "actor/entropy"

#: ``trainer.v1.trainer_mode`` value that selects :class:`FadeTrainer`.
TRAINER_NAME = "fade"


# -- names ---------------------------------------------------------------------------------------


def verl_name(name: str) -> str:
    """The name under which fade's estimator ``name`` is registered in verl."""
    return name if name.startswith("fade") else f"fade_{name}"


def _name_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for name in fade.available():
        v = verl_name(name)
        if v in table:
            raise ValueError(f"fade estimators {table[v]!r} and {name!r} would both be registered in verl as {v!r}")
        table[v] = name
    # Names that follow a verl estimator's own name where two of verl's differ only in convention
    # (rloo_vectorized gives a lone rollout 0, rloo its reward; grpo_vectorized reads no config).
    for vname, cp in COUNTERPARTS.items():
        table.setdefault(vname, cp.estimator)
    return table


def registered_names() -> dict[str, str]:
    """verl name -> fade name, for every fade estimator and every counterpart of a verl estimator
    (``{"fade": "fade", "fade_grpo": "grpo", "fade_rloo_vectorized": "rloo", ...}``)."""
    return dict(_name_table())


def is_fade_name(name: Any) -> bool:
    """Whether ``name`` (an ``algorithm.adv_estimator`` value) is one of fade's verl names."""
    return isinstance(name, str) and name in _name_table()


def fade_name(name: str) -> str:
    """fade's estimator for ``name``, a verl name (``fade_grpo``) or a fade name (``grpo``)."""
    table = _name_table()
    if name in table:
        return table[name]
    if name in fade.available():
        return name
    raise ValueError(f"{name!r} is not a fade estimator in verl; fade's verl names: {', '.join(sorted(table))}")


# -- verl's settings and fade's counterparts of verl's estimators --------------------------------


def setting(config: Any, key: str, default: Any = None) -> Any:
    """``key`` of verl's algorithm config, whatever form verl passes it in.

    verl 0.9's trainers pass an OmegaConf ``DictConfig``; callers of ``compute_advantage`` may pass
    a plain dict, verl's ``AlgoConfig`` dataclass (a Mapping) or a ``SimpleNamespace`` (verl's own
    tests do). None means no config. Anything else raises ValueError.
    """
    if config is None:
        return default
    if isinstance(config, Mapping) or hasattr(config, "get"):
        value = config.get(key, default)
    elif hasattr(config, "__dict__"):
        value = getattr(config, key, default)
    else:
        raise ValueError(
            "the algorithm config must be a mapping, DictConfig, AlgoConfig or namespace, "
            f"got {type(config).__name__}"
        )
    return default if value is None else value


def params_from_config(config: Any) -> dict[str, Any]:
    """The estimator parameters in ``config.fade`` (``+algorithm.fade.k=8`` on verl's command line).

    ``config`` is what verl passes as the algorithm config: an OmegaConf ``DictConfig`` (verl
    0.9's trainers), a plain mapping, verl's ``AlgoConfig`` dataclass (a Mapping too), a
    ``SimpleNamespace``, or None.
    """
    section = setting(config, "fade")
    if section is None:
        return {}
    if isinstance(section, DictConfig):
        section = OmegaConf.to_container(section, resolve=True)
    elif not isinstance(section, Mapping) and hasattr(section, "__dict__") and not isinstance(section, (str, bytes)):
        section = vars(section)
    if not isinstance(section, Mapping):
        raise ValueError(
            f"algorithm.fade must map estimator parameters to values (e.g. +algorithm.fade.k=8), got {section!r}"
        )
    return {str(k): v for k, v in section.items()}


@dataclass(frozen=True)
class Counterpart:
    """How one of fade's verl names stands in for one of verl's estimators.

    Swapping ``algorithm.adv_estimator=<verl>`` for ``<name>`` gives verl's advantages and returns:
    fade's ``estimator`` with ``defaults`` (parameters that pick verl's conventions), reading the
    verl settings verl's function reads, with verl's signature for direct calls.
    """

    name: str
    verl: str
    estimator: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    #: Where verl's function reads ``norm_adv_by_std_in_grpo``: "either" (verl's grpo: the keyword,
    #: which verl's trainers set from the algorithm config), "keyword" (grpo_vectorized, which
    #: compute_advantage calls without it), "config" (grpo_passk), or None (not read).
    norm: str | None = None
    #: verl's ``epsilon`` is the estimator's ``eps`` (True), or verl's function takes it and never
    #: reads it (False), and fade refuses it rather than ignore it.
    epsilon: bool = False
    #: verl's v1 trainer scores each agent-loop session by its final output (verl's ``grpo``).
    sessions: bool = False
    #: Token-level returns: "discounted" (REINFORCE++: reward-to-go with ``gamma``, whitened over
    #: tokens), "reward_to_go" (ReMax), or None for an outcome estimator (one value per response).
    tokens: str | None = None
    #: verl's call takes no ``index`` (it groups nothing).
    ungrouped: bool = False
    #: verl's function groups by ``verl.utils.groupwise.as_torch_index`` (grpo_vectorized): uids that
    #: read as integers are those integers, so "01" and "1" are one group there.
    numeric_uids: bool = False


_VERL = {"lone": "verl"}

#: fade's verl name -> how it stands in for verl's estimator of the same formula.
COUNTERPARTS: dict[str, Counterpart] = {
    c.name: c
    for c in (
        Counterpart("fade_grpo", "grpo", "grpo", _VERL, norm="either", epsilon=True, sessions=True),
        Counterpart("fade_grpo_vectorized", "grpo_vectorized", "grpo", _VERL, norm="keyword", epsilon=True,
                    numeric_uids=True),
        Counterpart("fade_rloo", "rloo", "rloo", _VERL),
        Counterpart("fade_rloo_vectorized", "rloo_vectorized", "rloo", {"lone": "zero"}),
        Counterpart("fade_opo", "opo", "opo", _VERL),
        Counterpart("fade_gpg", "gpg", "gpg", _VERL),
        Counterpart("fade_grpo_passk", "grpo_passk", "grpo_passk", norm="config", epsilon=True),
        Counterpart("fade_reinforce_pp", "reinforce_plus_plus", "reinforce_pp", tokens="discounted", ungrouped=True),
        Counterpart("fade_reinforce_pp_baseline", "reinforce_plus_plus_baseline", "reinforce_pp_baseline", _VERL),
        Counterpart("fade_remax", "remax", "remax", tokens="reward_to_go", ungrouped=True),
    )
}


def counterpart(name: str) -> Counterpart | None:
    """How verl name ``name`` stands in for one of verl's estimators; None for fade's own (FADE, maxrl, ...)."""
    return COUNTERPARTS.get(name)


def _refuse(vname: str, what: str) -> ValueError:
    return ValueError(f"{vname}: {what}")


def resolve_params(
    name: str, config: Any = None, *, epsilon: float | None = None, norm_adv_by_std_in_grpo: bool | None = None
) -> dict[str, Any]:
    """The parameters of fade's estimator for verl name ``name`` under verl's settings.

    ``+algorithm.fade.*`` over the counterpart's defaults, then the verl settings the counterpart
    reads: ``norm_adv_by_std_in_grpo`` (config or keyword) as grpo's ``scale`` or grpo_passk's
    ``norm_by_std``, and the ``epsilon`` keyword as ``eps``. A setting that contradicts a fade
    parameter, or that the estimator cannot honour, raises ValueError naming both.
    """
    vname = verl_name(fade_name(name)) if name not in COUNTERPARTS else name
    cp = COUNTERPARTS.get(name)
    given = params_from_config(config)
    params = {**(cp.defaults if cp else {}), **given}
    if cp is None:
        if epsilon is not None:
            raise _refuse(vname, f"verl's epsilon={epsilon!r} has no meaning for fade's {fade_name(name)!r}, "
                                 "which has no eps; drop it")
        return params
    if cp.norm is not None:
        norm = _norm(vname, cp, setting(config, "norm_adv_by_std_in_grpo"), norm_adv_by_std_in_grpo)
        key, value = ("scale", "group" if norm else "none") if cp.estimator == "grpo" else ("norm_by_std", norm)
        if key in given and given[key] != value:
            raise _refuse(vname, f"norm_adv_by_std_in_grpo={norm} means {key}={value!r}, but "
                                 f"algorithm.fade.{key}={given[key]!r}; set one of them")
        params[key] = value
    if epsilon is not None and not cp.epsilon:
        raise _refuse(vname, f"verl's {cp.verl} takes epsilon={epsilon!r} but never reads it; fade refuses it rather "
                             "than ignore it: drop it")
    if epsilon is not None:
        if "eps" in given and given["eps"] != epsilon:
            raise _refuse(vname, f"epsilon={epsilon!r} contradicts algorithm.fade.eps={given['eps']!r}")
        params["eps"] = epsilon
    return params


def _norm(vname: str, cp: Counterpart, in_config: Any, keyword: bool | None) -> bool:
    """Whether to divide by the std, read where verl's function reads it (see :class:`Counterpart`)."""
    for value in (in_config, keyword):
        if value is not None and not isinstance(value, bool):
            raise _refuse(vname, f"norm_adv_by_std_in_grpo must be True or False, got {value!r}")
    if in_config is not None and keyword is not None and in_config != keyword:
        raise _refuse(vname, f"the norm_adv_by_std_in_grpo={keyword} keyword contradicts the algorithm config's "
                             f"norm_adv_by_std_in_grpo={in_config}")
    if cp.norm == "keyword":
        if keyword is None and in_config is False:
            raise _refuse(vname, f"algorithm.norm_adv_by_std_in_grpo=False is not read by verl's {cp.verl}, which "
                                 "divides by the std whenever compute_advantage calls it; use fade_grpo for Dr. GRPO")
        return True if keyword is None else keyword
    if cp.norm == "config":
        effective = True if in_config is None else in_config
        if keyword is not None and keyword != effective:
            raise _refuse(vname, f"verl's {cp.verl} reads norm_adv_by_std_in_grpo from the algorithm config "
                                 f"({effective}) and not the keyword ({keyword}); set it in the config")
        return effective
    # verl's grpo reads the keyword, which its trainers set from the config: either one.
    return next((v for v in (keyword, in_config) if v is not None), True)


# One estimator per (fade name, parameters), so that FADE's state lives across verl's calls; and the
# weighing of each one's latest call, for its metrics.
_ESTIMATORS: dict[tuple[str, str], fade.Estimator] = {}
_LAST: dict[tuple[str, str], Weighing] = {}
_WARNED_NO_ENTROPY: set[tuple[str, str]] = set()
# The training signals FadeTrainer hands an estimator (by its id) for its next weighing: verl calls the
# estimator's function later in the step, with verl's signature, which carries none.
_SIGNALS: dict[int, dict[str, float]] = {}


def _key(name: str, params: Mapping[str, Any]) -> tuple[str, str]:
    return name, json.dumps(dict(params), sort_keys=True, default=repr)


def _full_params(name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    cp = COUNTERPARTS.get(name)
    return {**(cp.defaults if cp else {}), **dict(params or {})}


def estimator_for(name: str, params: Mapping[str, Any] | None = None) -> fade.Estimator:
    """The estimator verl's call of ``name`` with ``params`` uses in this process (built once).

    ``name`` is a verl name (``fade``, ``fade_grpo``) or a fade name (``grpo``); a verl name's
    counterpart defaults (``lone="verl"``) come first. Unknown parameters raise fade's ValueError
    naming them.
    """
    fname = fade_name(name)
    full = _full_params(name, params)
    key = _key(fname, full)
    est = _ESTIMATORS.get(key)
    if est is None:
        try:
            est = fade.estimator(fname, **full)
        except ValueError as exc:
            raise ValueError(f"{exc} (verl: parameters come from algorithm.fade)") from None
        _ESTIMATORS[key] = est
    return est


def current_estimators() -> dict[tuple[str, str], fade.Estimator]:
    """Every estimator built in this process, keyed by (fade name, parameters as sorted JSON)."""
    return dict(_ESTIMATORS)


def reset_estimators() -> None:
    """Forget every estimator of this process: the next call starts from fresh state (tests, sweeps)."""
    _ESTIMATORS.clear()
    _LAST.clear()
    _WARNED_NO_ENTROPY.clear()
    _SIGNALS.clear()


def feed(est: fade.Estimator, **signals: float) -> None:
    """Hand ``est`` the training signals of the batch it weighs next (``entropy=``, ``step=``, checked
    here): verl's call of its function observes them before weighing (:func:`fade.weigh`)."""
    for key, value in signals.items():
        check_signal(key, value)
    _SIGNALS[id(est)] = dict(signals)


def fade_metrics(name: str, params: Mapping[str, Any] | None = None) -> dict[str, float]:
    """``fade/...`` metrics of the latest call of ``name`` with ``params`` in this process.

    Gradient-mass diagnostics of the batch (positive and negative mass, sign balance, difficulty,
    effective sample fraction) for every estimator, plus FADE's schedule (alpha, delta, p_hat,
    h_hat, h_star). Undefined values (the sign balance of a batch with no signal, h_hat before any
    entropy) are left out rather than logged as NaN. Empty before the first call.
    """
    weighing = _LAST.get(_key(fade_name(name), _full_params(name, params)))
    return {} if weighing is None else weighing.metrics()


def check_run(config: Any) -> None:
    """Refuse, before a run's first step, a verl run whose settings the chosen fade estimator cannot honour.

    ``config`` is verl's whole trainer config. Builds the estimator of ``algorithm.adv_estimator``
    (parameters and verl's settings checked), and refuses an estimator that reads rewards as
    successes without a success option when the scores are not in [0, 1]: a reward model
    (``reward.reward_model.enable``) or a KL penalty in the reward (``algorithm.use_kl_in_reward``).
    ``FadeTrainer`` (verl's v1 trainer) calls it; the v1 trainer computes no ``reward_baselines``,
    so ``fade_remax`` is refused there too. Reward and resume settings: :mod:`fade.integrations.verl_preflight`."""
    verl_preflight.check(config)
    algorithm = config.algorithm
    name = setting(algorithm, "adv_estimator")
    if not is_fade_name(name):
        return
    est = estimator_for(name, resolve_params(name, algorithm))
    _check_real_valued(name, est, algorithm, reward_model=bool(OmegaConf.select(config, "reward.reward_model.enable")))
    check_inputs(est, {"lengths"}, who=f"{name}:",
                 called={"baseline_rewards": "verl's reward_baselines (a greedy decode's reward per prompt)"},
                 where="only verl's legacy trainer computes, and only for its own adv_estimator=remax")


def _check_real_valued(vname: str, est: fade.Estimator, algorithm: Any, *, reward_model: bool = False) -> None:
    sources = []
    if setting(algorithm, "use_kl_in_reward", False):
        sources.append("algorithm.use_kl_in_reward=True subtracts a KL penalty from every score")
    if reward_model:
        sources.append("reward.reward_model.enable=True scores responses with a reward model")
    check_real_valued(est, " and ".join(sources) or None, who=f"{vname}: fade's {est.name!r}", what="score",
                      hint="set +algorithm.fade.success_threshold=T or "
                           "+algorithm.fade.reward_min=LO +algorithm.fade.reward_max=HI")


# -- the functions verl calls ----------------------------------------------------------------------


def _discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """REINFORCE++'s per-token return in verl: the reward-to-go discounted by ``gamma`` over response
    tokens only. A token outside the mask (an observation span between turns) has return 0, adds
    no reward and no discount step: the running return passes through it unchanged."""
    out = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    inside = mask.bool()
    for t in range(rewards.shape[1] - 1, -1, -1):
        step = rewards[:, t] + gamma * running
        out[:, t] = step * mask[:, t]
        running = torch.where(inside[:, t], step, running)
    return out


def _per_response(token_adv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One advantage per response for the diagnostics: the mean over its tokens (0 for an empty one)."""
    m = mask.to(token_adv.dtype)
    return (token_adv * m).sum(-1) / m.sum(-1).clamp_min(1)


def _check_shapes(vname: str, token_level_rewards: torch.Tensor, response_mask: torch.Tensor) -> None:
    if token_level_rewards.dim() != 2 or response_mask.shape != token_level_rewards.shape:
        raise ValueError(
            f"{vname}: expected token_level_rewards and response_mask of one shape (batch, response_length), "
            f"got {tuple(token_level_rewards.shape)} and {tuple(response_mask.shape)}"
        )


def _verl_fn(vname: str, name: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """verl's estimator signature around fade's estimator ``name``, registered as ``vname``."""
    spec = fade.spec(name)
    cp = COUNTERPARTS.get(vname)

    def advantage(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        index: Any,
        config: Any,
        reward_baselines: torch.Tensor | None,
        epsilon: float | None,
        norm_adv_by_std_in_grpo: bool | None,
        f_norm: float = 1.0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        _check_shapes(vname, token_level_rewards, response_mask)
        params = resolve_params(vname, config, epsilon=epsilon, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
        est = estimator_for(vname, params)
        _check_real_valued(vname, est, config)
        key = _key(name, _full_params(vname, params))
        signals = _SIGNALS.pop(id(est), {})  # what FadeTrainer fed for this batch
        if est.awaiting_entropy and "entropy" not in signals and key not in _WARNED_NO_ENTROPY:
            _WARNED_NO_ENTROPY.add(key)
            logger.warning(
                "%s has been given no entropy, so its sign knob delta stays 1; run verl with "
                "trainer.v1.trainer_mode=%s so that the trainer feeds it metrics['%s']",
                vname, TRAINER_NAME, ENTROPY_METRIC,
            )
        if index is None and not (cp is not None and cp.ungrouped):
            raise ValueError(
                f"{vname}: verl passed no group ids; the batch needs its prompt uids (non_tensor_batch['uid'])"
            )
        check_inputs(est, {"lengths", *(["baseline_rewards"] if reward_baselines is not None else [])}, who=vname,
                     called={"baseline_rewards": "verl's reward_baselines (the greedy-decode reward per prompt that "
                                                 "verl's legacy trainer computes for adv_estimator=remax)"},
                     where="this batch lacks")
        mask = response_mask.to(token_level_rewards.dtype)
        with torch.no_grad():
            try:
                if cp is not None and cp.tokens == "discounted":
                    returns = _discounted_returns(
                        token_level_rewards, response_mask, float(setting(config, "gamma", 1.0))
                    )
                    inside = response_mask.bool()
                    token_adv = torch.zeros_like(returns)
                    weighing = fade.weigh(est, returns[inside], 1, **signals)
                    token_adv[inside] = weighing.advantages
                elif cp is not None and cp.tokens == "reward_to_go":
                    returns = (token_level_rewards * response_mask).flip(dims=[-1]).cumsum(dim=-1).flip(dims=[-1])
                    baseline = (reward_baselines.to(returns.dtype).unsqueeze(-1) * mask).reshape(-1)
                    weighing = fade.weigh(est, returns.reshape(-1), 1, inputs={"baseline_rewards": baseline}, **signals)
                    token_adv = weighing.advantages.view_as(returns)
                else:
                    # An outcome estimator scores a response by the sum of its token rewards (the outcome
                    # reward sits on the last token) and broadcasts its advantage over the response's tokens.
                    scores = token_level_rewards.sum(dim=-1)
                    if cp is not None and cp.numeric_uids:
                        from verl.utils.groupwise import as_torch_index

                        index = as_torch_index(index, device=scores.device)
                    weighing = fade.weigh(est, scores, index, **signals, inputs={
                        "lengths": lambda: response_mask.sum(dim=-1), "baseline_rewards": reward_baselines})
                    if f_norm != 1.0:  # gpg: what verl applies is the advantage over f_norm
                        weighing = measure(est, weighing.advantages / f_norm, scores, index, weighing.record)
                    _LAST[key] = weighing
                    token_adv = weighing.advantages.unsqueeze(-1) * response_mask
                    return token_adv, token_adv
            except ValueError as exc:
                raise ValueError(f"{vname} (fade's {name!r}): {exc}") from exc
            # The diagnostics are of what verl applies: one advantage per response against its score.
            scores = token_level_rewards.sum(dim=-1)
            groups = index if index is not None else torch.arange(scores.numel())
            _LAST[key] = measure(est, _per_response(token_adv, response_mask), scores, groups, weighing.record)
        return token_adv, returns

    # verl's own signature for each counterpart, so that a positional or keyword call lands as in verl.
    if cp is not None and cp.verl in ("grpo", "grpo_vectorized", "grpo_passk"):

        def compute_advantage(token_level_rewards, response_mask, index=None, epsilon=None,
                              norm_adv_by_std_in_grpo=None, config=None, reward_baselines=None):
            return advantage(token_level_rewards, response_mask, index, config, reward_baselines, epsilon,
                             norm_adv_by_std_in_grpo)

    elif cp is not None and cp.verl == "gpg":

        def compute_advantage(token_level_rewards, response_mask, index=None, epsilon=None, f_norm=1.0, alpha=None,
                              config=None, reward_baselines=None):
            if alpha is not None:
                raise _refuse(vname, f"verl's gpg takes alpha={alpha!r} but replaces it with N / M before use; fade "
                                     "refuses it rather than ignore it: drop it")
            return advantage(token_level_rewards, response_mask, index, config, reward_baselines, epsilon, None,
                             f_norm=_finite(vname, "f_norm", f_norm))

    elif cp is not None and cp.verl == "reinforce_plus_plus":

        def compute_advantage(token_level_rewards, response_mask, config=None, index=None, reward_baselines=None,
                              epsilon=None):
            # verl's takes neither index nor epsilon (its **kwargs swallow them); the whitening eps is 1e-8.
            return advantage(token_level_rewards, response_mask, index, config, reward_baselines, epsilon, None)

    elif cp is not None and cp.verl == "remax":

        def compute_advantage(token_level_rewards, reward_baselines=None, response_mask=None, config=None,
                              index=None, epsilon=None):
            if response_mask is None:
                raise TypeError(f"{vname} needs response_mask")
            return advantage(token_level_rewards, response_mask, index, config, reward_baselines, epsilon, None)

    elif cp is not None:

        def compute_advantage(token_level_rewards, response_mask, index=None, epsilon=None, config=None,
                              reward_baselines=None):
            # verl's rloo, opo and reinforce_plus_plus_baseline take epsilon and never read it.
            return advantage(token_level_rewards, response_mask, index, config, reward_baselines, epsilon, None)

    else:

        def compute_advantage(token_level_rewards, response_mask, index=None, epsilon=None, config=None,
                              reward_baselines=None):
            return advantage(token_level_rewards, response_mask, index, config, reward_baselines, epsilon, None)

    compute_advantage.__name__ = compute_advantage.__qualname__ = f"compute_{vname}_advantage"
    peer = f"; verl's {cp.verl}" if cp is not None else ""
    compute_advantage.__doc__ = f"verl advantage estimator {vname!r}: fade's {name!r} ({spec.summary}{peer})"
    compute_advantage.fade_name = name  # marks the function as ours, for idempotent registration
    return compute_advantage


def _finite(vname: str, key: str, value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or x == 0:
        raise ValueError(f"{vname}: {key} must be a finite non-zero number, got {value!r}")
    return x


def register() -> list[str]:
    """Register every fade estimator in verl's advantage registry; returns the verl names.

    Safe to call again, and safe when this module is imported again (reloaded): an entry that
    fade registered earlier is replaced by this module's function. A name that another package
    took raises ValueError.
    """
    names = []
    for vname, name in _name_table().items():
        fn = _verl_fn(vname, name)
        existing = core_algos.ADV_ESTIMATOR_REGISTRY.get(vname)
        if existing is not None and getattr(existing, "fade_name", None) == name:
            # verl's register_adv_est refuses a second function under a name; this one is ours.
            patch("verl.trainer.ppo.core_algos", "ADV_ESTIMATOR_REGISTRY", fn, key=vname)
        elif existing is not None:
            raise ValueError(f"verl already has an advantage estimator {vname!r} that is not fade's: {existing!r}")
        else:
            core_algos.register_adv_est(vname)(fn)
        names.append(vname)
    return names
