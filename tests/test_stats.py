"""The paired statistics behind the sweep's verdicts, as a specification: differences over shared
seeds, the bootstrap interval's closed cases and coverage, the verdict read off the interval, the
t quantiles, and the minimum detectable difference against its formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fade.experiments.stats import (
    CONTRADICTED,
    FEW_SEEDS,
    MIN_PAIRED_SEEDS,
    NOT_SUPPORTED,
    OVERLAP,
    SUPPORTED,
    UNRESOLVED,
    PairedVerdict,
    Stat,
    Verdict,
    bootstrap_ci,
    combine,
    compare,
    minimum_detectable_difference,
    paired_differences,
    paired_verdict,
    pooled_paired_sd,
    student_t_cdf,
    student_t_quantile,
)


def test_paired_differences_use_only_the_seeds_both_sides_have():
    a = {0: 1.0, 1: 2.0, 2: 5.0, 7: 9.0}
    b = {2: 1.0, 0: 0.5, 1: math.nan, 3: 4.0}
    np.testing.assert_array_equal(paired_differences(a, b), [0.5, 4.0])  # seeds 0 and 2, in seed order
    assert paired_differences({}, b).size == 0


def test_bootstrap_of_a_constant_difference_is_that_constant_with_zero_width():
    for expanded in (True, False):
        assert bootstrap_ci([0.031] * 5, expanded=expanded) == (0.031, 0.031, 0.031)


def test_bootstrap_is_seeded_and_refuses_too_few_seeds():
    d = [0.1, -0.2, 0.3, 0.05, 0.0, 0.2]
    assert bootstrap_ci(d, seed=3) == bootstrap_ci(d, seed=3)
    mean, low, high = bootstrap_ci(d)
    assert mean == pytest.approx(np.mean(d)) and low < mean < high
    with pytest.raises(ValueError, match="at least 5 finite differences, got 4"):
        bootstrap_ci([0.1, 0.2, 0.3, math.nan, 0.4])
    assert bootstrap_ci([0.1, 0.2, 0.3], min_n=3)[0] == pytest.approx(0.2)  # a caller may lower the floor on purpose


def test_expanded_interval_is_wider_than_the_plain_percentile_one():
    d = np.random.default_rng(0).normal(size=5)
    _, lo_plain, hi_plain = bootstrap_ci(d, expanded=False)
    _, lo, hi = bootstrap_ci(d)
    assert lo < lo_plain and hi > hi_plain


@pytest.mark.parametrize("n", [5, 8])
def test_bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time(n):
    """200 normal samples of n seeds each: the interval should hold the true mean ~95% of the time
    (the plain percentile interval, too narrow at few seeds, falls to ~85-88% here)."""
    rng = np.random.default_rng(12)
    samples = rng.normal(loc=0.3, scale=1.0, size=(200, n))
    hits = sum(lo < 0.3 < hi for _, lo, hi in (bootstrap_ci(d, resamples=2000, seed=i) for i, d in enumerate(samples)))
    assert 0.88 <= hits / 200 <= 0.99


@pytest.mark.parametrize("df, p, expected", [(1, 0.975, 12.7062), (4, 0.975, 2.7764), (4, 0.8, 0.9410),
                                             (7, 0.975, 2.3646), (30, 0.975, 2.0423), (5000, 0.975, 1.9604)])
def test_student_t_quantiles_match_the_tables(df, p, expected):
    assert student_t_quantile(p, df) == pytest.approx(expected, abs=1e-4)
    assert student_t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-4)
    if df <= 1000:
        assert student_t_cdf(student_t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)
    assert student_t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + arctan(1)/pi


def _seeds(values) -> dict[int, float]:
    return dict(enumerate(values))


def test_verdict_follows_the_interval():
    rng = np.random.default_rng(5)
    base = rng.normal(0.4, 0.05, size=6)  # seed-to-seed variation that pairing cancels
    noise = rng.normal(0.0, 0.002, size=6)
    up = paired_verdict(_seeds(base + 0.03 + noise), _seeds(base))
    assert up.verdict == SUPPORTED and up.low > 0 and up.n == 6
    assert up.text() == f"{up.mean:+.3f} [{up.low:+.3f}, {up.high:+.3f}] (n=6)"
    assert "half-width" not in up.text()
    down = paired_verdict(_seeds(base - 0.03 + noise), _seeds(base))
    assert down.verdict == CONTRADICTED and down.high < 0
    assert paired_verdict(_seeds(base - 0.03 + noise), _seeds(base), greater=False).verdict == SUPPORTED
    noisy = paired_verdict(_seeds(base + rng.normal(0, 0.05, size=6)), _seeds(base))
    assert noisy.verdict == UNRESOLVED and noisy.low < 0 < noisy.high
    assert f"±{noisy.half_width:.3f} half-width (n=6)" in noisy.text()
    assert noisy.half_width == pytest.approx((noisy.high - noisy.low) / 2)


def test_paired_verdict_text_on_known_numbers():
    assert PairedVerdict(0.031, 0.012, 0.050, 5, SUPPORTED).text() == "+0.031 [+0.012, +0.050] (n=5)"
    assert (
        PairedVerdict(0.004, -0.020, 0.028, 5, UNRESOLVED).text() == "+0.004 [-0.020, +0.028], ±0.024 half-width (n=5)"
    )


def test_minimum_detectable_difference_on_known_values():
    # Normal quantiles: (1.959964 + 0.841621) * sd / sqrt(n).
    assert minimum_detectable_difference(1.0, 16, t=False) == pytest.approx(2.801585 / 4, abs=1e-6)
    assert minimum_detectable_difference(0.02, 4, level=0.9, power=0.5, t=False) == pytest.approx(
        1.644854 * 0.01, abs=1e-7
    )
    # t on n - 1 = 4 degrees of freedom at 5 seeds: 2.776445 + 0.940965.
    assert minimum_detectable_difference(0.03, 5) == pytest.approx(3.717410 * 0.03 / math.sqrt(5), abs=1e-6)
    assert minimum_detectable_difference(0.03, 5) > minimum_detectable_difference(0.03, 5, t=False)
    with pytest.raises(ValueError, match="n must be >= 2"):
        minimum_detectable_difference(0.03, 1)


def test_pooled_sd_centres_each_pair_on_its_own_mean():
    sd, count = pooled_paired_sd([[1.0, 3.0], [10.0, 12.0, 14.0], [5.0]])
    # squares: 2 + 8 = 10 over (1 + 2) degrees of freedom; the single difference adds nothing.
    assert sd == pytest.approx(math.sqrt(10 / 3)) and count == 5
    assert math.isnan(pooled_paired_sd([[1.0]])[0])


# -- the rule picked by compare -------------------------------------------------------------------


def test_compare_pairs_by_seed_from_five_shared_seeds():
    seeds = range(MIN_PAIRED_SEEDS)
    base = [0.30, 0.45, 0.25, 0.50, 0.35]  # a large spread over seeds: the spread rule overlaps
    a = Stat.by_seed(zip(seeds, [v + 0.02 for v in base]))
    b = Stat.by_seed(zip(seeds, base))
    verdict = compare(a, b, greater=True)
    assert verdict.outcome == SUPPORTED and verdict.interval is not None
    assert verdict.interval.mean == pytest.approx(0.02) and verdict.interval.n == 5
    assert "paired difference +0.020 [+0.020, +0.020] (n=5)" in verdict.detail
    assert compare(a, b, greater=False).outcome == CONTRADICTED
    # The same numbers without their seeds cannot be paired: the spread rule keeps its words.
    assert compare(Stat.of(a.values), Stat.of(b.values), greater=True).outcome == OVERLAP
    # Four shared seeds: the spread rule.
    four = Stat.by_seed(zip([0, 1, 2, 3, 9], base))
    assert compare(a, four, greater=True).interval is None
    # Against a constant, five values are enough.
    assert compare(Stat.of([0.9, 1.1, 1.0, 0.95, 1.05]), 1.5, greater=False).outcome == SUPPORTED
    assert compare(Stat.of([0.9, 1.1, 1.0]), 1.5, greater=False).interval is None


def test_combine_handles_both_rules_words():
    v = lambda outcome: Verdict(outcome, "")  # noqa: E731
    assert combine([v(SUPPORTED), v(SUPPORTED)]) == SUPPORTED
    assert combine([v(SUPPORTED), v(UNRESOLVED)]) == UNRESOLVED
    assert combine([v(UNRESOLVED), v(CONTRADICTED)]) == CONTRADICTED
    assert combine([v(NOT_SUPPORTED), v(CONTRADICTED)]) == CONTRADICTED
    assert combine([v(UNRESOLVED), v(OVERLAP)]) == OVERLAP
    assert combine([v(UNRESOLVED), v(FEW_SEEDS)]) == FEW_SEEDS


def test_holm_step_down_by_hand():
    """Holm (1979): sorted p-values times (m - i), made monotone, capped at 1; rejected at <= level."""
    from fade.experiments.stats import holm

    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> 0.06 monotone)
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert rejected == [True, False, False, True]
    # a comparison without a p-value counts in m and is never rejected
    adjusted, rejected = holm([0.01, float("nan")])
    assert adjusted[0] == pytest.approx(0.02) and math.isnan(adjusted[1]) and rejected == [True, False]
    assert holm([0.9, 0.8]) == ([pytest.approx(1.0), pytest.approx(1.0)], [False, False])
    with pytest.raises(ValueError, match="level must lie in"):
        holm([0.1], level=1.0)


def test_paired_t_pvalue_matches_the_t_distribution():
    from fade.experiments.stats import paired_t_pvalue, student_t_cdf

    d = np.array([0.1, 0.3, -0.05, 0.2, 0.15])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(5))
    assert paired_t_pvalue(d) == pytest.approx(2 * (1 - student_t_cdf(t, 4)))
    assert paired_t_pvalue([0.2, 0.2, 0.2]) == 0.0 and paired_t_pvalue([0.0, 0.0]) == 1.0
    assert paired_t_pvalue([0.1, float("nan"), 0.3, 0.2]) == pytest.approx(paired_t_pvalue([0.1, 0.3, 0.2]))
    with pytest.raises(ValueError, match="at least 2 finite differences"):
        paired_t_pvalue([0.1])
