"""The advantage estimators of RL with verifiable rewards, one formula each.

Each function maps a batch of rewards ``r`` (one per rollout) and its grouping ``g`` (the
rollouts that share a prompt) to one advantage per rollout. Notation in the docstrings: for a
rollout i of group g, ``mean`` and ``std`` are the group's reward mean and standard deviation,
``n`` its size; for binary rewards ``p`` is the group's solve rate and ``q = 1 - p``.

Conventions shared by every estimator:
- A one-rollout group has no peer to compare with: centred estimators give it advantage 0.
  The estimators that verl also defines (grpo, dr_grpo, rloo, opo, gpg, reinforce_pp_baseline)
  take ``lone="verl"`` for verl's loop convention instead: the lone rollout is compared with a
  mean of 0 and, where the formula divides by a std, a std of 1 (so grpo gives it r / (1 + eps)).
- Groups whose rollouts all have the same reward get 0 from every centred estimator.
- Dtype and device follow the rewards; there is no Python loop over groups or rollouts.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .registry import register
from .segments import Groups
from .validation import plain, require

# -- parameter checks ------------------------------------------------------------------------

#: What a one-rollout group gets (the ``lone`` parameter): "zero", fade's convention, or "verl",
#: verl's loop implementations' (mean 0, std 1).
LONE = ("zero", "verl")


#: The smallest delta (asym_grpo, FADE) accepted: failures get divided by delta, and 1/delta must
#: stay finite in float32, the narrowest dtype estimators compute in at full range.
DELTA_FLOOR = 1 / torch.finfo(torch.float32).max


def check_delta_value(params: dict[str, Any], key: str) -> None:
    require(params, key, low=0.0, low_open=True)
    if params[key] < DELTA_FLOOR:
        raise ValueError(
            f"{key} must be >= {DELTA_FLOOR:.3g} (failures are divided by it, and 1/{key} must be finite "
            f"in float32), got {params[key]!r}"
        )


def _tiny_std(dtype: torch.dtype) -> float:
    """An eps below which a std lost to underflow (squares of subnormals) would show in s + eps."""
    fi = torch.finfo(dtype)
    return math.sqrt(fi.smallest_normal) / fi.eps


def _check_eps(p: dict[str, Any]) -> None:
    require(p, "eps", low=0.0)


def _check_k(p: dict[str, Any]) -> None:
    k = plain(p, "k")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _check_lone(p: dict[str, Any]) -> None:
    if not isinstance(p["lone"], str) or p["lone"] not in LONE:
        raise ValueError(
            f"lone must be 'zero' (a one-rollout group gets advantage 0) or 'verl' (it is compared with a mean "
            f"of 0 and a std of 1, as verl's loop implementations do), got {p['lone']!r}"
        )


def _check_grpo(p: dict[str, Any]) -> None:
    _check_lone(p)
    _check_eps(p)
    if not isinstance(p["std"], str) or p["std"] not in ("unbiased", "population"):
        raise ValueError(f"std must be 'unbiased' or 'population', got {p['std']!r}")
    if not isinstance(p["scale"], str) or p["scale"] not in ("group", "batch", "none"):
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {p['scale']!r}")


def _log_comb(a: torch.Tensor, b: int, log_fact: torch.Tensor) -> torch.Tensor:
    """log C(a, b) elementwise for int64 ``a``; -inf where a < b. ``log_fact[m] = log m!``."""
    ok = a >= b
    a = a.clamp_min(b)
    return torch.where(ok, log_fact[a] - log_fact[b] - log_fact[a - b], torch.full_like(log_fact[a], -torch.inf))


def _log_factorials(n_max: int, device: torch.device) -> torch.Tensor:
    """log m! for m = 0..n_max in float64: a table lookup replaces lgamma on every group."""
    return torch.lgamma(torch.arange(n_max + 1, dtype=torch.float64, device=device) + 1)


def _require_group_size(g: Groups, k: int, name: str) -> None:
    smallest = int(g.counts.min())
    if smallest < k:
        raise ValueError(
            f"{name} with k={k} needs every group to have at least k rollouts; smallest group has {smallest}"
        )


def _comb_ratio(top: torch.Tensor, bottom: torch.Tensor, b: int, log_fact: torch.Tensor) -> torch.Tensor:
    """C(top, b) / C(bottom, b) for int64 tensors, stable for large values."""
    return torch.exp(_log_comb(top, b, log_fact) - _log_comb(bottom, b, log_fact))


def _lone_rows(g: Groups, lone: str) -> torch.Tensor | None:
    """With ``lone="verl"``, a bool per rollout: whether it is alone in its group; else None."""
    if lone != "verl" or g.size is not None and g.size > 1:
        return None
    alone = g.counts == 1
    return alone.index_select(0, g.index) if bool(alone.any()) else None


def _centre(r: torch.Tensor, g: Groups, lone: str) -> torch.Tensor:
    """The group mean at every rollout; 0 for a lone rollout under ``lone="verl"``."""
    mean = g.mean_of(r)
    rows = _lone_rows(g, lone)
    return mean if rows is None else mean.masked_fill(rows, 0)


def _successes(r: torch.Tensor, g: Groups) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Group sizes n, success counts c (int64) and the log-factorial table up to max n."""
    n = g.counts
    c = g.sum(r).round().to(torch.int64)
    return n, c, _log_factorials(int(n.max()), r.device)


