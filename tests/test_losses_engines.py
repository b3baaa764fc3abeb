"""fade.losses and fade.dynamic_sampling next to the engines' own code, on the same tensors.

verl 0.9.1: ``compute_policy_loss_vanilla`` / ``_clip_cov`` / ``_kl_cov`` with an ``ActorConfig``
(trainer/ppo/core_algos.py), ``ppo_loss`` for the entropy bonus (workers/utils/losses.py) and
``ReplayBuffer._dapo_filtered_keys`` for dynamic sampling (trainer/ppo/v1/replay_buffer.py).
TRL 1.16: ``GRPOTrainer._compute_loss``, which holds the clipped loss of each ``loss_type``, the
entropy bonus and the adaptive entropy coefficient's update, run on a stand-in trainer that feeds
it the log-probs and entropies of the test. Every comparison asserts the loss, the metrics and the
gradient with respect to the log-probs (and the entropies) within the engines' tolerance.
"""

from __future__ import annotations

import types
from collections import defaultdict

import pytest

pytest.importorskip("verl")
pytest.importorskip("trl")

import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.workers.config import ActorConfig, PolicyLossConfig  # noqa: E402
from verl.workers.utils.losses import ppo_loss  # noqa: E402

from fade import losses  # noqa: E402
from fade.dynamic_sampling import zero_variance_mask  # noqa: E402

SEEDS = range(6)
AGGS = losses.AGGREGATIONS
#: fade's metric -> verl's, per loss (verl 0.9.1's names).
VERL_METRICS = {
    "ppo_clip": {"clip_fraction": "actor/pg_clipfrac", "clip_fraction_lower": "actor/pg_clipfrac_lower",
                 "ppo_kl": "actor/ppo_kl"},
    "clip_cov": {"cov_clip_fraction": "actor/pg_clipfrac", "ppo_kl": "actor/ppo_kl"},
    "kl_cov": {"ppo_kl_abs": "actor/ppo_kl"},
}
VERL_MODE = {"ppo_clip": "vanilla", "clip_cov": "clip_cov", "kl_cov": "kl_cov"}
VERL_FN = {"ppo_clip": core_algos.compute_policy_loss_vanilla, "clip_cov": core_algos.compute_policy_loss_clip_cov,
           "kl_cov": core_algos.compute_policy_loss_kl_cov}
POLICY_LOSS_KEYS = ("clip_cov_ratio", "clip_cov_lb", "clip_cov_ub", "kl_cov_ratio", "ppo_kl_coef")


def batch(seed: int, *, spread: float = 0.5, per_token: bool = False, holes: bool = True, dtype=torch.float32):
    """Random response tokens: log-probs in (-4, 0), old ones ``spread`` away, advantages of both
    signs, entropies; rows of 0 to T tokens (right-padded, plus holes when ``holes``)."""
    g = torch.Generator().manual_seed(seed)
    b, t = (int(x) for x in torch.randint(1, 9, (2,), generator=g))
    mask = torch.arange(t)[None] < torch.randint(0, t + 1, (b,), generator=g)[:, None]
    if holes:
        mask &= torch.rand(b, t, generator=g) > 0.2
    if not bool(mask.any()):
        mask[0, 0] = True
    log_prob = -4 * torch.rand(b, t, generator=g, dtype=dtype)
    old = log_prob + spread * torch.randn(b, t, generator=g, dtype=dtype)
    adv = 2 * torch.randn((b, t) if per_token else (b,), generator=g, dtype=dtype)
    entropy = 3 * torch.rand(b, t, generator=g, dtype=dtype)
    return log_prob, old, adv, mask, entropy


def verl_config(loss: str, params: dict, **actor) -> ActorConfig:
    policy = {k: v for k, v in params.items() if k in POLICY_LOSS_KEYS}
    clip = {k: v for k, v in params.items() if k not in POLICY_LOSS_KEYS}
    return ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1,
                       policy_loss=PolicyLossConfig(loss_mode=VERL_MODE[loss], **policy), **clip, **actor)


