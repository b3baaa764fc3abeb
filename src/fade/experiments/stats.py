"""The statistics behind the sweep's verdicts, in one module: values over seeds (:class:`Stat`),
paired per-seed differences, a bootstrap confidence interval of their mean, the verdict on a
comparison (:func:`compare`) and on a claim made of several (:func:`combine`), correlations
(:func:`pearson`), and the design's minimum detectable difference.

Runs of a sweep are paired by seed: the same seed gives every estimator the same base policy and
the same prompt stream, so the seed-to-seed variation they share cancels in the difference
a_s - b_s, and a comparison of two estimators is a one-sample question about those differences.
A claim "a > b" is *supported* when the whole 95% interval of the mean difference lies above 0,
*contradicted* when it lies below 0, and *unresolved* otherwise, in which case the interval's
half-width says how large a difference the runs could have resolved. Everything here is numpy
and the standard library (no scipy): Student's t quantiles come from the closed-form t CDF for
an integer number of degrees of freedom, inverted by bisection.

Every comparison goes through :func:`compare`, which picks the rule by the number of seeds the two
sides share. With at least :data:`MIN_PAIRED_SEEDS` (5) shared seeds, the *paired rule* above;
against a constant c the same rule runs on X_s - c. With fewer shared seeds, the *spread rule* of
the 3-seed sweeps: *supported* when X's seed mean is above Y's and the intervals mean +- std over
seeds do not overlap; *not supported* when the opposite ordering holds with non-overlapping
intervals; *inconclusive (spread overlaps)* otherwise; fewer than :data:`MIN_SEEDS` seeds on either
side gives *inconclusive (fewer than 3 seeds)*. A claim made of several comparisons is supported
when all are, contradicted (not supported) when any comparison contradicts it, and unresolved
(inconclusive) otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from fade.testbed.summary import pearson

__all__ = [
    "CONTRADICTED",
    "FEW_SEEDS",
    "MIN_PAIRED_SEEDS",
    "MIN_SEEDS",
    "NOT_MEASURED",
    "NOT_SUPPORTED",
    "OVERLAP",
    "SUPPORTED",
    "UNRESOLVED",
    "PairedVerdict",
    "Stat",
    "Verdict",
    "bootstrap_ci",
    "combine",
    "compare",
    "holm",
    "minimum_detectable_difference",
    "paired_differences",
    "paired_seeds",
    "paired_t_pvalue",
    "paired_verdict",
    "pearson",
    "pooled_paired_sd",
    "student_t_cdf",
    "student_t_quantile",
]

# The paired rule's words.
SUPPORTED = "supported"
CONTRADICTED = "contradicted"
UNRESOLVED = "unresolved"
# The spread rule's words (fewer than MIN_PAIRED_SEEDS shared seeds), and a comparison with no value.
NOT_SUPPORTED = "not supported"
OVERLAP = "inconclusive (spread overlaps)"
FEW_SEEDS = "inconclusive (fewer than 3 seeds)"
NOT_MEASURED = "not measured"
#: Seeds needed on each side of a comparison before the spread rule gives a verdict.
MIN_SEEDS = 3
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


def paired_t_pvalue(diffs: Sequence[float] | np.ndarray) -> float:
    """The two-sided p-value of the paired t-test that the mean of ``diffs`` is 0 (NaN and infinite
    differences dropped). A constant difference gives 0 where it is non-zero and 1 where it is 0;
    fewer than 2 finite differences is refused with a ValueError."""
    d = np.asarray(diffs, dtype=float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        raise ValueError(f"a paired t-test needs at least 2 finite differences, got {d.size}")
    sd = float(d.std(ddof=1))
    mean = float(d.mean())
    if sd == 0 or not math.isfinite(sd):
        return 1.0 if mean == 0 else 0.0
    t = mean / (sd / math.sqrt(d.size))
    return min(1.0, 2 * (1 - student_t_cdf(abs(t), d.size - 1)))


def holm(pvalues: Sequence[float], level: float = 0.05) -> tuple[list[float], list[bool]]:
    """Holm's step-down correction (Holm 1979) of ``pvalues`` for a family-wise error ``level``:
    the adjusted p-values (in the given order; max over the sorted prefix of (m - i) p_(i), capped
    at 1) and whether each hypothesis is rejected (adjusted p <= ``level``). A NaN p-value is a
    comparison that was not measured: it counts in m, as a planned comparison, and is never rejected."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    adjusted = np.full(m, np.nan)
    running = 0.0
    for rank, i in enumerate(order):
        if np.isnan(p[i]):
            continue
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [float(a) for a in adjusted], [bool(a <= level) for a in adjusted]


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