# -- group-centred estimators ------------------------------------------------------------------


@register("dr_grpo", centred=True, check=_check_lone, lone="zero")
def dr_grpo(r: torch.Tensor, g: Groups, *, lone: str) -> torch.Tensor:
    """Dr. GRPO: A_i = r_i - mean.

    GRPO without the standard-deviation scale (Liu et al. 2025, "Understanding R1-Zero-Like
    Training: A Critical Perspective", arXiv 2503.20783). Binary: a+ = q, a- = -p,
    m_S = m_F = pq; implied objective p.
    """
    return r - _centre(r, g, lone)


@register("grpo", centred=True, check=_check_grpo, eps=1e-6, std="unbiased", scale="group", lone="zero")
def grpo(r: torch.Tensor, g: Groups, *, eps: float, std: str, scale: str, lone: str) -> torch.Tensor:
    """GRPO: A_i = (r_i - mean) / (s + eps).

    Group-normalised advantage (Shao et al. 2024, DeepSeekMath, arXiv 2402.03300). ``s`` is the
    group's standard deviation, unbiased by default as in verl (``std="population"`` for the
    biased one); ``scale="batch"`` divides by the whole batch's std instead (TRL's
    ``scale_rewards="batch"``), ``"none"`` not at all. verl uses eps=1e-6, TRL 1e-4.
    Binary (group scale): a+ = q/s, a- = -p/s, m_S = m_F = pq/s.
    """
    unbiased = std == "unbiased"
    if scale == "none":
        return r - _centre(r, g, lone)
    alone = _lone_rows(g, lone)
    out = None
    if scale == "group" and eps >= _tiny_std(r.dtype):
        d = r - g.expand(g.mean(r))
        # Corrected two-pass centring: the mean of n equal non-dyadic values can round off by an
        # ulp, and dividing that residue by a near-zero std would give a constant group advantages
        # of order 0.1 instead of 0. Re-centring on the residuals' mean makes them exactly 0.
        d = d - g.expand(g.mean(d))
        n = g.count(r.dtype)
        var = g.sum(d * d) / ((n - 1).clamp_min(1) if unbiased else n)
        # Squares overflow from |d| ~ 1e19 in float32 (300 in float16): then take the scaled path.
        if bool(torch.isfinite(var.sum())):
            denom = var.sqrt() + eps
            inv = torch.where(denom > 0, 1 / denom.clamp_min(torch.finfo(r.dtype).tiny), torch.zeros_like(denom))
            out = d * g.expand(inv)
    if out is None:
        out = _grpo_scaled(r, g, eps=eps, unbiased=unbiased, batch=scale == "batch", alone=alone)
    if alone is not None and scale == "group":
        # verl's loops: a lone rollout's mean is 0 and its std 1.
        out = torch.where(alone, r / (1 + eps), out)
    return out