def grad_of(loss: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    (g,) = torch.autograd.grad(loss, leaf, allow_unused=True)
    return torch.zeros_like(leaf) if g is None else g


def both(loss: str, params: dict, seed: int, agg: str, norms: dict | None = None, **shape) -> tuple:
    """(fade's, verl's) loss, metrics in verl's order and gradient, on one random batch."""
    log_prob, old, adv, mask, _ = batch(seed, **shape)
    adv_tokens = adv if adv.dim() == 2 else adv[:, None].expand_as(log_prob).contiguous()
    norms = norms or {}
    config = verl_config(loss, params)
    config.global_batch_info.update(
        {
            "batch_num_tokens": norms.get("tokens"),
            "global_batch_size": norms.get("sequences"),
            "loss_scale_factor": norms.get("horizon"),
        }
    )
    theirs_lp = log_prob.clone().requires_grad_()
    torch.manual_seed(seed)
    theirs, their_metrics = VERL_FN[loss](old, theirs_lp, adv_tokens, mask.float(), agg, config)
    ours_lp = log_prob.clone().requires_grad_()
    torch.manual_seed(seed)
    ours, our_metrics = losses.policy_loss(loss, **params)(ours_lp, old, adv, mask, agg=agg, **norms)
    names = VERL_METRICS[loss]
    assert set(our_metrics) >= set(names) and set(their_metrics) == set(names.values())
    ours_all = torch.cat([ours.detach().reshape(1), torch.tensor([our_metrics[k] for k in names]),
                          grad_of(ours, ours_lp).flatten()])
    theirs_all = torch.cat([theirs.detach().reshape(1), torch.tensor([their_metrics[v] for v in names.values()]),
                            grad_of(theirs, theirs_lp).flatten()])
    return ours_all, theirs_all, our_metrics


CLIP_SETTINGS = [
    {},  # verl's ActorConfig defaults: 0.2, 0.2, dual clip at 3
    {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28},  # DAPO's clip-higher
    {"clip_ratio_low": 0.1, "clip_ratio_high": 0.4, "clip_ratio_c": 1.5},
    {"clip_ratio_low": 1.0, "clip_ratio_high": 1.0, "clip_ratio_c": 10.0},
]


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize(
    "params", CLIP_SETTINGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults"
)
def test_ppo_clip_is_verls_vanilla_loss(parity, params, agg):
    """Loss, clip fractions, ppo_kl and gradient, over spreads where the clip, the dual clip and
    verl's +-20 clamp of the log-ratio bind, per-rollout and per-token advantages."""
    binds = {"clip": 0, "lower": 0}
    for seed in SEEDS:
        for spread, per_token in ((0.05, False), (0.6, False), (2.0, True), (30.0, False)):
            ours, theirs, metrics = both("ppo_clip", params, seed, agg, spread=spread, per_token=per_token)
            parity("verl", "compute_policy_loss_vanilla", "ppo_clip", f"{params or 'defaults'}, {agg}", ours, theirs)
            binds["clip"] += metrics["clip_fraction"] > 0
            binds["lower"] += metrics["clip_fraction_lower"] > 0
    assert binds["clip"] > 0 and binds["lower"] > 0  # the comparison reached both clips


@pytest.mark.parametrize("agg", AGGS)
def test_the_normalisers_are_verls_global_batch_info(parity, agg):
    norms = {"tokens": 37.0, "sequences": 11.0, "horizon": 24.0}
    for seed in SEEDS:
        for loss, params in (
            ("ppo_clip", {}),
            ("clip_cov", {"clip_cov_ratio": 0.1}),
            ("kl_cov", {"kl_cov_ratio": 0.1}),
        ):
            ours, theirs, _ = both(loss, params, seed, agg, norms, spread=0.6)
            parity("verl", VERL_FN[loss].__name__, loss, f"global batch info, {agg}", ours, theirs)


CLIP_COV_SETTINGS = [
    {},  # verl's PolicyLossConfig defaults: ratio 2e-4 (one token here), band (1, 5)
    {"clip_ratio_low": 1.0, "clip_ratio_high": 1.0},  # verl's 7B recipe
    {"clip_cov_ratio": 0.1, "clip_cov_lb": 0.5, "clip_cov_ub": 3.0},
    {"clip_cov_ratio": 1.0, "clip_cov_lb": -5.0, "clip_cov_ub": 5.0, "clip_ratio_high": 0.28},
]


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize(
    "params", CLIP_COV_SETTINGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults"
)
def test_clip_cov_is_verls(parity, params, agg):
    """The same tokens are cut (torch's global generator seeded alike), so loss, metrics and
    gradient agree; the comparison reaches batches where tokens are cut."""
    cut = 0
    for seed in SEEDS:
        for spread in (0.05, 0.6, 2.0):
            ours, theirs, metrics = both("clip_cov", params, seed, agg, spread=spread)
            parity("verl", "compute_policy_loss_clip_cov", "clip_cov", f"{params or 'defaults'}, {agg}", ours, theirs)
            cut += metrics["cov_clip_fraction"] > 0
    assert cut > 0


def test_clip_cov_with_a_generator_draws_what_verl_draws_from_the_global_one(parity):
    for seed in SEEDS:
        log_prob, old, adv, mask, _ = batch(seed, spread=0.6)
        params = {"clip_cov_ratio": 0.3, "clip_cov_lb": 0.0, "clip_cov_ub": 8.0}
        torch.manual_seed(seed)
        theirs, _ = core_algos.compute_policy_loss_clip_cov(old, log_prob, adv[:, None].expand_as(log_prob), mask,
                                                            "token-mean", verl_config("clip_cov", params))
        ours, _ = losses.policy_loss("clip_cov", **params)(log_prob, old, adv, mask,
                                                          generator=torch.Generator().manual_seed(seed))
        parity("verl", "compute_policy_loss_clip_cov", "clip_cov", "generator", ours.reshape(1), theirs.reshape(1))


KL_COV_SETTINGS = [
    {},  # verl's PolicyLossConfig defaults: ratio 2e-4, ppo_kl_coef 0.1
    {"kl_cov_ratio": 0.002, "ppo_kl_coef": 1.0},  # verl's 7B recipe
    {"kl_cov_ratio": 0.1, "ppo_kl_coef": 0.5},
    {"kl_cov_ratio": 1.0, "ppo_kl_coef": 2.0},
]


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize(
    "params", KL_COV_SETTINGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults"
)
def test_kl_cov_is_verls(parity, params, agg):
    for seed in SEEDS:
        for spread, per_token in ((0.05, False), (0.6, True), (2.0, False)):
            ours, theirs, _ = both("kl_cov", params, seed, agg, spread=spread, per_token=per_token)
            parity("verl", "compute_policy_loss_kl_cov", "kl_cov", f"{params or 'defaults'}, {agg}", ours, theirs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_every_loss_agrees_with_verl_in_float32_and_float64(parity, dtype):
    for seed in SEEDS:
        for loss, params in (("ppo_clip", {"clip_ratio_high": 0.28}), ("clip_cov", {"clip_cov_ratio": 0.2}),
                             ("kl_cov", {"kl_cov_ratio": 0.2})):
            ours, theirs, _ = both(loss, params, seed, "token-mean", spread=0.6, dtype=dtype)
            parity("verl", VERL_FN[loss].__name__, loss, f"{dtype}", ours, theirs)


# -- the entropy bonus: verl's ppo_loss ---------------------------------------------------------


def flat(x: torch.Tensor, lengths: torch.Tensor, prompt: int) -> torch.Tensor:
    """(B, T) response values as verl's no-padding model output: per sequence, prompt + response
    positions, each response value one position before its token (verl's left shift)."""
    parts = []
    for b, n in enumerate(lengths.tolist()):
        parts += [x.new_zeros(prompt - 1), x[b, :n], x.new_zeros(1)]
    return torch.cat(parts)


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("loss", ["ppo_clip", "clip_cov", "kl_cov"])
def test_entropy_bonus_is_verls_entropy_coeff_in_ppo_loss(parity, loss, agg):
    """verl's actor loss: the policy loss minus entropy_coeff times the entropy aggregated as the
    loss is. fade: the policy loss plus entropy_bonus's term, same aggregation and normalisers."""
    params = {"ppo_clip": {"clip_ratio_high": 0.28}, "clip_cov": {"clip_cov_ratio": 0.2},
              "kl_cov": {"kl_cov_ratio": 0.2}}[loss]
    for seed in SEEDS:
        for coef, norms in ((0.01, {}), (0.3, {"tokens": 50.0, "sequences": 9.0, "horizon": 12.0}), (-0.05, {})):
            log_prob, old, adv, mask, entropy = batch(seed, spread=0.6, holes=False)
            b, t = log_prob.shape
            lengths = mask.sum(1)
            config = verl_config(loss, params, entropy_coeff=coef, loss_agg_mode=agg,
                                 loss_scale_factor=norms.get("horizon"))
            data = TensorDict({
                "prompts": torch.ones(b, 2, dtype=torch.long), "responses": torch.ones(b, t, dtype=torch.long),
                "attention_mask": torch.cat([torch.ones(b, 2, dtype=torch.long), mask.long()], 1),
                "response_mask": mask.long(), "old_log_probs": old,
                "advantages": adv[:, None].expand(b, t).contiguous(),
            }, batch_size=[b])
            tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=norms.get("tokens"),
                                 global_batch_size=norms.get("sequences"))
            theirs_lp, theirs_h = log_prob.clone().requires_grad_(), entropy.clone().requires_grad_()
            torch.manual_seed(seed)
            theirs, their_metrics = ppo_loss(config, {"log_probs": flat(theirs_lp, lengths, 2),
                                                      "entropy": flat(theirs_h, lengths, 2)}, data)
            ours_lp, ours_h = log_prob.clone().requires_grad_(), entropy.clone().requires_grad_()
            torch.manual_seed(seed)
            policy, _ = losses.policy_loss(loss, **params)(ours_lp, old, adv, mask, agg=agg, **norms)
            term, metrics = losses.entropy_term("entropy_bonus", coef=coef)(ours_h, mask, agg=agg, **norms)
            ours = policy + term
            assert metrics["entropy_coef"] == coef
            parity("verl", "ppo_loss (entropy_coeff)", "entropy_bonus", f"{loss}, {agg}",
                   torch.cat([ours.detach().reshape(1), torch.tensor([metrics["entropy"]]),
                              grad_of(ours, ours_lp).flatten(), grad_of(ours, ours_h).flatten()]),
                   torch.cat([theirs.detach().reshape(1),
                              torch.tensor([their_metrics["actor/entropy_loss"].aggregate()]),
                              grad_of(theirs, theirs_lp).flatten(), grad_of(theirs, theirs_h).flatten()]))


# -- TRL: GRPOTrainer._compute_loss -------------------------------------------------------------


class Accelerator:
    """One process: TRL's reductions and gathers are the identity."""

    num_processes = 1
    sync_gradients = True

    def reduce(self, x, reduction="sum"):
        return x

    def gather(self, x):
        return x

    gather_for_metrics = gather


def trl_trainer(tmp_path, **config) -> types.SimpleNamespace:
    """What GRPOTrainer._compute_loss reads of its trainer, set as GRPOTrainer.__init__ sets it from a
    real GRPOConfig; the model's forward is replaced by the test's log-probs and entropies."""
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **config)
    s = types.SimpleNamespace(args=args, feed=None)
    s._get_per_token_logps_and_entropies = lambda model, *a, **k: (*s.feed, None)
    s.top_entropy_quantile, s.off_policy_mask_threshold = args.top_entropy_quantile, args.off_policy_mask_threshold
    s.importance_sampling_level, s.beta, s.loss_type = args.importance_sampling_level, args.beta, args.loss_type
    s.epsilon_low = args.epsilon
    s.epsilon_high = args.epsilon_high if args.epsilon_high is not None else args.epsilon
    s.use_vllm, s.aux_loss_enabled, s.max_completion_length = False, False, args.max_completion_length
    s.model = types.SimpleNamespace(training=True)
    s.current_gradient_accumulation_steps = 1
    s.entropy_coef, s.use_adaptive_entropy = args.entropy_coef, args.use_adaptive_entropy
    s._entropy_bonus_enabled = s.entropy_coef != 0.0 or s.use_adaptive_entropy
    s._last_world_entropy, s._entropy_window_stats = float("inf"), None
    s.accelerator = Accelerator()
    s._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    return s


