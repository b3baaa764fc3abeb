"""Closed forms for binary rewards (docs/method.md, section 2), checked through ``fade.mass_profile``.

A group of G rollouts with c = k successes has solve rate p = k/G and q = 1 - p. Each row of the
table gives the advantage of a success (a+) and of a failure (a-, signed), and the masses
m_S = p a+ and m_F = q |a-|. ``mass_profile`` runs the estimator itself on one group per k, so
these tests pin the estimators to the table, rollout count by rollout count.

Conventions the table leaves implicit and the profile makes explicit:
- at k = 0 there is no success, so adv_pos is 0; at k = G there is no failure, so adv_neg is 0;
- centred estimators give 0 to every rollout of a group with p in {0, 1};
- psr, nsr, w_reinforce and reinforce are not centred and keep their weight there.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

import fade
from fade.registry import spec

GROUP_SIZES = [2, 4, 8, 16, 64]
RTOL = 1e-9
ATOL = 1e-12


# -- the table, as reference functions of (G, c) ---------------------------------------------


def unbiased_std(g: int, c: int) -> float:
    """Unbiased std of c ones and G - c zeros: sqrt(G p q / (G - 1))."""
    p = c / g
    return math.sqrt(g * p * (1 - p) / (g - 1))


def passk_x(g: int, c: int, k: int) -> Fraction:
    """X = C(G-c-1, k-1) / C(G-1, k-1) (0 when G - c - 1 < k - 1)."""
    top = g - c - 1
    if top < k - 1 or top < 0:
        return Fraction(0)
    return Fraction(math.comb(top, k - 1), math.comb(g - 1, k - 1))


def passk_rho(g: int, c: int, k: int) -> Fraction:
    """rho = 1 - C(G-c, k) / C(G, k): the group's pass@k."""
    return 1 - Fraction(math.comb(g - c, k), math.comb(g, k))


def table(name: str, g: int, c: int, **params) -> tuple[float, float]:
    """(a+, a-) from docs/method.md, section 2, before the k = 0 / k = G conventions."""
    p = c / g
    q = 1 - p
    if name == "dr_grpo":
        return q, -p
    if name == "grpo":
        s = unbiased_std(g, c) + params.get("eps", 1e-6)
        return q / s, -p / s
    if name == "rloo":
        return g * q / (g - 1), -g * p / (g - 1)
    if name in ("reinforce", "psr"):
        return 1.0, 0.0
    if name == "nsr":
        return 0.0, -1.0
    if name == "w_reinforce":
        return params["lam"], -1.0
    if name == "maxrl":
        return (q / p if p > 0 else 0.0), -1.0
    if name == "power":
        a = params["alpha"]
        return q**a, -p * q ** (a - 1) if q > 0 else 0.0
    if name == "asym_grpo":
        return q, -p / params["delta"]
    if name == "passk":
        k = params["k"]
        x = passk_x(g, c, k)
        rho = passk_rho(g, c, k)
        var = rho * (1 - rho)
        if var == 0:
            return 0.0, 0.0  # every k-subset agrees: no signal (sigma_k = 0)
        sigma = math.sqrt(var)
        return float(q * x) / sigma, float(-p * x) / sigma
    if name == "pkpo":
        k = params["k"]
        x = float(passk_x(g, c, k))
        return k * q * x, -k * p * x
    if name == "logmeanexp":
        b = params["beta"]
        z = p * math.exp(b) + q
        return (math.exp(b) / z - 1) / b, (1 / z - 1) / b
    raise AssertionError(name)


def expected_profile(name: str, g: int, **params) -> tuple[list[float], list[float]]:
    centred = spec(name).centred
    pos, neg = [], []
    for c in range(g + 1):
        a_pos, a_neg = table(name, g, c, **params)
        if centred and c in (0, g):
            a_pos = a_neg = 0.0
        pos.append(a_pos if c > 0 else 0.0)
        neg.append(a_neg if c < g else 0.0)
    return pos, neg


CASES = [
    ("dr_grpo", {}),
    ("grpo", {}),
    ("grpo", {"eps": 1e-4}),
    ("grpo", {"eps": 0.5}),
    ("rloo", {}),
    ("reinforce", {}),
    ("psr", {}),
    ("nsr", {}),
    ("w_reinforce", {"lam": 0.1}),
    ("w_reinforce", {"lam": 0.7}),
    ("maxrl", {}),
    ("power", {"alpha": 1.0}),
    ("power", {"alpha": 2.0}),
    ("power", {"alpha": 3.0}),
    ("power", {"alpha": 0.5}),
    ("asym_grpo", {"delta": 0.3}),
    ("asym_grpo", {"delta": 1.0}),
    ("asym_grpo", {"delta": 2.0}),
    ("logmeanexp", {"beta": 2.0}),
    ("logmeanexp", {"beta": 0.5}),
    ("logmeanexp", {"beta": -1.0}),
]