def _grpo_scaled(
    r: torch.Tensor, g: Groups, *, eps: float, unbiased: bool, batch: bool, alone: torch.Tensor | None = None
) -> torch.Tensor:
    """GRPO on rewards divided by a power of two per group (per batch for ``batch``).

    (r - mean)/(s + eps) = (x - mean_x)/(s_x + eps/m) for x = r/m: exact to rounding at any
    magnitude, where the squares of r would overflow or underflow. Half precision runs in float32.
    ``alone`` marks the rollouts centred on 0 instead of their group mean (``lone="verl"``).
    """
    w = r.float() if r.dtype in (torch.float16, torch.bfloat16) else r
    if batch:
        _, e = math.frexp(float(w.abs().max()))
        m = math.ldexp(1.0, e - 1)
        x = w / m
    else:
        m = g.magnitude(w)
        x = w / g.expand(m)
    d = x - g.expand(g.mean(x))
    d = d - g.expand(g.mean(d))
    if alone is not None:
        d = torch.where(alone, x, d)
    if batch:
        # The whole batch's reward std (TRL's scale_rewards="batch"), centred twice as above.
        xc = x - x.mean()
        xc = xc - xc.mean()
        var = float(xc.square().sum(dtype=torch.float64)) / max(w.numel() - (1 if unbiased else 0), 1)
        denom = math.sqrt(var) + eps / m
        out = d / denom if denom > 0 else d
    else:
        n = g.count(w.dtype)
        var = g.sum(d * d) / ((n - 1).clamp_min(1) if unbiased else n)
        denom = var.sqrt() + eps / m  # eps/m may overflow: then the advantage underflows to 0
        inv = torch.where(denom > 0, 1 / denom.clamp_min(torch.finfo(w.dtype).tiny), torch.zeros_like(denom))
        out = d * g.expand(inv)
    return out.to(r.dtype)


@register("rloo", centred=True, check=_check_lone, lone="zero")
def rloo(r: torch.Tensor, g: Groups, *, lone: str) -> torch.Tensor:
    """RLOO: A_i = r_i - mean_{j != i} r_j = n (r_i - mean) / (n - 1).

    Leave-one-out baseline (Kool et al. 2019; Ahmadian et al. 2024, arXiv 2402.14740).
    Binary: a+ = n q/(n-1), a- = -n p/(n-1). A lone rollout gets 0, or r with ``lone="verl"``
    (verl's ``rloo``; its ``rloo_vectorized`` gives 0).
    """
    n = g.sizes(r.dtype)
    # n/(n-1) first: (r - mean) * n can overflow where the advantage itself does not.
    out = (r - g.mean_of(r)) * (n / (n - 1).clamp_min(1))
    alone = _lone_rows(g, lone)
    return out if alone is None else torch.where(alone, r, out)


@register("maxrl", centred=True, rewards="unit")
def maxrl(r: torch.Tensor, g: Groups) -> torch.Tensor:
    """MaxRL: A_i = (r_i - mean) / mean, and 0 where mean = 0.

    Normalising by the solve rate makes the implied objective log p (maximum likelihood of
    success). Binary: a+ = q/p, a- = -1, m_S = m_F = q. Rewards in [0, 1].
    """
    mean = g.mean(r)
    tiny = torch.finfo(r.dtype).tiny
    if bool(((mean > 0) & (mean < tiny)).any()):
        # A subnormal mean has few significant bits and 1/mean overflows; the formula is
        # scale-free, so divide each group by its largest reward first.
        r = r / g.expand(g.magnitude(r))
        mean = g.mean(r)
    inv = torch.where(mean > 0, 1 / mean.clamp_min(tiny), torch.zeros_like(mean))
    return (r - g.expand(mean)) * g.expand(inv)


def _check_alpha(p: dict[str, Any]) -> None:
    require(p, "alpha", low=0.0)


def focal(
    r: torch.Tensor, baseline: torch.Tensor, alpha: float, delta: float, groups: Groups | None = None
) -> torch.Tensor:
    """The focal, sign-weighted advantage shared by power, asym_grpo and FADE.

    A_i = (1 - b_i)^(alpha - 1) (r_i - b_i), divided by delta where r_i < b_i, with b the
    baseline (the group mean). For binary rewards m_S = p q^alpha and m_F = p q^alpha / delta.
    Where b = 1 every reward equals the baseline and the advantage is 0. With alpha = 1 and
    delta = 1 this is exactly r - b.

    ``baseline`` holds one value per group of ``groups`` (or, without groups, anything that
    broadcasts against ``r``): the focal weight is computed once per group, not per rollout.
    """
    expand = groups.expand if groups is not None else (lambda t: t)
    d = r - expand(baseline)
    if alpha != 1:
        q = 1 - baseline
        w = torch.where(q > 0, q.clamp_min(torch.finfo(r.dtype).tiny) ** (alpha - 1), torch.zeros_like(q))
        d = d * expand(w)
    if delta != 1:
        # d + (1/delta - 1) min(d, 0) is d/delta below the baseline; cheaper than a select.
        d = d + d.clamp_max(0) * (1 / delta - 1)
    return d