def trl_loss(s, log_prob, old, adv, mask, entropy, num_items=None) -> torch.Tensor:
    b, t = log_prob.shape
    s.feed = (log_prob, entropy)
    inputs = {"prompt_ids": torch.ones(b, 1, dtype=torch.long), "prompt_mask": torch.ones(b, 1, dtype=torch.long),
              "completion_ids": torch.ones(b, t, dtype=torch.long), "completion_mask": mask.long(),
              "advantages": adv, "old_per_token_logps": old}
    if num_items is not None:
        inputs["num_items_in_batch"] = torch.tensor(float(num_items))
    return GRPOTrainer._compute_loss(s, None, inputs)


#: TRL's loss_type -> fade's aggregation and normalisers (B rows, TRL's max_completion_length L,
#: N the tokens TRL's num_items_in_batch counts).
def trl_aggregation(loss_type: str, b: int, length: int, n: float) -> dict:
    return {
        "bnpo": {"agg": "token-mean"},
        "grpo": {"agg": "seq-mean-token-mean", "sequences": float(b)},
        "dr_grpo": {"agg": "seq-mean-token-sum-norm", "sequences": float(b), "horizon": float(length)},
        "dapo": {"agg": "token-mean", "tokens": n},
    }[loss_type]


@pytest.mark.parametrize("loss_type", ["bnpo", "grpo", "dr_grpo", "dapo"])
def test_trls_loss_with_adaptive_entropy_is_fades_clip_and_adaptive_term(tmp_path, parity, loss_type):
    """Eight optimizer steps of TRL's loss (two-sided clip, no dual clip; the entropy bonus always a
    token mean) with use_adaptive_entropy: the loss, its gradient and the coefficient TRL keeps
    after each step equal fade's ppo_clip(clip_ratio_c=None) plus adaptive_entropy, observed with
    the step's token-mean entropy."""
    config = {"loss_type": loss_type, "epsilon": 0.2, "epsilon_high": 0.28, "use_adaptive_entropy": True,
              "entropy_coef": 0.05, "entropy_target": 1.4, "entropy_coef_delta": 0.04, "entropy_coef_max": 0.1,
              "max_completion_length": 9}
    s = trl_trainer(tmp_path, **config)
    policy = losses.policy_loss("ppo_clip", clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=None)
    term = losses.entropy_term("adaptive_entropy", coef=0.05, target=1.4, delta=0.04, coef_max=0.1)
    applied = []
    for step in range(8):
        log_prob, old, adv, mask, entropy = batch(100 + step, spread=0.4)
        n = float(mask.sum()) + (3 if step % 2 else 0)  # dapo's num_items_in_batch, the local count or more
        theirs_lp, theirs_h = log_prob.clone().requires_grad_(), entropy.clone().requires_grad_()
        theirs = trl_loss(s, theirs_lp, old, adv, mask, theirs_h, num_items=n)
        ours_lp, ours_h = log_prob.clone().requires_grad_(), entropy.clone().requires_grad_()
        loss, _ = policy(ours_lp, old, adv, mask, **trl_aggregation(loss_type, *log_prob.shape[:1], 9, n))
        bonus, metrics = term(ours_h, mask, agg="token-mean")
        ours = loss + bonus
        applied.append(metrics["entropy_coef"])
        term.observe(metrics["entropy"])
        parity("trl", "GRPOTrainer._compute_loss (use_adaptive_entropy)", "ppo_clip + adaptive_entropy", loss_type,
               torch.cat([ours.detach().reshape(1), grad_of(ours, ours_lp).flatten(), grad_of(ours, ours_h).flatten(),
                          torch.tensor([term.coef, term.last_entropy])]),
               torch.cat([theirs.detach().reshape(1), grad_of(theirs, theirs_lp).flatten(),
                          grad_of(theirs, theirs_h).flatten(),
                          torch.tensor([s.entropy_coef, s._last_world_entropy])]))
        assert s._metrics["train"]["entropy_coef"][-1] == pytest.approx(term.coef)
    # None before a measurement; the coefficient climbs to its cap; the gate closes above the target and reopens.
    assert applied == pytest.approx([0.0, 0.09, 0.1, 0.1, 0.0, 0.1, 0.1, 0.0])


