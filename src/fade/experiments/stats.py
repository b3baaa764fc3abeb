"""Paired statistics for comparing estimators over seeds: per-seed differences, a bootstrap
confidence interval of their mean, a verdict read off that interval, and the design's minimum
detectable difference.

Runs of a sweep are paired by seed: the same seed gives every estimator the same base policy and
the same prompt stream, so the seed-to-seed variation they share cancels in the difference
a_s - b_s, and a comparison of two estimators is a one-sample question about those differences.
A claim "a > b" is *supported* when the whole 95% interval of the mean difference lies above 0,
*contradicted* when it lies below 0, and *unresolved* otherwise, in which case the interval's
half-width says how large a difference the runs could have resolved. Everything here is numpy
and the standard library (no scipy): Student's t quantiles come from the closed-form t CDF for
an integer number of degrees of freedom, inverted by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = [
    "CONTRADICTED",
    "MIN_PAIRED_SEEDS",
    "SUPPORTED",
    "UNRESOLVED",
    "PairedVerdict",
    "bootstrap_ci",
    "minimum_detectable_difference",
    "paired_differences",
    "paired_verdict",
    "pooled_paired_sd",
    "student_t_cdf",
    "student_t_quantile",
]

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
UNRESOLVED = "unresolved"
#: Seeds a paired comparison needs before its interval is trusted: below 5 the bootstrap has
#: fewer than 5^5 = 3125 distinct resamples and its interval's coverage depends on the tails of a
#: handful of numbers.
MIN_PAIRED_SEEDS = 5


def paired_differences(a: Mapping[int, float], b: Mapping[int, float]) -> np.ndarray:
    """d_s = a[s] - b[s] for every seed s in both mappings, in increasing seed order; a seed where
    either side is NaN (or infinite) is dropped."""
    shared = sorted(set(a) & set(b))
    diffs = np.array([float(a[s]) - float(b[s]) for s in shared], dtype=float)
    return diffs[np.isfinite(diffs)]


def student_t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with an integer number ``df`` >= 1 of degrees of freedom.

    Closed form (Abramowitz & Stegun 26.7.3), with theta = arctan(t / sqrt(df)) and
    A = P(|T| < |t|): for odd df, A = (2/pi) [theta + sin(theta) (cos(theta) + (2/3) cos^3(theta)
    + ... + (2*4*...*(df-3)) / (1*3*...*(df-2)) cos^(df-2)(theta))] (A = 2 theta / pi for df = 1);
    for even df, A = sin(theta) [1 + (1/2) cos^2(theta) + (1*3)/(2*4) cos^4(theta) + ... +
    (1*3*...*(df-3)) / (2*4*...*(df-2)) cos^(df-2)(theta)]. Then P(T <= t) = (1 + sign(t) A) / 2.
    """
    if int(df) != df or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    df = int(df)
    theta = math.atan(abs(t) / math.sqrt(df))
    c, s = math.cos(theta), math.sin(theta)
    if df % 2:
        series, term = 0.0, 0.0
        if df > 1:
            term = c
            series = term
            for j in range(3, df - 1, 2):  # term_j = term_{j-2} * (j - 1) / j * cos^2
                term *= (j - 1) / j * c * c
                series += term
        a = 2 / math.pi * (theta + s * series)
    else:
        term = 1.0
        series = term
        for j in range(2, df - 1, 2):  # term_j = term_{j-2} * (j - 1) / j * cos^2
            term *= (j - 1) / j * c * c
            series += term
        a = s * series
    return 0.5 + math.copysign(0.5 * a, t)