@register("power", centred=True, rewards="unit", check=_check_alpha, alpha=2.0)
def power(r: torch.Tensor, g: Groups, *, alpha: float) -> torch.Tensor:
    """Power(alpha): A_i = (1 - mean)^(alpha - 1) (r_i - mean).

    The FADE paper's difficulty probe: m_S = m_F = p q^alpha, so alpha > 1 moves gradient mass
    to hard prompts and alpha = 1 is dr_grpo. Rewards in [0, 1].
    """
    return focal(r, g.mean(r), alpha, 1.0, g)


def _check_delta(p: dict[str, Any]) -> None:
    check_delta_value(p, "delta")


@register("asym_grpo", check=_check_delta, delta=0.5)
def asym_grpo(r: torch.Tensor, g: Groups, *, delta: float) -> torch.Tensor:
    """AsymGRPO(delta): A_i = r_i - mean above the mean, (r_i - mean) / delta below it.

    The FADE paper's sign probe: m_S = pq, m_F = pq/delta. delta < 1 amplifies the negative
    (failure) mass, delta > 1 the positive; delta = 1 is dr_grpo.
    """
    return focal(r, g.mean(r), 1.0, delta, g)


@register("passk", centred=True, rewards="binary", check=_check_k, k=4)
def passk(r: torch.Tensor, g: Groups, *, k: int) -> torch.Tensor:
    """Pass@k training advantage (Chen et al. 2025, arXiv 2508.10751), analytic form.

    With c successes out of n: rho = 1 - C(n-c, k)/C(n, k) (the group's pass@k),
    sigma = sqrt(rho (1 - rho)), X = C(n-c-1, k-1)/C(n-1, k-1);
    a+ = (1 - rho)/sigma = q X/sigma, a- = (1 - rho - X)/sigma = -p X/sigma; 0 where sigma = 0.
    Implied objective 1 - (1-p)^k. Binary rewards; every group needs at least k rollouts.
    """
    _require_group_size(g, k, "passk")
    n, c, lf = _successes(r, g)
    fail_all = _comb_ratio(n - c, n, k, lf)  # 1 - rho
    x = _comb_ratio(n - c - 1, n - 1, k - 1, lf)
    sigma = (fail_all * (1 - fail_all)).clamp_min(0).sqrt()
    ok = sigma > 0
    safe = torch.where(ok, sigma, torch.ones_like(sigma))
    a_pos = torch.where(ok, fail_all / safe, torch.zeros_like(sigma)).to(r.dtype)
    a_neg = torch.where(ok, (fail_all - x) / safe, torch.zeros_like(sigma)).to(r.dtype)
    # r is 0 or 1, so this picks a+ or a- exactly (a product by 1 or 0, a sum with 0).
    return g.expand(a_pos) * r + g.expand(a_neg) * (1 - r)


@register("pkpo", centred=True, rewards="binary", check=_check_k, k=4)
def pkpo(r: torch.Tensor, g: Groups, *, k: int) -> torch.Tensor:
    """PKPO (Walder & Karkhanis 2025, arXiv 2505.15201), binary rewards, centred.

    The unbiased pass@k gradient weights s_i = k for a success and k rho(n-1, c, k-1) =
    k (1 - X) for a failure (the paper's weights times n, so that pkpo with k = 1 is dr_grpo),
    minus their group mean: A_i = k X (r_i - p). m_S = m_F = k p q X. The group mean stands in
    for the paper's leave-one-out baselines. Every group needs at least k rollouts.
    """
    _require_group_size(g, k, "pkpo")
    n, c, lf = _successes(r, g)
    x = _comb_ratio(n - c - 1, n - 1, k - 1, lf)
    p = c.to(torch.float64) / n
    # s - mean(s) with s = k (success), k (1 - X) (failure) is k X (r - p) in closed form.
    return g.expand((k * x).to(r.dtype)) * (r - g.expand(p.to(r.dtype)))


def _check_beta(p: dict[str, Any]) -> None:
    require(p, "beta")
    if abs(p["beta"]) < torch.finfo(torch.float64).smallest_normal:
        raise ValueError(
            f"beta must be non-zero, at least {torch.finfo(torch.float64).smallest_normal:.3g} in "
            f"magnitude (beta -> 0 is dr_grpo), got {p['beta']!r}"
        )