def test_trls_constant_entropy_coef_is_fades_entropy_bonus_at_token_mean(tmp_path, parity):
    s = trl_trainer(tmp_path, loss_type="grpo", entropy_coef=0.07)
    policy, bonus = losses.policy_loss("ppo_clip", clip_ratio_c=None), losses.entropy_term("entropy_bonus", coef=0.07)
    for seed in SEEDS:
        log_prob, old, adv, mask, entropy = batch(seed, spread=0.4)
        theirs_h, ours_h = entropy.clone().requires_grad_(), entropy.clone().requires_grad_()
        theirs = trl_loss(s, log_prob, old, adv, mask, theirs_h)
        ours = policy(log_prob, old, adv, mask, agg="seq-mean-token-mean", sequences=float(len(adv)))[0]
        ours = ours + bonus(ours_h, mask)[0]
        parity("trl", "GRPOTrainer._compute_loss (entropy_coef)", "entropy_bonus", "constant",
               torch.cat([ours.detach().reshape(1), grad_of(ours, ours_h).flatten()]),
               torch.cat([theirs.detach().reshape(1), grad_of(theirs, theirs_h).flatten()]))


def test_trls_coefficient_updates_once_per_accumulation_window_on_the_windows_entropy(tmp_path):
    """With two micro-batches per optimizer step TRL measures the token mean over both; fade's
    controller, fed that window mean once per optimizer step, keeps the same coefficient."""
    s = trl_trainer(tmp_path, loss_type="bnpo", use_adaptive_entropy=True, entropy_coef=0.0, entropy_target=1.5,
                    entropy_coef_delta=0.02)
    s.current_gradient_accumulation_steps = 2
    term = losses.entropy_term("adaptive_entropy", coef=0.0, target=1.5, delta=0.02)
    for step in range(6):
        sums = counts = 0.0
        for micro in range(2):
            log_prob, old, adv, mask, entropy = batch(200 + 2 * step + micro)
            entropy = entropy * (0.4 if step % 3 else 1.0)  # below and above the target
            s.accelerator.sync_gradients = micro == 1
            theirs = trl_loss(s, log_prob, old, adv, mask, entropy)
            ours = (losses.policy_loss("ppo_clip", clip_ratio_c=None)(log_prob, old, adv, mask)[0]
                    + term(entropy, mask)[0]) / 2
            torch.testing.assert_close(ours, theirs)
            sums += float((entropy * mask).sum())
            counts += float(mask.sum())
        term.observe(sums / counts)
        assert term.coef == pytest.approx(s.entropy_coef, abs=1e-12)
        assert term.last_entropy == pytest.approx(s._last_world_entropy, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    target=st.floats(0.0, 3.0),
    delta=st.floats(0.0, 0.5),
    coef_min=st.floats(-0.5, 0.5),
    span=st.floats(0.0, 1.0),
    start=st.floats(0.0, 1.0),
    levels=st.lists(st.floats(0.0, 3.0), min_size=1, max_size=8),
)
def test_the_adaptive_coefficient_follows_trls_rule_for_any_setting(tmp_path_factory, target, delta, coef_min, span,
                                                                    start, levels):
    """TRL's update on entropies that sit exactly at chosen levels (the target among them, so the
    step after it tests the gate's <=), against fade's controller: the coefficient applied and the
    one kept agree at every step."""
    coef_max = coef_min + span
    coef = coef_min + start * span
    s = trl_trainer(tmp_path_factory.mktemp("trl"), loss_type="bnpo", use_adaptive_entropy=True, entropy_coef=coef,
                    entropy_target=target, entropy_coef_delta=delta, entropy_coef_min=coef_min,
                    entropy_coef_max=coef_max)
    term = losses.entropy_term("adaptive_entropy", coef=coef, target=target, delta=delta, coef_min=coef_min,
                               coef_max=coef_max)
    mask = torch.tensor([[True, True, False]])
    zero = torch.zeros(1, 3)
    for level in [target, *levels, target, *levels]:
        entropy = torch.full((1, 3), level).requires_grad_()
        theirs = trl_loss(s, zero, zero, torch.zeros(1), mask, entropy)  # ratio 1, advantage 0: the bonus alone
        ours, metrics = term(entropy, mask)
        assert float(ours.detach()) == float(theirs.detach())
        term.observe(metrics["entropy"])
        assert term.coef == s.entropy_coef and term.last_entropy == s._last_world_entropy


