"""Paired statistics against their oracles: scipy, statsmodels, brute-force enumeration, simulation."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from ignite_ranking.compare import compare, stats

scipy_stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")

ALTERNATIVES = stats.ALTERNATIVES


def _pairs(rng, n, columns, shift=0.03, discrete=False):
    a = rng.random((n, columns))
    b = a + rng.normal(shift, 0.2, (n, columns))
    if discrete:  # metric-like values: ties, exact zeros among the differences
        a, b = np.round(a * 4) / 4, np.round(np.clip(b, 0, 1) * 4) / 4
    return a, b


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("discrete", [False, True])
def test_t_test_equals_scipy(alternative, discrete):
    rng = np.random.default_rng(0)
    for n in (2, 5, 30, 500):
        a, b = _pairs(rng, n, 6, discrete=discrete)
        expected = scipy_stats.ttest_rel(b, a, alternative=alternative).pvalue
        np.testing.assert_allclose(stats.t_test(a, b, alternative), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("discrete", [False, True])
def test_wilcoxon_equals_scipy_defaults(alternative, discrete):
    # n = 8 and 20 take scipy's exact branch (no ties or zeros), the others the normal one.
    rng = np.random.default_rng(1)
    for n in (8, 20, 60, 400):
        a, b = _pairs(rng, n, 4, discrete=discrete)
        expected = [scipy_stats.wilcoxon(b[:, j], a[:, j], alternative=alternative).pvalue for j in range(4)]
        np.testing.assert_allclose(stats.wilcoxon_test(a, b, alternative), expected, rtol=0, atol=1e-12)


def test_wilcoxon_of_identical_systems_is_nan():
    a = np.random.default_rng(2).random((10, 2))
    assert np.isnan(stats.wilcoxon_test(a, a)).all()


def _brute_randomization(d, alternative):
    """Share of all 2**n sign vectors (rows of bits, 2**16 at a time) at least as extreme."""
    d = np.asarray(d, dtype=np.float64)
    observed = d.sum()
    tol = 1e-10 * np.abs(d).sum()
    hits = 0
    for start in range(0, 2**d.size, 1 << 16):
        patterns = np.arange(start, min(start + (1 << 16), 2**d.size))
        signs = 1.0 - 2.0 * ((patterns[:, None] >> np.arange(d.size)) & 1)
        sums = signs @ d
        if alternative == "two-sided":
            hits += (np.abs(sums) >= abs(observed) - tol).sum()
        elif alternative == "greater":
            hits += (sums >= observed - tol).sum()
        else:
            hits += (sums <= observed + tol).sum()
    return hits / 2**d.size


def test_brute_force_reference_is_itertools():
    d = np.random.default_rng(12).normal(0.1, 0.3, 9)
    sums = np.array(list(itertools.product([1.0, -1.0], repeat=9))) @ d
    expected = (np.abs(sums) >= abs(d.sum()) - 1e-12).mean()
    assert _brute_randomization(d, "two-sided") == pytest.approx(expected)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_randomization_is_exact_enumeration_up_to_20(alternative):
    rng = np.random.default_rng(3)
    for n, columns in ((1, 3), (2, 3), (5, 3), (11, 3), (16, 2), (20, 1)):
        a, b = _pairs(rng, n, columns)
        d = b - a
        expected = [_brute_randomization(d[:, j], alternative) for j in range(columns)]
        np.testing.assert_allclose(
            stats.randomization_test(d, alternative=alternative, seed=0), expected, rtol=0, atol=1e-12
        )


def test_randomization_counts_ties_as_extreme():
    # Discrete differences: many sign patterns give exactly the observed |sum|; zeros never matter.
    d = np.array([0.25, -0.25, 0.5, 0.0, 0.25, 0.0, 0.5, 0.25])
    for alternative in ALTERNATIVES:
        assert stats.randomization_test(d, alternative=alternative)[0] == pytest.approx(
            _brute_randomization(d[d != 0], alternative), abs=1e-15
        )
    # The sum of 0.1 + 0.2 - 0.3-like values tie only within float tolerance.
    d = np.array([0.1, 0.2, 0.3])
    assert stats.randomization_test(d)[0] == pytest.approx(2 / 8)
    assert stats.randomization_test(np.zeros(30))[0] == 1.0


def test_randomization_monte_carlo_is_within_its_error_and_seeded():
    rng = np.random.default_rng(4)
    a, b = _pairs(rng, 21, 2, shift=0.08)
    d = b - a
    exact = np.array([_brute_randomization(d[:, j], "two-sided") for j in range(2)])
    resamples = 20_000
    sampled = stats.randomization_test(d, resamples=resamples, seed=7)
    error = np.sqrt(exact * (1 - exact) / resamples)
    assert (np.abs(sampled - exact) <= 4 * error + 1 / resamples).all(), (sampled, exact)
    np.testing.assert_array_equal(sampled, stats.randomization_test(d, resamples=resamples, seed=7))
    assert not np.array_equal(sampled, stats.randomization_test(d, resamples=resamples, seed=8))


@pytest.mark.parametrize("method", ["bonferroni", "holm", "bh"])
def test_corrections_equal_statsmodels(method):
    oracle = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh"}[method]
    rng = np.random.default_rng(5)
    for m in (1, 2, 3, 10, 40):
        for p in (rng.random(m) ** 3, np.round(rng.random(m), 1)):  # the second has ties
            expected = multitest.multipletests(p, method=oracle)[1]
            np.testing.assert_allclose(stats.adjust(p, method), expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(stats.adjust([0.2, 0.01], "none"), [0.2, 0.01])


def test_corrections_leave_nan_out_of_the_family():
    got = stats.adjust([0.01, np.nan, 0.02], "bonferroni")
    assert np.isnan(got[1]) and got[0] == pytest.approx(0.02) and got[2] == pytest.approx(0.04)
    with pytest.raises(ValueError, match="correction must be one of"):
        stats.adjust([0.1], "sidak")


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_bootstrap_intervals_equal_scipy(alpha):
    rng = np.random.default_rng(6)
    d = rng.normal(0.02, 0.2, (120, 3)) ** 3
    batch = 700
    ours = stats.bootstrap(d, alpha=alpha, resamples=3000, seed=11, batch=batch)
    for method, got in (("percentile", ours.percentile), ("BCa", ours.bca)):
        for j in range(3):
            expected = scipy_stats.bootstrap(
                (d[:, j],),
                np.mean,
                confidence_level=1 - alpha,
                method=method,
                n_resamples=3000,
                batch=batch,
                rng=np.random.default_rng(11),
            ).confidence_interval
            # Column j alone, to replay scipy's stream of indices.
            alone = stats.bootstrap(d[:, j], alpha=alpha, resamples=3000, seed=11, batch=batch)
            interval = alone.percentile if method == "percentile" else alone.bca
            np.testing.assert_allclose(interval.ravel(), expected, rtol=0, atol=1e-12)
        # Columns share the resampled rows, so column 0 of the joint call equals it alone too.
        alone = stats.bootstrap(d[:, 0], alpha=alpha, resamples=3000, seed=11, batch=batch)
        expected = alone.percentile if method == "percentile" else alone.bca
        np.testing.assert_allclose(got[:, 0], expected[:, 0])


def test_bootstrap_is_seeded():
    d = np.random.default_rng(7).normal(0, 1, (50, 2))
    one, two = stats.bootstrap(d, seed=3), stats.bootstrap(d, seed=3)
    np.testing.assert_array_equal(one.bca, two.bca)
    np.testing.assert_array_equal(one.p_value, two.p_value)
    assert not np.array_equal(one.bca, stats.bootstrap(d, seed=4).bca)


def test_bootstrap_coverage_by_simulation():
    # 300 skewed samples of 40 queries with a known mean; 95% intervals should cover it about
    # 95% of the time (BCa corrects the skew better than the percentile interval).
    rng = np.random.default_rng(8)
    trials, n = 300, 40
    samples = rng.exponential(1.0, (n, trials)) - 1.0  # mean 0, skewed
    result = stats.bootstrap(samples, alpha=0.05, resamples=2000, seed=9)
    for interval in (result.percentile, result.bca):
        covered = ((interval[0] <= 0) & (interval[1] >= 0)).mean()
        assert 0.88 <= covered <= 0.99, covered


def test_bootstrap_test_rejects_at_its_level_under_the_null():
    rng = np.random.default_rng(10)
    samples = rng.normal(0, 1, (30, 400))
    p = stats.bootstrap(samples, resamples=1000, seed=1).p_value
    assert 0.02 <= (p < 0.05).mean() <= 0.1


def test_effect_size_is_paired_cohens_d():
    d = np.random.default_rng(11).normal(0.1, 0.3, (25, 3))
    np.testing.assert_allclose(stats.effect_size(d), d.mean(axis=0) / d.std(axis=0, ddof=1))
    assert np.isnan(stats.effect_size(np.ones((5, 1)))).all()
    assert np.isnan(stats.effect_size(np.ones((1, 1)))).all()


def test_bad_alternative_is_refused():
    with pytest.raises(ValueError, match="alternative must be one of"):
        stats.t_test([1.0, 2.0], [2.0, 3.0], alternative="bigger")


def test_differences_equal_but_for_rounding_count_as_equal():
    """Regression: B = A + 0.1 query by query gave differences 0.1 +- 1e-16 (the rounding of
    A and B), a t-test p of 1e-47 and a Cohen's d of 2e15, with scipy's precision-loss warning."""
    a = [0.1, 0.2, 0.3, 0.7]
    b = [0.2, 0.3, 0.4, 0.8]
    assert len({y - x for x, y in zip(a, b, strict=True)}) > 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = compare({"A": {"m": a}, "B": {"m": b}}, tests=["t-test"])
    row = report.comparisons[0]
    assert np.isnan(row.p["t-test"]) and np.isnan(row.effect_size)
    assert row.ci_t[0] == row.ci_t[1] == pytest.approx(0.1)
    # a spread just past the rounding is tested, as scipy does
    b[0] += 8 * stats.ROUNDING
    expected = scipy_stats.ttest_rel(b, a).pvalue
    assert stats.t_test(a, b)[0] == expected
    d = np.subtract(b, a)
    assert stats.effect_size(d, scale=stats.magnitude(a, b))[0] == d.mean() / d.std(ddof=1)