@register("logmeanexp", centred=True, check=_check_beta, beta=2.0)
def logmeanexp(r: torch.Tensor, g: Groups, *, beta: float) -> torch.Tensor:
    """Log-mean-exp: A_i = (exp(beta r_i) / mean_j exp(beta r_j) - 1) / beta.

    The score-function weight of the risk-seeking objective (1/beta) log E[exp(beta r)], with
    the group mean as baseline. beta -> 0 recovers dr_grpo; beta > 0 favours rare successes.
    Binary: a+ = (e^beta / (p e^beta + q) - 1)/beta, a- = (1/(p e^beta + q) - 1)/beta.
    """
    fi = torch.finfo(r.dtype)
    if r.dtype != torch.float64 and not fi.smallest_normal / fi.eps < abs(beta) < fi.max:
        # beta itself is not a normal number in r's dtype (1e39 in float32): work in float64.
        return logmeanexp(r.double(), g, beta=beta).to(r.dtype)
    # Shift by the group's max (min for beta < 0) so that z = beta (r - ref) <= 0: exp cannot
    # overflow and beta * r is never formed (it overflows for large rewards). With e = exp(z):
    # A = (e/mean(e) - 1)/beta = (em1 - mean(em1)) / (beta mean(e)), em1 = expm1(z) = e - 1.
    d = r - g.expand(g.max(r) if beta > 0 else -g.max(-r))
    z = d * beta
    em1 = torch.expm1(z)
    m = g.mean(em1)
    if abs(beta) >= 1:
        return (em1 - g.expand(m)) * g.expand(1 / (beta * (1 + m)))
    # Small beta: where z is tiny or subnormal, expm1(z)/beta = (r - ref)(1 + z/2) keeps the
    # digits that z = beta (r - ref) loses (beta -> 0 is dr_grpo).
    u = torch.where(z.abs() < 1e-10, d * (1 + z / 2), em1 * (1 / beta))
    return (u - g.mean_of(u)) / g.expand(1 + m)


@register("gpg", centred=True, check=_check_lone, lone="zero")
def gpg(r: torch.Tensor, g: Groups, *, lone: str) -> torch.Tensor:
    """GPG (Chu et al. 2025, arXiv 2504.02546), as verl computes it.

    A_i = (N / M) (r_i - mean), where N is the batch size and M the number of rollouts with a
    non-zero reward (at least 1): a batch-level correction for groups that carry no signal.
    """
    m = torch.count_nonzero(r).clamp_min(1).to(r.dtype)
    return (r.numel() / m) * (r - _centre(r, g, lone))


def _check_grpo_passk(p: dict[str, Any]) -> None:
    _check_eps(p)
    if not isinstance(plain(p, "norm_by_std"), bool):
        raise ValueError(f"norm_by_std must be True or False, got {p['norm_by_std']!r}")


@register("grpo_passk", check=_check_grpo_passk, eps=1e-6, norm_by_std=True)
def grpo_passk(r: torch.Tensor, g: Groups, *, eps: float, norm_by_std: bool) -> torch.Tensor:
    """verl's grpo_passk (after arXiv 2503.19595): only a group's best rollout gets an advantage.

    A_i = r_max - r_second (over the group) for the unique best rollout, divided by
    (std + eps) when ``norm_by_std``; every other rollout, and every rollout of a group whose
    maximum is tied, gets 0. Every group needs at least 2 rollouts.
    """
    _require_group_size(g, 2, "grpo_passk")
    top = g.max(r)
    top_mask = r == g.expand(top)
    is_top = top_mask.to(r.dtype)
    n_top = g.sum(is_top)
    # Push every group's maxima to at most the batch minimum: the group max of what is left is
    # the runner-up (exact, the other rewards are untouched), with no masked select. top - span
    # <= top - 2 max|r| <= min r under monotone rounding; where 2 max|r| overflows, mask instead.
    lo, hi = torch.aminmax(r)
    span = 2 * max(abs(float(lo)), abs(float(hi))) + 1
    if span <= torch.finfo(r.dtype).max:
        second = g.max(r - is_top * span)
    else:
        second = g.max(r.masked_fill(top_mask, -torch.inf))
    unique = n_top == 1  # a tie at the top: no unique best
    gap = torch.where(unique, top - second, torch.zeros_like(top))
    if not norm_by_std:
        return is_top * g.expand(gap)
    if eps >= _tiny_std(r.dtype):
        denom = g.std(r) + eps
        # gap and denom are >= 0: their sum is finite only if each of them is.
        if bool(torch.isfinite((gap + denom).sum())):
            ratio = torch.where(denom > 0, gap / denom, torch.zeros_like(gap))
            return is_top * g.expand(ratio)
    # The gap or the std overflows (or underflows): the ratio is scale-free, so divide the group
    # by a power of two first, and eps with it.
    w = r.float() if r.dtype in (torch.float16, torch.bfloat16) else r
    m = g.magnitude(w)
    x = w / g.expand(m)
    gap = torch.where(unique, top.to(w.dtype) / m - second.to(w.dtype) / m, torch.zeros_like(m))
    denom = g.std(x) + eps / m
    ratio = torch.where(denom > 0, gap / denom, torch.zeros_like(gap))
    return is_top * g.expand(ratio.to(r.dtype))