# -- dynamic sampling: verl's filter ------------------------------------------------------------


def verl_filtered(monkeypatch, rewards: list[float], ids: list[int]) -> set[int]:
    """The group ids verl's ReplayBuffer._dapo_filtered_keys evicts, on the canonical reward (the
    sum of each trajectory's token-level rm_scores)."""
    import verl.trainer.ppo.v1.replay_buffer as rb

    reward_of = {}
    counts: dict[int, int] = defaultdict(int)
    for r, i in zip(rewards, ids, strict=True):
        reward_of[f"g{i}_{counts[i]}"] = r
        counts[i] += 1

    class TransferQueue:
        @staticmethod
        def kv_batch_get(keys, partition_id, select_fields):
            assert select_fields == ["rm_scores"]
            return {"rm_scores": [torch.tensor([0.0, 0.0, reward_of[k]], dtype=torch.float64) for k in keys]}

    monkeypatch.setattr(rb, "tq", TransferQueue())
    buffer = object.__new__(rb.ReplayBuffer)
    buffer.filter_groups_metric = rb.FILTER_GROUPS_REWARD_METRIC
    buffer.finished_keys = defaultdict(set, {"train": {f"g{i}" for i in counts}})
    buffer.partitions = defaultdict(dict, {"train": {k: {} for k in reward_of}})
    buffer._dapo_classification_cache = defaultdict(dict)
    uids, _ = rb.ReplayBuffer._dapo_filtered_keys(buffer, "train")
    return {int(u[1:]) for u in uids}


