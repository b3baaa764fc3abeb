"""fade.losses and fade.dynamic_sampling: closed forms, invariants and refusals.

The engines' side-by-side comparisons are in tests/test_losses_engines.py; here each loss is held to
what its formula says on tensors small enough to work by hand (a ratio of 1 is the plain policy
gradient; a token past the clip carries no gradient; a capped coefficient stays capped), to the
invariants a trainer relies on (padding is never read; rows of zero advantage can be left out of
``ppo_clip`` and not of the covariance losses), and bad input is refused with the value named.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fade import format_spec, losses
from fade.dynamic_sampling import kept_groups, zero_variance_mask

AGGS = losses.AGGREGATIONS
FAR_BAND = {"clip_cov_lb": 100.0, "clip_cov_ub": 200.0}  # no covariance of these batches reaches it


def one_token(advantage: float, ratio: float, **params):
    """ppo_clip on a single token: (loss, metrics, d loss / d log_prob)."""
    lp = torch.tensor([[math.log(ratio)]], dtype=torch.float64, requires_grad=True)
    old = torch.zeros(1, 1, dtype=torch.float64)
    loss, metrics = losses.policy_loss("ppo_clip", **params)(lp, old, torch.tensor([advantage], dtype=torch.float64),
                                                             torch.ones(1, 1, dtype=torch.bool))
    (grad,) = torch.autograd.grad(loss, lp)
    return float(loss.detach()), metrics, float(grad)


@pytest.mark.parametrize(
    ("advantage", "ratio", "params", "loss", "grad", "clipped", "lower"),
    [
        (1.0, 1.0, {}, -1.0, -1.0, 0, 0),  # on-policy: -A, gradient -A r
        (1.0, 1.1, {}, -1.1, -1.1, 0, 0),  # inside the clip range
        (1.0, 1.5, {}, -1.2, 0.0, 1, 0),  # A > 0 past 1 + eps: held at (1 + eps) A, no gradient
        (1.0, 1.25, {}, -1.2, 0.0, 1, 0),  # clipped at the symmetric 0.2 ...
        (1.0, 1.25, {"clip_ratio_high": 0.28}, -1.25, -1.25, 0, 0),  # ... not under clip-higher's 0.28
        (1.0, 0.5, {}, -0.5, -0.5, 0, 0),  # A > 0 below 1 - eps: never clipped (pessimistic bound)
        (-1.0, 0.5, {}, 0.8, 0.0, 1, 0),  # A < 0 below 1 - eps: held at (1 - eps) |A|
        (-1.0, 2.0, {}, 2.0, 2.0, 0, 0),  # A < 0 above 1 + eps: unclipped, below the dual clip's 3
        (-1.0, 5.0, {}, 3.0, 0.0, 0, 1),  # the dual clip: held at c |A|
        (-1.0, 5.0, {"clip_ratio_c": None}, 5.0, 5.0, 0, 0),  # no dual clip
        (-2.0, 5.0, {"clip_ratio_c": 10.0}, 10.0, 10.0, 0, 0),  # below a larger c
        (0.0, 7.0, {}, 0.0, 0.0, 0, 0),  # no advantage, no loss, nothing clipped
    ],
)
def test_ppo_clip_on_one_token(advantage, ratio, params, loss, grad, clipped, lower):
    got, metrics, g = one_token(advantage, ratio, **params)
    assert got == pytest.approx(loss) and g == pytest.approx(grad, abs=1e-12)
    assert metrics["clip_fraction"] == clipped and metrics["clip_fraction_lower"] == lower
    assert metrics["ppo_kl"] == pytest.approx(-math.log(ratio))


def test_ppo_clip_clamps_the_log_ratio_at_20_as_verl_does():
    _, metrics, _ = one_token(1.0, math.exp(35.0), clip_ratio_high=1e9)
    assert metrics["ppo_kl"] == -20.0


def rows(seed: int, b: int = 5, t: int = 6, spread: float = 0.5):
    g = torch.Generator().manual_seed(seed)
    lp = -3 * torch.rand(b, t, generator=g, dtype=torch.float64)
    old = lp + spread * torch.randn(b, t, generator=g, dtype=torch.float64)
    adv = torch.randn(b, generator=g, dtype=torch.float64)
    mask = torch.arange(t)[None] < torch.randint(1, t + 1, (b,), generator=g)[:, None]
    return lp, old, adv, mask


ON_POLICY = [("ppo_clip", {}), ("ppo_clip", {"clip_ratio_high": 0.28, "clip_ratio_c": None}),
             ("clip_cov", FAR_BAND), ("kl_cov", {}), ("kl_cov", {"kl_cov_ratio": 1.0, "ppo_kl_coef": 5.0})]


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize(("name", "params"), ON_POLICY)
def test_at_ratio_one_every_loss_is_the_plain_policy_gradient(name, params, agg):
    """One update per batch: log_prob = old_log_prob, so loss = -agg(A) and its gradient is that of
    -agg(A log_prob); nothing is clipped, the KL is 0."""
    lp, _, adv, mask = rows(0)
    lp = lp.requires_grad_()
    loss, metrics = losses.policy_loss(name, **params)(lp, lp.detach(), adv, mask, agg=agg)
    plain = -losses.aggregate(adv[:, None] * lp, mask, agg)
    expected = -losses.aggregate(adv[:, None].expand_as(lp), mask, agg)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(torch.autograd.grad(loss, lp)[0], torch.autograd.grad(plain, lp)[0])
    assert all(v == 0 for v in metrics.values())
    if agg == "token-mean":
        torch.testing.assert_close(loss, -(adv[:, None] * mask).sum() / mask.sum())


def test_aggregations_by_hand():
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, math.nan, math.inf], [math.nan, 7.0, 7.0]])
    mask = torch.tensor([[True, True, True], [True, False, False], [False, False, False]])
    expected = {"token-mean": 10 / 4, "token-sum": 10.0, "seq-mean-token-sum": (6 + 4) / 2,
                "seq-mean-token-mean": (2 + 4) / 2, "seq-mean-token-sum-norm": (6 + 4) / 2 / 3}
    for mode, value in expected.items():  # the padding's NaN and inf are never read; the empty row is no sequence
        assert float(losses.aggregate(values, mask, mode)) == pytest.approx(value)
    given = {"token-mean": 10 / 20, "token-sum": 10.0, "seq-mean-token-sum": 10 / 8,
             "seq-mean-token-mean": 6 / 8, "seq-mean-token-sum-norm": 10 / 8 / 5}
    for mode, value in given.items():
        got = losses.aggregate(values, mask, mode, tokens=20, sequences=8, horizon=5)
        assert float(got) == pytest.approx(value)
    for mode in AGGS:  # no token at all: 0, not 0 / 0
        assert float(losses.aggregate(values, torch.zeros_like(mask), mode)) == 0.0


def test_clip_cov_cuts_the_share_of_tokens_it_is_given():
    """Every token in the band and on the right side of the clip: max(1, floor(ratio N)) of the N
    tokens lose their gradient, drawn by the generator (the same seed, the same tokens)."""
    lp = torch.linspace(-3, -0.1, 50, dtype=torch.float64).reshape(5, 10).requires_grad_()
    adv = torch.tensor([-2.0, -1.0, 0.5, 1.0, 2.0], dtype=torch.float64)
    mask = torch.ones(5, 10, dtype=torch.bool)
    for ratio, cut in ((0.0002, 1), (0.1, 5), (0.5, 25), (1.0, 50)):
        loss_fn = losses.policy_loss("clip_cov", clip_cov_ratio=ratio, clip_cov_lb=-100.0, clip_cov_ub=100.0)
        loss, metrics = loss_fn(lp, lp.detach(), adv, mask, generator=torch.Generator().manual_seed(1))
        grad = torch.autograd.grad(loss, lp)[0]
        assert metrics["cov_clip_fraction"] == pytest.approx(cut / 50) and metrics["clip_fraction"] == 0
        # a cut token carries no gradient; the others keep the plain -A / N
        kept = grad != 0
        assert int((~kept).sum()) == cut
        torch.testing.assert_close(grad[kept], (-adv[:, None] / 50).expand_as(grad)[kept])
        again, _ = loss_fn(lp, lp.detach(), adv, mask, generator=torch.Generator().manual_seed(1))
        assert float(again.detach()) == float(loss.detach())


def test_clip_cov_never_cuts_outside_the_band_nor_a_ratio_clipped_token():
    lp, old, adv, mask = rows(3, spread=1.0)
    lp = lp.requires_grad_()
    loss, metrics = losses.policy_loss("clip_cov", clip_cov_ratio=1.0, **FAR_BAND)(lp, old, adv, mask)
    plain, plain_metrics = losses.policy_loss("ppo_clip", clip_ratio_c=None)(lp, old, adv, mask)
    assert metrics["cov_clip_fraction"] == 0 and metrics["clip_fraction"] == plain_metrics["clip_fraction"] > 0
    torch.testing.assert_close(loss, plain)
    wide = losses.policy_loss("clip_cov", clip_cov_ratio=1.0, clip_cov_lb=-100.0, clip_cov_ub=100.0)
    _, metrics = wide(lp, old, adv, mask)
    share = int(mask.sum()) and metrics["cov_clip_fraction"] + metrics["clip_fraction"]
    assert share == pytest.approx(1.0)  # every token is either ratio-clipped or cut, never both


def test_kl_cov_penalises_the_tokens_of_largest_covariance():
    """One token of a large advantage at a high log-prob has the largest (A - mean A)(lp - mean lp):
    with one token to choose it alone gets + coef |log r|."""
    lp = torch.tensor([[-0.1, -3.0], [-2.0, -2.5]], dtype=torch.float64)
    old = lp - 0.3
    adv = torch.tensor([[3.0, 0.0], [-0.5, 0.1]], dtype=torch.float64)
    mask = torch.ones(2, 2, dtype=torch.bool)
    ratio = math.exp(0.3)
    loss, metrics = losses.policy_loss("kl_cov", kl_cov_ratio=0.25, ppo_kl_coef=2.0)(lp, old, adv, mask,
                                                                                  agg="token-sum")
    assert float(loss) == pytest.approx(-float(adv.sum()) * ratio + 2.0 * 0.3)
    assert metrics["ppo_kl_abs"] == pytest.approx(0.3)
    everyone, _ = losses.policy_loss("kl_cov", kl_cov_ratio=1.0, ppo_kl_coef=2.0)(lp, old, adv, mask, agg="token-sum")
    assert float(everyone) == pytest.approx(-float(adv.sum()) * ratio + 4 * 2.0 * 0.3)


def test_entropy_bonus_is_minus_c_times_the_aggregated_entropy():
    h = torch.tensor([[0.5, 1.5, 9.0], [2.0, 0.0, 0.0]], requires_grad=True)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    term, metrics = losses.entropy_term("entropy_bonus", coef=0.1)(h, mask)
    assert float(term.detach()) == pytest.approx(-0.1 * 4 / 3) and metrics == {"entropy": pytest.approx(4 / 3),
                                                                          "entropy_coef": 0.1}
    # gradient descent on the term raises the entropy of every response token, equally under token-mean
    torch.testing.assert_close(torch.autograd.grad(term, h)[0], -0.1 / 3 * mask.float())
    seq, _ = losses.entropy_term("entropy_bonus", coef=0.1)(h, mask, agg="seq-mean-token-mean")
    assert float(seq.detach()) == pytest.approx(-0.1 * (1.0 + 2.0) / 2)


def test_adaptive_entropy_by_hand():
    term = losses.entropy_term("adaptive_entropy", target=0.5, coef=0.0, delta=0.1, coef_max=0.25)
    assert term.coefficient == 0.0 and term.state_dict() == {"coef": 0.0, "last_entropy": None}
    steps = [  # (entropy observed, coefficient kept, coefficient the next step applies)
        (0.4, 0.1, 0.1),  # below the target: up by delta
        (0.5, 0.2, 0.2),  # at the target counts as below
        (0.5, 0.25, 0.25),  # capped at coef_max
        (0.9, 0.15, 0.0),  # above: down by delta, and the bonus is off while above
        (0.9, 0.05, 0.0),
        (0.9, 0.0, 0.0),  # floored at coef_min
        (0.1, 0.1, 0.1),  # and it recovers from 0 as soon as the entropy falls below
    ]
    for entropy, kept, applied in steps:
        term.observe(entropy)
        assert term.coef == pytest.approx(kept) and term.coefficient == pytest.approx(applied)
    h = torch.full((1, 2), 0.3, requires_grad=True)
    out, metrics = term(h, torch.ones(1, 2, dtype=torch.bool))
    assert float(out.detach()) == pytest.approx(-0.1 * 0.3) and metrics["entropy_coef"] == pytest.approx(0.1)
    restored = losses.entropy_term("adaptive_entropy", target=0.5, coef=0.0, delta=0.1, coef_max=0.25)
    restored.load_state_dict(term.state_dict())
    assert restored.coefficient == term.coefficient and restored.state_dict() == term.state_dict()


def test_adaptive_entropy_target_ratio_sets_the_target_from_the_first_entropy():
    """fade's extension: target_ratio x the first observed entropy, then exactly the fixed-target rule."""
    ratio = losses.entropy_term("adaptive_entropy", target_ratio=0.7, coef=0.05, delta=0.02)
    assert ratio.target is None and ratio.coefficient == 0.0
    assert ratio.state_dict() == {"coef": 0.05, "last_entropy": None, "target": None}
    levels = [0.8, 0.6, 0.5, 0.57, 0.55, 0.9, 0.3]
    ratio.observe(levels[0])
    assert ratio.target == pytest.approx(0.56) and ratio.state_dict()["target"] == ratio.target
    fixed = losses.entropy_term("adaptive_entropy", target=ratio.target, coef=0.05, delta=0.02)
    fixed.observe(levels[0])
    for level in levels[1:]:  # from the first observation on, the two are one controller
        assert (ratio.coef, ratio.coefficient) == (fixed.coef, fixed.coefficient)
        ratio.observe(level)
        fixed.observe(level)
        assert ratio.target == fixed.target == fixed.params["target"]
    restored = losses.entropy_term("adaptive_entropy", target_ratio=0.7, coef=0.05, delta=0.02)
    restored.load_state_dict(ratio.state_dict())
    assert restored.state_dict() == ratio.state_dict() and restored.coefficient == ratio.coefficient
    again = losses.from_spec(format_spec(ratio.name, ratio.params), "entropy")  # its spec reads back
    assert again.params == ratio.params and "target" not in again.params
    with pytest.raises(ValueError, match="give target or target_ratio, not both"):
        losses.entropy_term("adaptive_entropy", target=0.2, target_ratio=0.7)
    with pytest.raises(ValueError, match="must hold 'coef', 'last_entropy' and 'target', got keys"):
        restored.load_state_dict({"coef": 0.1, "last_entropy": 0.5})
    with pytest.raises(ValueError, match="target must be an entropy >= 0 set with the first measurement"):
        restored.load_state_dict({"coef": 0.1, "last_entropy": 0.5, "target": None})
    with pytest.raises(ValueError, match="target_ratio must be a finite number > 0"):
        losses.entropy_term("adaptive_entropy", target_ratio=0)