def _check_reinforce_pp_baseline(p: dict[str, Any]) -> None:
    _check_lone(p)
    _check_eps(p)


@register("reinforce_pp_baseline", centred=True, uses=("lengths",), check=_check_reinforce_pp_baseline, eps=1e-8,
          lone="zero")
def reinforce_pp_baseline(
    r: torch.Tensor, g: Groups, *, eps: float, lone: str, lengths: torch.Tensor | None = None
) -> torch.Tensor:
    """REINFORCE++ with a group baseline (Hu 2025, arXiv 2501.03262), as verl computes it.

    x_i = r_i - mean, then whitened over the batch: A_i = (x_i - mu) / sqrt(var + eps), where
    mu and the unbiased var are over tokens, so each rollout weighs by its length when
    ``lengths`` is given (equal weights otherwise; a rollout of length 0 weighs nothing).
    """
    return _whiten(r - _centre(r, g, lone), lengths, eps)


@register("reinforce_pp", uses=("lengths",), check=_check_eps, eps=1e-8)
def reinforce_pp(r: torch.Tensor, g: Groups, *, eps: float, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """REINFORCE++ (Hu 2025, arXiv 2501.03262) for outcome rewards, as verl computes it.

    A_i = (r_i - mu) / sqrt(var + eps), mu and the unbiased var over the batch's tokens (each
    rollout weighs by its length when ``lengths`` is given). Groups are not used.
    """
    return _whiten(r, lengths, eps)


def _whiten(x: torch.Tensor, lengths: torch.Tensor | None, eps: float) -> torch.Tensor:
    w = lengths if lengths is not None else torch.ones_like(x)
    total = w.sum()
    if float(total) <= 1:
        raise ValueError(f"whitening needs more than one token in the batch, got {float(total)}")
    mu = (w * x).sum() / total
    var = (w * (x - mu) ** 2).sum() / (total - 1)
    if eps >= _tiny_std(x.dtype) ** 2 and bool(torch.isfinite(var)):
        return (x - mu) * torch.rsqrt(var + eps)
    return _whiten_scaled(x, w, eps)


def _whiten_scaled(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """_whiten on x and w divided by powers of two, for sums and squares that overflow or underflow.

    (x - mu)/sqrt(var + eps) = (y - mu_y)/sqrt(var_y + eps/m^2) for y = x/m; the weights only
    enter through w/total and total - 1, which are formed in float64.
    """
    dtype = x.dtype
    if dtype in (torch.float16, torch.bfloat16):
        x, w = x.float(), w.float()
    _, e = math.frexp(float(x.abs().max()))
    m = math.ldexp(1.0, e - 1) if float(x.abs().max()) > 0 else 1.0
    _, ew = math.frexp(float(w.max()))
    mw = math.ldexp(1.0, ew - 1)
    y, v = x / m, w / mw
    total_v = float(v.sum(dtype=torch.float64))
    total = total_v * mw
    mu = float((v * y).sum(dtype=torch.float64)) / total_v
    yc = y - mu
    # var = sum w (x - mu)^2 / (total - 1) in units of m^2; a total beyond float64 makes the -1 moot.
    factor = mw / (total - 1) if math.isfinite(total) else 1 / total_v
    var = float((v * yc * yc).sum(dtype=torch.float64)) * factor
    denom = math.sqrt(var + eps / m / m)  # inf when eps/m^2 overflows: the advantage underflows to 0
    return (yc / denom if denom > 0 else yc).to(dtype)


@register("opo", needs=("lengths",), check=_check_lone, lone="zero")
def opo(r: torch.Tensor, g: Groups, *, lone: str, lengths: torch.Tensor) -> torch.Tensor:
    """OPO (Hao et al. 2025, arXiv 2505.23585): the length-weighted optimal baseline.

    A_i = r_i - sum_j l_j r_j / sum_j l_j over the group, with l the response lengths (a
    rollout of length 0 weighs nothing; every group needs some length). A lone rollout gets 0,
    or r with ``lone="verl"`` (verl's baseline 0).
    """
    total = g.sum(lengths)
    single = g.counts == 1  # a lone rollout is its own baseline, whatever its length
    empty = (total <= 0) & ~single
    if bool(empty.any()):
        first = int((g.index == int(empty.nonzero()[0, 0])).nonzero()[0, 0])
        raise ValueError(
            f"opo weighs each group's baseline by its rollouts' lengths; the group of rollout {first} has total "
            "length 0 (every response empty), so its baseline 0/0 is undefined"
        )
    baseline = g.sum(lengths * r) / torch.where(single, torch.ones_like(total), total)
    if not bool(torch.isfinite(baseline.sum())):
        # lengths * r or the sums overflow: a weighted mean is unchanged by scaling the weights,
        # and scales with the rewards, so divide both by powers of two.
        m = g.magnitude(r)
        v = lengths / g.expand(g.magnitude(lengths))
        baseline = g.sum(v * (r / g.expand(m))) / g.sum(v).clamp_min(torch.finfo(r.dtype).tiny) * m
    if bool(single.any()):
        baseline = torch.where(single, g.sum(r), baseline)
    out = r - g.expand(baseline)
    alone = _lone_rows(g, lone)
    return out if alone is None else torch.where(alone, r, out)


@register("remax", needs=("baseline_rewards",))
def remax(r: torch.Tensor, g: Groups, *, baseline_rewards: torch.Tensor) -> torch.Tensor:
    """ReMax (Li et al. 2023, arXiv 2310.10505): A_i = r_i - b_i.

    ``b_i`` is the reward of the greedy response to rollout i's prompt, passed as
    ``baseline_rewards``. Groups are not used.
    """
    return r - baseline_rewards


# -- uncentred estimators ----------------------------------------------------------------------


@register("reinforce")
def reinforce(r: torch.Tensor, g: Groups) -> torch.Tensor:
    """REINFORCE without baseline (Williams 1992): A_i = r_i. Binary: a+ = 1, a- = 0."""
    return r.clone()


@register("psr", rewards="unit")
def psr(r: torch.Tensor, g: Groups) -> torch.Tensor:
    """Positive sample reinforcement (Zhu et al. 2025, arXiv 2506.01347): A_i = r_i.

    Only successes are reinforced (a+ = 1, a- = 0; m_S = p, m_F = 0). Rewards in [0, 1].
    """
    return r.clone()


@register("nsr", rewards="unit")
def nsr(r: torch.Tensor, g: Groups) -> torch.Tensor:
    """Negative sample reinforcement (Zhu et al. 2025, arXiv 2506.01347): A_i = r_i - 1.

    Only failures are pushed down (a+ = 0, a- = -1; m_S = 0, m_F = q). Rewards in [0, 1].
    """
    return r - 1


def _check_lam(p: dict[str, Any]) -> None:
    require(p, "lam", low=0.0)


@register("w_reinforce", rewards="unit", check=_check_lam, lam=0.1)
def w_reinforce(r: torch.Tensor, g: Groups, *, lam: float) -> torch.Tensor:
    """W-REINFORCE (Zhu et al. 2025, arXiv 2506.01347): A_i = lam r_i - (1 - r_i).

    lam times PSR plus NSR: a+ = lam, a- = -1, m_S = lam p, m_F = q. Rewards in [0, 1].
    """
    if lam > torch.finfo(r.dtype).max:
        raise ValueError(
            f"lam={lam!r} is not representable in {r.dtype} (max {torch.finfo(r.dtype).max:.3g}): "
            "pass float64 rewards or a smaller lam"
        )
    return lam * r - (1 - r)