def student_t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with integer ``df``: :func:`student_t_cdf` inverted by
    bisection to 1e-12 (the CDF is monotone, so bisection cannot miss). Above 1000 degrees of
    freedom, where the CDF's series gets long, the Cornish-Fisher expansion about the normal
    quantile z (Abramowitz & Stegun 26.7.5) is exact to ~1e-9:
    t = z + (z^3 + z) / (4 df) + (5 z^5 + 16 z^3 + 3 z) / (96 df^2)."""
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    if int(df) != df or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    if df > 1000:
        z = NormalDist().inv_cdf(p)
        return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < p:
        hi *= 2
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if student_t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def bootstrap_ci(
    diffs: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    expanded: bool = True,
    min_n: int = MIN_PAIRED_SEEDS,
) -> tuple[float, float, float]:
    """(mean, low, high): the mean of the paired differences and a bootstrap ``level`` interval.

    Percentile bootstrap (Efron & Tibshirani 1993, ch. 13): draw ``resamples`` resamples of the n
    differences with replacement (one (resamples, n) index draw from ``np.random.default_rng(seed)``,
    so the interval is reproducible), take each resample's mean, and read the interval off the
    quantiles of those means. BCa is not needed: the statistic is a mean, whose bootstrap
    distribution is nearly symmetric and unbiased, which is the case BCa corrects.

    ``expanded`` (the default) uses the expanded percentile interval (Hesterberg 2015, "What
    teachers should know about the bootstrap", section 5): the plain percentile interval of a mean
    is about mean +- z s sqrt((n-1)/n) / sqrt(n), too narrow at few seeds (about 88% coverage at
    n = 5 for a nominal 95%), so the tail probability alpha / 2 is replaced by
    alpha' / 2 = Phi(-sqrt(n / (n-1)) t_{1-alpha/2, n-1}), which restores the t interval's
    coverage for normal data and keeps the bootstrap's shape otherwise. ``expanded=False`` gives
    the plain percentile interval.

    Fewer than ``min_n`` (default :data:`MIN_PAIRED_SEEDS`) finite differences is refused with a
    ValueError: the interval would look precise and not be. A constant difference gives that
    constant with zero width.
    """
    d = np.asarray(diffs, dtype=float)
    d = d[np.isfinite(d)]
    n = d.size
    if n < max(min_n, 2):
        raise ValueError(f"a paired bootstrap needs at least {max(min_n, 2)} finite differences, got {n}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    tail = (1 - level) / 2
    if expanded:
        tail = NormalDist().cdf(-math.sqrt(n / (n - 1)) * student_t_quantile(1 - tail, n - 1))
    index = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    means = d[index].mean(axis=1)
    low, high = np.quantile(means, [tail, 1 - tail])
    mean = float(d.mean())
    # Rounding in the resample means must not put a constant difference outside its own interval.
    return mean, float(min(low, mean)), float(max(high, mean))


@dataclass(frozen=True)
class PairedVerdict:
    """The mean paired difference a - b, its interval [low, high], and the verdict on the claim."""

    mean: float
    low: float
    high: float
    n: int
    verdict: str
    level: float = 0.95

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def text(self, digits: int = 3) -> str:
        """"+0.031 [+0.012, +0.050] (n=5)"; an unresolved one adds its half-width
        ("+0.004 [-0.020, +0.028], ±0.024 half-width (n=5)")."""
        interval = f"{self.mean:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"
        if self.verdict == UNRESOLVED:
            interval += f", ±{self.half_width:.{digits}f} half-width"
        return f"{interval} (n={self.n})"


def paired_verdict(
    a: Mapping[int, float],
    b: Mapping[int, float],
    *,
    greater: bool = True,
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    min_n: int = MIN_PAIRED_SEEDS,
) -> PairedVerdict:
    """Verdict on the claim "a > b" (``greater``) or "a < b" from the interval of mean(a_s - b_s).

    For "a > b": supported when low > 0, contradicted when high < 0, unresolved otherwise; for
    "a < b" the two ends swap roles. The interval is :func:`bootstrap_ci` over the seeds both
    sides have; fewer than ``min_n`` of them is refused with a ValueError.
    """
    d = paired_differences(a, b)
    mean, low, high = bootstrap_ci(d, level=level, resamples=resamples, seed=seed, min_n=min_n)
    above, below = low > 0, high < 0
    holds, opposite = (above, below) if greater else (below, above)
    verdict = SUPPORTED if holds else CONTRADICTED if opposite else UNRESOLVED
    return PairedVerdict(mean=mean, low=low, high=high, n=int(d.size), verdict=verdict, level=level)


def minimum_detectable_difference(sd_diff: float, n: int, *, level: float = 0.95, power: float = 0.8,
                                  t: bool = True) -> float:
    """The smallest true mean difference a paired design of n seeds detects with probability ``power``.

    MDD = (q_{1-alpha/2} + q_{power}) sd_diff / sqrt(n), alpha = 1 - ``level``, with sd_diff the
    standard deviation of the per-seed differences (Cohen 1988, ch. 2; a paired design is a
    one-sample test on the differences). q is Student's t with n - 1 degrees of freedom when ``t``
    (the usual small-sample approximation to the noncentral t; it matters at 5 seeds:
    2.776 + 0.941 against 1.960 + 0.842), the normal quantile from :class:`statistics.NormalDist`
    otherwise.
    """
    if n < 2:
        raise ValueError(f"n must be >= 2 seeds, got {n!r}")
    if not (0 < level < 1 and 0 < power < 1):
        raise ValueError(f"level and power must lie in (0, 1), got {level!r} and {power!r}")
    if t:
        q = student_t_quantile(1 - (1 - level) / 2, n - 1) + student_t_quantile(power, n - 1)
    else:
        q = NormalDist().inv_cdf(1 - (1 - level) / 2) + NormalDist().inv_cdf(power)
    return q * float(sd_diff) / math.sqrt(n)


def pooled_paired_sd(groups: Sequence[Sequence[float] | np.ndarray]) -> tuple[float, int]:
    """(sd, pairs): the standard deviation of paired differences pooled over several pairs of
    estimators, and the number of differences behind it.

    Each group holds one pair's per-seed differences; each is centred on its own mean, so a real
    difference between the two estimators does not count as noise:
    sd^2 = sum_g sum_s (d_gs - mean_g)^2 / sum_g (n_g - 1). Groups with fewer than 2 finite
    differences add nothing; with none left the sd is nan.
    """
    squares, dof, count = 0.0, 0, 0
    for group in groups:
        d = np.asarray(group, dtype=float)
        d = d[np.isfinite(d)]
        if d.size < 2:
            continue
        squares += float(((d - d.mean()) ** 2).sum())
        dof += d.size - 1
        count += d.size
    return (math.sqrt(squares / dof) if dof else math.nan), count