def test_adaptive_entropy_coef_is_the_update_rule():
    rule = dict(target=1.0, delta=0.3, coef_min=-0.2, coef_max=0.5)
    assert losses.adaptive_entropy_coef(0.1, 1.0, **rule) == pytest.approx(0.4)
    assert losses.adaptive_entropy_coef(0.4, 0.2, **rule) == 0.5
    assert losses.adaptive_entropy_coef(0.0, 1.0001, **rule) == -0.2


# -- invariants ----------------------------------------------------------------------------------

POLICY = [("ppo_clip", {"clip_ratio_high": 0.28}), ("clip_cov", {"clip_cov_ratio": 0.2, "clip_cov_lb": 0.2}),
          ("kl_cov", {"kl_cov_ratio": 0.2, "ppo_kl_coef": 1.0})]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), agg=st.sampled_from(AGGS), which=st.sampled_from(range(len(POLICY))))
def test_padding_is_never_read(seed, agg, which):
    """Extra columns and an empty row holding inf and NaN change neither the loss nor the metrics
    (the horizon of the -norm mode is given, as it counts columns otherwise)."""
    name, params = POLICY[which]
    lp, old, adv, mask = rows(seed, spread=0.8)
    b, t = lp.shape
    wide = [torch.full((b + 1, t + 2), fill, dtype=lp.dtype) for fill in (math.inf, math.nan)]
    wide[0][:b, :t], wide[1][:b, :t] = lp, old
    wide_mask = torch.zeros(b + 1, t + 2, dtype=torch.bool)
    wide_mask[:b, :t] = mask
    wide_adv = torch.cat([adv, adv.new_tensor([math.nan])])
    fn = losses.policy_loss(name, **params)
    a = fn(lp, old, adv, mask, agg=agg, horizon=7.0, generator=torch.Generator().manual_seed(seed))
    z = fn(wide[0], wide[1], wide_adv, wide_mask, agg=agg, horizon=7.0, generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(z[0], a[0])
    assert z[1] == pytest.approx(a[1])


@pytest.mark.parametrize("agg", AGGS)
def test_zero_advantage_rows_can_be_left_out_of_ppo_clip_and_not_of_the_covariance_losses(agg):
    """``zero_advantage_rows_inert``: ppo_clip on the rows with an advantage, normalised by the whole
    batch's counts, is ppo_clip on the whole batch (loss and gradient). kl_cov's covariance is over
    every token, so leaving rows out changes which tokens it penalises."""
    lp, old, adv, mask = rows(11, b=8, spread=0.8)
    adv[[1, 4, 5]] = 0.0
    keep = adv != 0
    norms = {"tokens": float(mask.sum()), "sequences": float((mask.sum(1) > 0).sum())}
    for name, params in POLICY:
        fn = losses.policy_loss(name, **params)
        full_lp, part_lp = lp.clone().requires_grad_(), lp.clone().requires_grad_()
        full, _ = fn(full_lp, old, adv, mask, agg=agg, generator=torch.Generator().manual_seed(0))
        part, _ = fn(part_lp[keep], old[keep], adv[keep], mask[keep], agg=agg, **norms,
                     generator=torch.Generator().manual_seed(0))
        same = bool(torch.isclose(full, part)) and torch.allclose(torch.autograd.grad(full, full_lp)[0],
                                                                 torch.autograd.grad(part, part_lp)[0])
        if losses.spec(name).zero_advantage_rows_inert:
            assert same, name
        elif name == "kl_cov":
            assert not same
    assert [n for n in losses.available("policy") if losses.spec(n).zero_advantage_rows_inert] == ["ppo_clip"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), agg=st.sampled_from(AGGS))