PASSK_CASES = [(name, g, k) for name in ("passk", "pkpo") for g in GROUP_SIZES for k in range(1, g + 1)]


def _ids(case):
    name, params = case
    return name + "".join(f"-{k}={v}" for k, v in params.items())


def check_profile(name: str, g: int, **params) -> None:
    prof = fade.mass_profile(name, group_size=g, **params)
    exp_pos, exp_neg = expected_profile(name, g, **params)
    exp_pos_t = torch.tensor(exp_pos, dtype=torch.float64)
    exp_neg_t = torch.tensor(exp_neg, dtype=torch.float64)
    p = torch.arange(g + 1, dtype=torch.float64) / g

    torch.testing.assert_close(prof.p, p, rtol=0, atol=0)
    torch.testing.assert_close(prof.adv_pos, exp_pos_t, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(prof.adv_neg, exp_neg_t, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(prof.positive, p * exp_pos_t, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(prof.negative, (1 - p) * exp_neg_t.abs(), rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(prof.weight, exp_pos_t - exp_neg_t, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("g", GROUP_SIZES)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_table_row(case, g):
    name, params = case
    check_profile(name, g, **params)


@pytest.mark.parametrize(("name", "g", "k"), PASSK_CASES)
def test_passk_and_pkpo_rows_for_every_k(name, g, k):
    check_profile(name, g, k=k)


@pytest.mark.parametrize("g", GROUP_SIZES)
def test_grpo_population_std(g):
    """std="population" divides by sqrt(pq) + eps instead of the unbiased std."""
    prof = fade.mass_profile("grpo", group_size=g, std="population")
    for c in range(1, g):
        p = c / g
        s = math.sqrt(p * (1 - p)) + 1e-6
        assert prof.adv_pos[c].item() == pytest.approx((1 - p) / s, rel=RTOL)
        assert prof.adv_neg[c].item() == pytest.approx(-p / s, rel=RTOL)


@pytest.mark.parametrize("g", GROUP_SIZES)
def test_pkpo_with_k1_is_dr_grpo(g):
    a = fade.mass_profile("pkpo", group_size=g, k=1)
    b = fade.mass_profile("dr_grpo", group_size=g)
    torch.testing.assert_close(a.adv_pos, b.adv_pos, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(a.adv_neg, b.adv_neg, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("g", GROUP_SIZES)
def test_power1_and_asym1_are_dr_grpo(g):
    ref = fade.mass_profile("dr_grpo", group_size=g)
    for name, params in (("power", {"alpha": 1.0}), ("asym_grpo", {"delta": 1.0})):
        prof = fade.mass_profile(name, group_size=g, **params)
        torch.testing.assert_close(prof.adv_pos, ref.adv_pos, rtol=0, atol=1e-15)
        torch.testing.assert_close(prof.adv_neg, ref.adv_neg, rtol=0, atol=1e-15)


# -- conventions -------------------------------------------------------------------------------


def _profiled_names() -> list[str]:
    return [n for n in fade.available() if not n.startswith("fade")]


def _profile(name: str, g: int) -> fade.MassProfile:
    kwargs = {}
    if "baseline_rewards" in spec(name).needs:
        kwargs["baseline_rewards"] = 0.5
    if name in ("passk", "pkpo"):
        kwargs["k"] = min(2, g)
    return fade.mass_profile(name, group_size=g, **kwargs)


@pytest.mark.parametrize("g", GROUP_SIZES)
@pytest.mark.parametrize("name", _profiled_names())
def test_no_success_at_k0_no_failure_at_kG(name, g):
    prof = _profile(name, g)
    assert prof.adv_pos[0].item() == 0.0
    assert prof.adv_neg[g].item() == 0.0
    assert prof.positive[0].item() == 0.0
    assert prof.negative[g].item() == 0.0


@pytest.mark.parametrize("g", GROUP_SIZES)
@pytest.mark.parametrize("name", [n for n in _profiled_names() if spec(n).centred])
def test_centred_estimators_are_sign_balanced_and_silent_at_p0_p1(name, g):
    """Centring gives c a+ + (G - c) a- = 0, that is m_S = m_F at every p."""
    prof = _profile(name, g)
    torch.testing.assert_close(prof.positive, prof.negative, rtol=1e-9, atol=1e-12)
    for k in (0, g):
        assert prof.adv_pos[k].item() == 0.0 and prof.adv_neg[k].item() == 0.0


@pytest.mark.parametrize("g", GROUP_SIZES)
@pytest.mark.parametrize("name", ["psr", "reinforce", "nsr", "w_reinforce"])
def test_uncentred_estimators_keep_weight_at_p0_p1(name, g):
    prof = fade.mass_profile(name, group_size=g)
    if name != "nsr":
        assert prof.adv_pos[g].item() > 0  # every rollout succeeded: still reinforced
    if name in ("nsr", "w_reinforce"):
        assert prof.adv_neg[0].item() == -1.0  # every rollout failed: still pushed down


@pytest.mark.parametrize("g", GROUP_SIZES)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_weight_is_ms_over_p_plus_mf_over_q(case, g):
    """w(p) = a+ - a- = m_S/p + m_F/q on 0 < p < 1 (the implied objective's derivative)."""
    name, params = case
    prof = fade.mass_profile(name, group_size=g, **params)
    inner = slice(1, g)
    p = prof.p[inner]
    w = prof.positive[inner] / p + prof.negative[inner] / (1 - p)
    torch.testing.assert_close(prof.weight[inner], w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("g", GROUP_SIZES)
def test_implied_objectives(g):
    """dr_grpo ascends p (w = 1), maxrl log p (w = 1/p), rloo G/(G-1) p, power q^(alpha-1)."""
    inner = slice(1, g)
    p = torch.arange(g + 1, dtype=torch.float64)[inner] / g
    ones = torch.ones_like(p)
    torch.testing.assert_close(fade.mass_profile("dr_grpo", group_size=g).weight[inner], ones)
    torch.testing.assert_close(fade.mass_profile("maxrl", group_size=g).weight[inner], 1 / p)
    torch.testing.assert_close(fade.mass_profile("rloo", group_size=g).weight[inner], ones * g / (g - 1))
    for alpha in (0.5, 2.0, 3.0):
        w = fade.mass_profile("power", group_size=g, alpha=alpha).weight[inner]
        torch.testing.assert_close(w, (1 - p) ** (alpha - 1))


# -- estimators and group sizes that give no signal at all -----------------------------------------


def _params(name: str) -> dict:
    return {"total_steps": 10} if name == "fade_decay" else {"path": "shift"} if name == "fade_fixed" else {}


#: The estimators whose advantage of a rollout does not subtract a baseline from its own group:
#: the REINFORCE family (r, r - 1, lam r - (1 - r)), ReMax (the greedy completion's reward) and
#: REINFORCE++ (the batch mean).
NO_GROUP_BASELINE = {"reinforce", "psr", "nsr", "w_reinforce", "remax", "reinforce_pp"}


@pytest.mark.parametrize("name", fade.available())
def test_one_rollout_groups_carry_signal_only_without_a_group_baseline(name):
    """A group of one is its own baseline: every estimator that subtracts the group's (weighted)
    mean gives it advantage 0 whatever the reward, so training with G = 1 learns nothing; the
    others keep their weight (psr reinforces a success, nsr pushes a failure down)."""
    if name in ("passk", "pkpo", "grpo_passk"):
        with pytest.raises(ValueError, match="at least k rollouts"):
            fade.carries_signal(name, 1, **_params(name))
        return
    assert fade.carries_signal(name, 1, **_params(name)) == (name in NO_GROUP_BASELINE)


@pytest.mark.parametrize("g", [2, 3, 4, 8])
@pytest.mark.parametrize("name", fade.available())
def test_every_estimator_carries_signal_from_two_rollouts_up(name, g):
    params = {**_params(name), **({"k": min(2, g - 1)} if name in ("passk", "pkpo") else {})}
    assert fade.carries_signal(name, g, **params)


@pytest.mark.parametrize("g", [2, 3, 4, 8])
@pytest.mark.parametrize("name", ["passk", "pkpo"])
def test_pass_at_k_of_the_whole_group_carries_no_signal(name, g):
    """With k = G the group is its only subset of k: pass@k is one number for every rollout, and
    no rollout changes it. k = G - 1 already moves it."""
    assert not fade.carries_signal(name, g, k=g)
    assert fade.carries_signal(name, g, k=g - 1) == (g > 1)


def test_carries_signal_does_not_advance_a_stateful_estimator():
    est = fade.estimator("fade")
    est.observe(entropy=1.0)
    before = est.state_dict()
    assert fade.carries_signal(est, 4)
    assert est.state_dict() == before
    with pytest.raises(ValueError, match="group_size"):
        fade.carries_signal("grpo", 0)