def fade_filtered(rewards: list[float], ids: list[int]) -> set[int]:
    flagged = zero_variance_mask(torch.tensor(rewards, dtype=torch.float64), ids)
    return {i for i, f in zip(ids, flagged.tolist(), strict=True) if f}


@pytest.mark.parametrize("values", [(0.0, 1.0), (0.0, 1.0, 2.0, 5.0), (-1.0, 0.25, 0.5, 0.75)],
                         ids=["binary", "integer", "dyadic"])
def test_zero_variance_groups_are_the_ones_verl_evicts(monkeypatch, values):
    """Ragged groups of 1 to 6 rollouts with ids in any order, on rewards whose mean numpy computes
    exactly (binary, integer, multiples of 1/4): the same groups are dropped."""
    for seed in range(40):
        g = torch.Generator().manual_seed(seed)
        sizes = torch.randint(1, 7, (int(torch.randint(1, 9, (1,), generator=g)),), generator=g).tolist()
        ids = [gid for gid, size in zip(torch.randperm(50, generator=g).tolist(), sizes) for _ in range(size)]
        order = torch.randperm(len(ids), generator=g).tolist()
        ids = [ids[i] for i in order]
        pool = torch.tensor(values)[torch.randint(0, len(values), (len(ids),), generator=g)]
        # half the groups are made to agree
        rewards = [float(pool[ids.index(i)]) if i % 2 else float(pool[k]) for k, i in enumerate(ids)]
        assert fade_filtered(rewards, ids) == verl_filtered(monkeypatch, rewards, ids)


def test_equal_floats_numpy_rounds_are_dropped_where_verl_keeps_them(monkeypatch):
    """The one difference: np.std([0.1] * 3) is 1.4e-17, so verl keeps a group fade drops."""
    rewards, ids = [0.1, 0.1, 0.1, 0.5, 0.5], [7, 7, 7, 8, 8]
    assert verl_filtered(monkeypatch, rewards, ids) == {8}
    assert fade_filtered(rewards, ids) == {7, 8}