def test_ppo_clip_and_kl_cov_do_not_depend_on_the_order_of_the_rows(seed, agg):
    lp, old, adv, mask = rows(seed, spread=0.8)
    order = torch.randperm(len(adv), generator=torch.Generator().manual_seed(seed))
    for name, params in (POLICY[0], POLICY[2]):
        fn = losses.policy_loss(name, **params)
        a, am = fn(lp, old, adv, mask, agg=agg)
        b, bm = fn(lp[order], old[order], adv[order], mask[order], agg=agg)
        torch.testing.assert_close(a, b)
        assert am == pytest.approx(bm)


# -- dynamic sampling ----------------------------------------------------------------------------


def by_loop(rewards: list[float], ids: list[int]) -> list[bool]:
    """The definition, one group at a time: two rollouts or more, one reward value."""
    groups: dict[int, list[float]] = {}
    for r, i in zip(rewards, ids, strict=True):
        groups.setdefault(i, []).append(r)
    return [len(groups[i]) > 1 and len(set(groups[i])) == 1 for i in ids]


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_zero_variance_mask_is_the_per_group_definition(data):
    """Ragged groups (ones of one rollout among them), ids of any value in any order, rewards from a
    few floats so that groups agree often, in float32 and float64."""
    n = data.draw(st.integers(1, 40))
    ids = data.draw(st.lists(st.integers(-5, 12), min_size=n, max_size=n))
    values = data.draw(st.lists(st.floats(-3, 3, allow_subnormal=False), min_size=1, max_size=3))
    rewards = data.draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))
    dtype = data.draw(st.sampled_from([torch.float32, torch.float64]))
    r = torch.tensor(rewards, dtype=dtype)
    assert zero_variance_mask(r, ids).tolist() == by_loop(r.tolist(), ids)
    order = torch.randperm(n)
    assert zero_variance_mask(r[order], [ids[i] for i in order]).tolist() == [
        by_loop(r.tolist(), ids)[i] for i in order
    ]


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_kept_groups_are_the_groups_the_mask_keeps_in_order(data):
    """Ragged groups in any order, a limit or none: the ids of the groups with a False mask, in the
    order of their first rollout, the first ``limit`` of them."""
    n = data.draw(st.integers(1, 30))
    ids = data.draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    rewards = data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n))
    limit = data.draw(st.none() | st.integers(0, 10))
    dropped = zero_variance_mask(rewards, ids).tolist()
    expected = [g for g in dict.fromkeys(ids) if not dropped[ids.index(g)]]
    assert kept_groups(rewards, ids, limit) == (expected if limit is None else expected[:limit])