# -- values over seeds, and verdicts ---------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """Mean and sample standard deviation over seeds of the finite values given; ``seeds`` (when
    known) names the seed of each value, which lets :func:`compare` pair two estimators by seed."""

    values: tuple[float, ...]
    seeds: tuple[int, ...] = ()

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        return cls(tuple(float(v) for v in values if v is not None and math.isfinite(float(v))))

    @classmethod
    def by_seed(cls, pairs: Iterable[tuple[int, float]]) -> Stat:
        """The finite values of (seed, value) pairs, each kept with its seed."""
        kept = [(int(seed), float(v)) for seed, v in pairs if v is not None and math.isfinite(float(v))]
        return cls(tuple(v for _, v in kept), tuple(seed for seed, _ in kept))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if self.n >= 2 else math.nan

    def per_seed(self) -> dict[int, float] | None:
        """{seed: value}, or None where the seeds are unknown or one seed holds two values."""
        if len(self.seeds) != self.n or len(set(self.seeds)) != self.n:
            return None
        return dict(zip(self.seeds, self.values))

    def text(self, digits: int = 3, scale: float = 1.0) -> str:
        if not self.values:
            return "—"
        mean = self.mean * scale
        if self.n < 2:
            return f"{mean:.{digits}f}"
        return f"{mean:.{digits}f} ± {self.std * scale:.{digits}f}"


@dataclass(frozen=True)
class Verdict:
    """One comparison's outcome (one of the module's verdict words), the numbers behind it, and,
    under the paired rule, the interval of the mean paired difference it was read from."""

    outcome: str
    detail: str
    interval: PairedVerdict | None = None


def _band(x: Stat | float) -> tuple[float, float]:
    if isinstance(x, Stat):
        spread = x.std if x.n >= 2 else 0.0
        return x.mean - spread, x.mean + spread
    return float(x), float(x)


def _describe(x: Stat | float, digits: int) -> str:
    return x.text(digits) + f" (n={x.n})" if isinstance(x, Stat) else f"{x:.{digits}g}"


def paired_seeds(a: Stat, b: Stat | float) -> tuple[dict[int, float], dict[int, float]] | None:
    """The two sides as {seed: value} over the seeds they share, or None where they cannot be
    paired (a side's seeds unknown). Against a constant every value of ``a`` pairs with it."""
    if not isinstance(b, Stat):
        a_values = a.per_seed() or dict(enumerate(a.values))
        return a_values, dict.fromkeys(a_values, float(b))
    a_values, b_values = a.per_seed(), b.per_seed()
    if a_values is None or b_values is None:
        return None
    shared = sorted(set(a_values) & set(b_values))
    return {s: a_values[s] for s in shared}, {s: b_values[s] for s in shared}


def compare(a: Stat, b: Stat | float, *, greater: bool, digits: int = 3) -> Verdict:
    """Verdict on "a > b" (``greater``) or "a < b"; ``b`` may be a constant. The rule is picked by
    the seeds the sides share (module docstring): the paired bootstrap interval from
    :data:`MIN_PAIRED_SEEDS` shared seeds on, the mean +- std spread rule below."""
    detail = f"{_describe(a, digits)} vs {_describe(b, digits)}"
    n_b = b.n if isinstance(b, Stat) else a.n
    if a.n == 0 or n_b == 0:
        return Verdict(NOT_MEASURED, detail)
    pairs = paired_seeds(a, b)
    if pairs is not None and len(pairs[0]) >= MIN_PAIRED_SEEDS:
        interval = paired_verdict(*pairs, greater=greater)
        label = "paired difference" if isinstance(b, Stat) else "difference"
        return Verdict(interval.verdict, f"{detail}; {label} {interval.text(digits)}", interval)
    if min(a.n, n_b) < MIN_SEEDS:
        return Verdict(FEW_SEEDS, detail)
    (lo_a, hi_a), (lo_b, hi_b) = _band(a), _band(b)
    holds, opposite = (lo_a > hi_b, hi_a < lo_b) if greater else (hi_a < lo_b, lo_a > hi_b)
    if holds:
        return Verdict(SUPPORTED, detail)
    if opposite:
        return Verdict(NOT_SUPPORTED, detail)
    return Verdict(OVERLAP, detail)


def combine(verdicts: Sequence[Verdict]) -> str:
    """The outcome of a claim made of several comparisons (see the module docstring), in either
    rule's words: a contradiction under the paired rule outranks one under the spread rule, and
    an undecided part keeps the spread rule's words when any part used them."""
    outcomes = [v.outcome for v in verdicts if v.outcome != NOT_MEASURED]
    if not outcomes:
        return NOT_MEASURED
    for against in (CONTRADICTED, NOT_SUPPORTED):
        if against in outcomes:
            return against
    if all(o == SUPPORTED for o in outcomes):
        return SUPPORTED
    for undecided in (FEW_SEEDS, OVERLAP):
        if undecided in outcomes:
            return undecided
    return UNRESOLVED