def test_kept_groups_by_hand():
    # leave-one-out groups of two: (1, 1) and (0, 0) carry nothing, (1, 0) is kept
    assert kept_groups([1, 1, 0, 0, 1, 0, 0, 1], 2) == [2, 3]
    assert kept_groups([1, 1, 0, 0, 1, 0, 0, 1], 2, limit=1) == [2]
    assert kept_groups([1.0, 0.0, 1.0, 1.0, 0.5], ["a", "a", "b", "b", "c"]) == ["a", "c"]  # a group of one is kept
    assert kept_groups(torch.tensor([0.0, 1.0, 0.0, 0.0]), torch.tensor([7, 7, 3, 3]), limit=0) == []
    with pytest.raises(ValueError, match="limit must be an integer >= 0"):
        kept_groups([1.0, 0.0], 2, limit=-1)


def test_zero_variance_mask_by_hand():
    assert zero_variance_mask([1, 1, 0, 1, 0.5, 0.5, 0.5, 0.5], 4).tolist() == [False] * 4 + [True] * 4
    assert zero_variance_mask([1.0, 1.0, 0.0], 1).tolist() == [False] * 3  # groups of one are kept
    assert zero_variance_mask([0.0, 1.0, 0.0, 0.0], ["b", "a", "b", "b"]).tolist() == [True, False, True, True]
    assert zero_variance_mask([0.0, -0.0], 2).tolist() == [True, True]  # the same number
    big = 2**53 - 1  # integers are compared in float64: exact to 2^53
    assert zero_variance_mask(torch.tensor([big, big - 1]), 2).tolist() == [False, False]
    assert zero_variance_mask(torch.tensor([True, True]), 2).tolist() == [True, True]
    assert zero_variance_mask([0.1 + 0.2, 0.3], 2).tolist() == [False, False]  # equal means equal, not close


# -- refusals ------------------------------------------------------------------------------------


LP = torch.zeros(2, 3)
MASK = torch.ones(2, 3, dtype=torch.bool)
PPO = losses.policy_loss("ppo_clip")


def with_nan(at):
    x = torch.zeros(2, 3)
    x[at] = math.nan
    return x


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (lambda: losses.policy_loss("ppo"), "unknown policy loss 'ppo'; available: clip_cov, kl_cov, ppo_clip"),
        (
            lambda: losses.policy_loss("entropy_bonus"),
            "'entropy_bonus' is an entropy term, not a policy loss; available: clip_cov, kl_cov, ppo_clip",
        ),
        (lambda: losses.entropy_term("ppo_clip"), "'ppo_clip' is a policy loss, not an entropy term"),
        (
            lambda: losses.policy_loss("ppo_clip", eps=0.2),
            "'ppo_clip' got unknown parameter(s) ['eps']; accepted "
            "(with defaults): clip_ratio_low=0.2, clip_ratio_high=0.2, clip_ratio_c=3.0",
        ),
        (
            lambda: losses.policy_loss("ppo_clip", clip_ratio_low=1.5),
            "clip_ratio_low must be a number in [0, 1] (the ratio is kept above 1 - it), got 1.5",
        ),
        (lambda: losses.policy_loss("ppo_clip", clip_ratio_high=-0.1), "clip_ratio_high must be a finite number >= 0"),
        # an int past float range is not finite: a one-line refusal, not Python's OverflowError
        (
            lambda: losses.policy_loss("ppo_clip", clip_ratio_high=10**400),
            "clip_ratio_high must be a finite number >= 0",
        ),
        (lambda: losses.policy_loss("ppo_clip", clip_ratio_c=1.0), "clip_ratio_c must be a finite number > 1"),
        (
            lambda: losses.policy_loss("ppo_clip", clip_ratio_c=True),
            "clip_ratio_c must be a finite number > 1 (dual clip's bound, verl's requirement), "
            "or None for no dual clip, "
            "got True",
        ),
        (lambda: losses.policy_loss("clip_cov", clip_cov_ratio=0), "clip_cov_ratio must be a number in (0, 1]"),
        (
            lambda: losses.policy_loss("clip_cov", clip_cov_lb=5.0),
            "clip_cov_lb must be below clip_cov_ub (the covariance band a token is drawn from), got clip_cov_lb=5.0, "
            "clip_cov_ub=5.0",
        ),
        (lambda: losses.policy_loss("kl_cov", kl_cov_ratio=2.0), "kl_cov_ratio must be a number in (0, 1]"),
        (
            lambda: losses.policy_loss("kl_cov", ppo_kl_coef=math.inf),
            "ppo_kl_coef must be a finite number >= 0, got inf",
        ),
        (lambda: losses.entropy_term("entropy_bonus", coef=math.nan), "coef must be a finite number"),
        (
            lambda: losses.entropy_term("adaptive_entropy", coef=2.0),
            "coef (the initial coefficient) must lie in [coef_min, coef_max], got coef=2.0, coef_min=0.0, coef_max=1.0",
        ),
        (lambda: losses.entropy_term("adaptive_entropy", target=-1), "target must be a finite entropy >= 0"),
        (lambda: losses.entropy_term("adaptive_entropy", delta=-0.1), "delta must be a finite number >= 0"),
        (lambda: losses.entropy_term("adaptive_entropy").observe(-0.5), "entropy must be the mean token entropy"),
        (lambda: losses.entropy_term("adaptive_entropy").observe(math.nan), "entropy must be the mean token entropy"),
        (lambda: losses.entropy_term("adaptive_entropy").observe("high"), "entropy must be a number"),
        (
            lambda: losses.entropy_term("adaptive_entropy").load_state_dict({"coef": 0.1}),
            "'adaptive_entropy' state must hold 'coef' and 'last_entropy', got keys ['coef']",
        ),
        (
            lambda: losses.entropy_term("entropy_bonus").load_state_dict({"coef": 0.1}),
            "'entropy_bonus' is stateless: expected an empty state, got keys ['coef']",
        ),
        (
            lambda: losses.from_spec("ppo_clip:clip_ratio_high=x", "policy"),
            "policy loss spec 'ppo_clip:clip_ratio_high=x': clip_ratio_high must be a finite number >= 0",
        ),
        (lambda: losses.from_spec("ppo clip", "policy"), "bad policy loss spec 'ppo clip'"),
        (lambda: losses.from_spec("ppo_clip", "loss"), "kind must be one of 'policy', 'entropy', got 'loss'"),
        (
            lambda: losses.spec("ppo"),
            "unknown loss term 'ppo'; available: adaptive_entropy, clip_cov, entropy_bonus, kl_cov, ppo_clip",
        ),
        (
            lambda: losses.from_spec("ppo_clip:clip_ratio_low=0.1", "policy", clip_ratio_low=0.2),
            "policy loss spec 'ppo_clip:clip_ratio_low=0.1': parameter(s) given twice with different values: "
            "clip_ratio_low=0.1 and clip_ratio_low=0.2",
        ),
        (
            lambda: PPO(LP[0], LP[0], torch.zeros(3), MASK[0]),
            "log_prob must be (B, T), one value per response token, got shape (3,)",
        ),
        (
            lambda: PPO(LP, torch.zeros(2, 4), torch.zeros(2), MASK),
            "old_log_prob must have log_prob's shape (2, 3), got (2, 4)",
        ),
        (lambda: PPO(LP, LP, torch.zeros(3), MASK), "advantages must be (B,) = (2,) or (B, T) = (2, 3), got (3,)"),
        (lambda: PPO(LP, LP, torch.zeros(2, dtype=torch.long), MASK), "advantages must be a floating-point tensor"),
        (
            lambda: PPO(LP, LP, torch.zeros(2), torch.full((2, 3), 0.5)),
            "mask must be bool or 0/1 (True on the response tokens), got 0.5 at row 0, token 0",
        ),
        (lambda: PPO(LP, LP, torch.zeros(2), MASK[:, :2]), "mask must have log_prob's shape (2, 3), got (2, 2)"),
        (
            lambda: PPO(with_nan((1, 2)), LP, torch.zeros(2), MASK),
            "log_prob must be finite on the response tokens, got nan at row 1, token 2 (1 such value(s))",
        ),
        (
            lambda: PPO(LP, LP, torch.tensor([0.0, math.inf]), MASK),
            "advantages must be finite on the response tokens, got inf at row 1, token 0 (3 such value(s))",
        ),
        (
            lambda: PPO(LP, LP, torch.zeros(2), MASK, agg="seq-mean"),
            "agg must be one of 'token-mean', 'token-sum', "
            "'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm', got 'seq-mean'",
        ),
        (
            lambda: PPO(LP, LP, torch.zeros(2), MASK, tokens=0),
            "tokens must be a finite number > 0 (or None to count it from the mask), got 0",
        ),
        (
            lambda: losses.entropy_term("entropy_bonus")(with_nan((0, 1)), MASK),
            "entropy must be finite on the response tokens, got nan at row 0, token 1",
        ),
        (
            lambda: losses.aggregate(torch.zeros(3), MASK[0]),
            "values must be (B, T), one value per response token, got shape (3,)",
        ),
        (lambda: losses.aggregate(LP, MASK, "mean"), "agg must be one of 'token-mean'"),
        (
            lambda: losses.aggregate(LP, MASK.cpu().float() * 2),
            "mask must be bool or 0/1 (True on the response tokens), got 2.0 at row 0, token 0",
        ),
        (lambda: zero_variance_mask([1.0, math.nan], 2), "rewards must be finite, got nan at position 1"),
        (lambda: zero_variance_mask([1.0, 0.0, 1.0], 2), "3 rollouts cannot be split into consecutive groups of 2"),
        (lambda: zero_variance_mask([[1.0, 0.0]], 2), "rewards must be 1-D"),
    ],
)
def test_bad_input_is_refused_with_the_value_named(run, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        run()


def test_specs_name_a_term_and_read_back():
    loss = losses.from_spec("ppo_clip:clip_ratio_high=0.28,clip_ratio_c=none", "policy")
    assert loss.params == {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "clip_ratio_c": None}
    again = losses.from_spec(format_spec(loss.name, loss.params), "policy")
    assert again.params == loss.params and repr(again) == repr(loss)
    term = losses.from_spec("adaptive_entropy:target=0.9", "entropy", delta=0.01)
    assert isinstance(term, losses.AdaptiveEntropy) and term.params["target"] == 0.9 and term.params["delta"] == 0.01
    assert losses.available("entropy") == ["adaptive_entropy", "entropy_bonus"]
    assert all(losses.spec(n).summary for n in losses.available())
    for name in losses.available("policy"):  # every policy loss reports the metrics its spec names
        lp, old, adv, mask = rows(0)
        assert tuple(losses.policy_loss(name)(lp, old, adv, mask)[1]) == losses.spec(name).metrics
