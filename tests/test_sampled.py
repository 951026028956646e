"""ignite_ranking.sampled: sampled ranks, their law, the corrections, the sampler and the metric.

The references here are written from the formulas, independently of the package: P(r' | r) from
scipy.stats over every rank, the metrics from their definitions, BV's linear system solved
densely, CLS's constrained problem by a generic solver (SLSQP).
"""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
import torch
from ignite.exceptions import NotComputableError

from ignite_ranking import sampled
from ignite_ranking.kernels import rank_batch
from ignite_ranking.sampled._pmf import log_sampled_rank_pmf
from ignite_ranking.sampled._quadrature import rank_nodes

stats = pytest.importorskip("scipy.stats")
optimize = pytest.importorskip("scipy.optimize")
gammaln = pytest.importorskip("scipy.special").gammaln


# ----------------------------------------------------------------------------------- references


def reference_pmf(n: int, m: int, replacement: bool, ranks=None) -> np.ndarray:
    """``(len(ranks), m + 1)``: P(r' = j + 1 | r) for the ranks (default every rank).

    Binomial by scipy.stats; hypergeometric from its definition with log-gamma (scipy's own
    hypergeom.pmf is exact but takes minutes at these sizes).
    """
    r = (np.arange(1, n + 1) if ranks is None else np.asarray(ranks))[:, None].astype(np.float64)
    j = np.arange(m + 1)[None, :].astype(np.float64)
    if replacement:
        return stats.binom.pmf(j, m, (r - 1) / (n - 1))

    def log_choose(a, b):
        with np.errstate(invalid="ignore"):
            value = gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)
        return np.where(a >= b, value, -np.inf)

    return np.exp(log_choose(r - 1, j) + log_choose(n - r, m - j) - log_choose(np.float64(n - 1), m))


def reference_metric(r, n: int, metric: str, k: int | None) -> np.ndarray:
    r = np.asarray(r, dtype=np.float64)
    if metric == "auc":
        return (n - r) / (n - 1)
    inside = np.ones_like(r) if k is None else (r <= k).astype(np.float64)
    return {
        "hit_rate": inside,
        "recall": inside,
        "precision": inside / (k or 1),
        "mrr": inside / r,
        "ndcg": inside / np.log2(r + 1),
    }[metric]


CASES = [("hit_rate", 10), ("mrr", 5), ("ndcg", 10), ("ndcg", None), ("mrr", None), ("auc", None)]


# ------------------------------------------------------------------------------ the sampled law


def test_toy_system_a_reproduces_the_published_sampled_metrics():
    """Krichene and Rendle's recommender A (every relevant item at full rank 100), n = 10,000,
    m = 99, binomial sampling: sampled AP .6366 and Recall@10 1.000. (Their B and C could not be
    recovered from the published numbers alone; see docs/sampled.md.)"""
    law = sampled.expected_histogram([100], 10_000, 99, replacement=True)
    assert round(sampled.estimate(law, 10_000, 99, "mrr", estimator="sampled"), 4) == 0.6366
    assert round(sampled.estimate(law, 10_000, 99, "recall", 10, estimator="sampled"), 3) == 1.0
    # while the full metrics are AP 0.01 and Recall@10 0
    assert sampled.full_metric([100], 10_000, "mrr") == 0.01
    assert sampled.full_metric([100], 10_000, "recall", 10) == 0.0


@pytest.mark.parametrize("replacement", [True, False])
def test_expected_sampled_metric_is_the_closed_form(replacement):
    """E[M(r')] = sum_r pi(r) sum_j P(j | r) M_{m+1}(j + 1), against scipy over every rank."""
    n, m = 10_000, 99
    systems = {
        "A": ([100], [1.0]),
        "B": ([1, 10_000], [0.4, 0.6]),
        "C": (list(range(1, 1001)), [1.0] * 1000),
    }
    for ranks, weights in systems.values():
        w = np.asarray(weights) / np.sum(weights)
        law_ref = w @ reference_pmf(n, m, replacement, ranks)
        law = sampled.expected_histogram(ranks, n, m, weights=weights, replacement=replacement).numpy()
        # the log-gamma reference itself is good to about 1e-11 here
        np.testing.assert_allclose(law, law_ref, rtol=1e-10, atol=1e-15)
        for metric, k in [("mrr", None), ("recall", 10), ("ndcg", 10), ("auc", None)]:
            expected = law_ref @ reference_metric(np.arange(1, m + 2), m + 1, metric, k)
            got = sampled.estimate(law, n, m, metric, k, estimator="sampled", replacement=replacement)
            assert got == pytest.approx(expected, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("replacement", [True, False])
def test_sampling_and_ranking_follow_the_closed_form(replacement):
    """Real draws (sample_negatives) ranked by sampled_ranks have the law expected_histogram says."""
    n, m, queries = 500, 9, 20_000
    rng = np.random.default_rng(3)
    full = torch.as_tensor(rng.integers(1, n + 1, queries))
    positives = full - 1  # item i scores -i, so item r - 1 has full rank r
    gen = torch.Generator().manual_seed(4)
    negatives = sampled.sample_negatives(positives, n, m, replacement=replacement, generator=gen)
    ids = torch.cat([positives[:, None], negatives], dim=1)
    y = torch.zeros(queries, m + 1)
    y[:, 0] = 1
    counts = torch.bincount(sampled.sampled_ranks(-ids.double(), y) - 1, minlength=m + 1).numpy()
    law = sampled.expected_histogram(full, n, m, replacement=replacement).numpy()
    assert stats.chisquare(counts, law * queries).pvalue > 1e-3


def test_pmf_is_accurate_at_a_catalog_of_1e8():
    """Hypergeometric log-probabilities against exact integer binomials (math.comb)."""
    n, m = 10**8, 99
    ranks = [2, 1000, 10**6, 5 * 10**7, n - 200, n]
    logp = log_sampled_rank_pmf(torch.tensor(ranks, dtype=torch.float64), n, m, False)
    for i, r in enumerate(ranks):
        for j in (0, 1, 49, 99):
            numerator = math.comb(r - 1, j) * math.comb(n - r, m - j)
            if numerator == 0:
                assert logp[i, j] == -math.inf
            else:
                exact = math.log(numerator) - math.log(math.comb(n - 1, m))
                assert abs(logp[i, j].item() - exact) < 1e-11
    for replacement in (True, False):
        pmf = log_sampled_rank_pmf(torch.tensor([1.0, 777.0, n / 3, n]), n, m, replacement).exp()
        assert torch.allclose(pmf.sum(dim=1), torch.ones(4, dtype=torch.float64), atol=1e-12)


@pytest.mark.parametrize("replacement", [True, False])
def test_quadrature_sums_equal_the_sums_over_every_rank(replacement):
    """c = P^T 1, G = P^T P and P^T M over all n ranks, from the nodes (exact for polynomials)."""
    n, m = 6000, 49
    pmf = reference_pmf(n, m, replacement)
    ranks_all = np.arange(1, n + 1)
    for metric, k in [("hit_rate", 10), ("mrr", None), ("ndcg", None), ("mrr", 300), ("auc", None)]:
        curved = metric in ("mrr", "ndcg")
        smooth = 0 if not curved else (n if k is None else k)
        r, w = rank_nodes(n, m, () if k is None else (k,), smooth)
        assert len(r) < n / 4
        p = log_sampled_rank_pmf(r, n, m, replacement).exp().numpy()
        w = w.numpy()
        target = reference_metric(ranks_all, n, metric, k)
        values = reference_metric(r.numpy(), n, metric, k)
        np.testing.assert_allclose(w @ p, pmf.sum(0), rtol=1e-10)
        np.testing.assert_allclose((p * w[:, None]).T @ p, pmf.T @ pmf, rtol=1e-9, atol=1e-12 * n)
        np.testing.assert_allclose((w * values) @ p, target @ pmf, rtol=1e-10, atol=1e-13)


# ------------------------------------------------------------------------------- the estimators


def _reference_parts(n, m, replacement, metric, k):
    pmf = reference_pmf(n, m, replacement)
    p = np.full(n, 1.0 / n)
    a = np.sqrt(p)[:, None] * pmf
    b = np.sqrt(p) * reference_metric(np.arange(1, n + 1), n, metric, k)
    return pmf, p, a, b


@pytest.mark.parametrize("replacement", [True, False])
def test_rank_and_bv_equal_references_from_the_formulas(replacement):
    rng = np.random.default_rng(0)
    for n, m in [(300, 5), (2000, 20)]:
        for metric, k in CASES:
            pmf, p, a, b = _reference_parts(n, m, replacement, metric, k)
            h = rng.integers(0, 40, m + 1).astype(np.float64)
            h[0] += 1
            j = np.arange(m + 1)
            rank_x = reference_metric(1 + j * (n - 1) / m, n, metric, k)
            got = sampled.estimate(h, n, m, metric, k, estimator="rank", replacement=replacement)
            assert got == pytest.approx(h @ rank_x / h.sum(), rel=1e-9, abs=1e-12)
            for gamma in (0.01, 0.3, 1.0):
                system = (1 - gamma) * a.T @ a + gamma * np.diag(pmf.T @ p)
                x = np.linalg.solve(system, a.T @ b)
                got = sampled.estimate(
                    h, n, m, metric, k, estimator="bv", gamma=gamma, replacement=replacement
                )
                assert got == pytest.approx(h @ x / h.sum(), rel=1e-9, abs=1e-12), (n, m, metric, k, gamma)


def test_bv_with_gamma_one_is_the_posterior_mean():
    n, m = 1000, 9
    for replacement in (True, False):
        pmf = reference_pmf(n, m, replacement)
        for metric, k in CASES:
            values = reference_metric(np.arange(1, n + 1), n, metric, k)
            posterior = values @ pmf / pmf.sum(axis=0)
            x = sampled.correction(n, m, metric, k, estimator="bv", gamma=1.0, replacement=replacement)
            np.testing.assert_allclose(x.numpy(), posterior, rtol=1e-10, atol=1e-13)


def test_sampled_and_rank_corrections_are_the_formulas():
    n, m = 10_000, 99
    x = sampled.correction(n, m, "ndcg", 10, estimator="sampled").numpy()
    np.testing.assert_allclose(x, reference_metric(np.arange(1, m + 2), m + 1, "ndcg", 10))
    # the linear inverse of the rank: unbiased for AUC, where it is the sampled AUC
    x = sampled.correction(n, m, "auc", estimator="rank").numpy()
    np.testing.assert_allclose(x, 1 - np.arange(m + 1) / m, atol=1e-15)


@pytest.mark.parametrize("replacement", [True, False])
def test_cls_reaches_the_optimum_of_its_constrained_problem(replacement):
    """min ||A x - b||^2 s.t. M(1) >= x_0 >= ... >= x_m >= 0, against SLSQP from scipy."""
    for n, m in [(200, 5), (1500, 12)]:
        for metric, k in [*CASES, ("precision", 3)]:
            _, _, a, b = _reference_parts(n, m, replacement, metric, k)
            upper = reference_metric([1], n, metric, k)[0]

            def objective(x, a=a, b=b):
                return float(np.sum((a @ x - b) ** 2))

            x = sampled.correction(n, m, metric, k, estimator="cls", replacement=replacement).numpy()
            assert x[0] <= upper + 1e-12 and np.all(np.diff(x) <= 1e-12) and x[-1] >= -1e-12
            # rows: upper - x_0 >= 0, x_i - x_{i+1} >= 0, x_m >= 0
            d = np.zeros((m + 2, m + 1))
            d[0, 0] = -1
            d[np.arange(1, m + 1), np.arange(m)] = 1
            d[np.arange(1, m + 1), np.arange(1, m + 1)] = -1
            d[m + 1, m] = 1
            offset = np.concatenate([[upper], np.zeros(m + 1)])
            gram, rhs = a.T @ a, a.T @ b
            generic = optimize.minimize(
                objective,
                np.linspace(upper, 0, m + 1) / 2,
                jac=lambda x, gram=gram, rhs=rhs: 2 * (gram @ x - rhs),
                constraints=[
                    {"type": "ineq", "fun": lambda x, d=d, o=offset: d @ x + o, "jac": lambda x, d=d: d}
                ],
                method="SLSQP",
                options={"ftol": 1e-16, "maxiter": 1000},
            )
            ours, theirs = objective(x), objective(generic.x)
            floor = 1e-12 * float(b @ b)
            assert ours <= theirs * (1 + 1e-9) + floor, (metric, k, ours, theirs)
            assert abs(ours - theirs) <= 1e-9 * theirs + floor + 1e-7 * theirs * (not generic.success)


def test_mle_is_exact_where_the_answer_is_unique():
    """m = n - 1 without replacement: every item is sampled, r' = r, P = I."""
    n = 50
    rng = np.random.default_rng(1)
    ranks = rng.integers(1, n + 1, 400)
    h = np.bincount(ranks - 1, minlength=n)
    fit = sampled.fit_rank_distribution(h, n, n - 1)
    np.testing.assert_allclose(fit.probabilities.numpy(), h / h.sum(), atol=1e-15)
    for metric, k in CASES:
        got = sampled.estimate(h, n, n - 1, metric, k, estimator="mle")
        assert got == pytest.approx(sampled.full_metric(ranks, n, metric, k), abs=1e-12)
        # and the uncorrected metric is then exact too
        assert sampled.estimate(h, n, n - 1, metric, k, estimator="sampled") == pytest.approx(
            sampled.full_metric(ranks, n, metric, k), abs=1e-12
        )


@pytest.mark.parametrize("replacement", [True, False])
def test_mle_never_lowers_the_likelihood_of_its_start(replacement):
    n, m = 1000, 20
    pmf = reference_pmf(n, m, replacement)
    rng = np.random.default_rng(2)
    for _ in range(2):
        h = rng.integers(0, 30, m + 1).astype(np.float64)
        h[rng.integers(0, m + 1)] += 50
        fit = sampled.fit_rank_distribution(h, n, m, replacement=replacement)
        uniform = np.full(n, 1.0 / n) @ pmf
        start = float(h @ np.log(uniform))
        reached = float(h @ np.log(fit.probabilities.numpy() @ pmf))
        assert fit.start_log_likelihood == pytest.approx(start, rel=1e-12)
        assert fit.log_likelihood == pytest.approx(reached, rel=1e-10)
        assert reached >= start
        assert fit.converged and fit.probabilities.sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("replacement", [False, True])
def test_bv_corrects_recall_and_ndcg_in_a_simulation_with_known_full_ranks(replacement):
    """n = 10,000, m = 99, 5,000 queries; the sampled ranks drawn from the exact model."""
    n, m, queries = 10_000, 99, 5_000
    rng = np.random.default_rng(5 + replacement)
    harmonic = 1.0 / np.arange(1, n + 1)
    systems = {
        "geometric, mean 300": np.minimum(rng.geometric(1 / 300, queries), n),
        "15% near the top, 85% uniform": np.where(
            rng.random(queries) < 0.15,
            np.minimum(rng.geometric(1 / 5, queries), n),
            rng.integers(1, n + 1, queries),
        ),
        "log-uniform": rng.choice(np.arange(1, n + 1), queries, p=harmonic / harmonic.sum()),
    }
    for name, ranks in systems.items():
        assert np.mean(ranks <= 10) < 0.5, name
        if replacement:
            j = rng.binomial(m, (ranks - 1) / (n - 1))
        else:
            j = rng.hypergeometric(ranks - 1, n - ranks, m)
        h = np.bincount(j, minlength=m + 1)
        for metric in ("recall", "ndcg"):
            truth = sampled.full_metric(ranks, n, metric, 10)
            naive = sampled.estimate(h, n, m, metric, 10, estimator="sampled", replacement=replacement)
            bv = sampled.estimate(h, n, m, metric, 10, estimator="bv", replacement=replacement)
            assert abs(bv - truth) < abs(naive - truth), (name, metric, truth, naive, bv)


# ------------------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_negatives": 1000}, ValueError, "num_negatives must satisfy 1 <= m < num_items"),
        ({"num_negatives": 0}, ValueError, "got m=0"),
        ({"num_items": 10.0}, TypeError, "num_items"),
        ({"gamma": 1.5}, ValueError, r"gamma must be in \[0, 1\], got 1.5"),
        ({"gamma": -0.1}, ValueError, "gamma must be in"),
        ({"gamma": float("nan")}, ValueError, "gamma must be in"),
        ({"gamma": "0.1"}, TypeError, "gamma must be a real number"),
        ({"estimator": "unbiased"}, ValueError, "estimator must be one of .*got 'unbiased'"),
        ({"metric": "map"}, ValueError, "metric must be one of"),
        ({"metric": "hit_rate", "k": None}, ValueError, "needs a cutoff k"),
        ({"metric": "auc", "k": 10}, ValueError, "auc' has no cutoff"),
        ({"k": 0}, ValueError, "k must be a positive int"),
        ({"histogram": [1, 2, 3]}, ValueError, "histogram must have m \\+ 1 = 10 entries"),
        ({"histogram": [0] * 10}, ValueError, "at least one query"),
        ({"histogram": [-1] + [1] * 9}, ValueError, "non-negative"),
        ({"replacement": 1}, TypeError, "replacement must be a bool"),
    ],
)
def test_estimate_refuses_bad_arguments(kwargs, error, match):
    arguments = {
        "histogram": [1] * 10,
        "num_items": 1000,
        "num_negatives": 9,
        "metric": "mrr",
        "k": 10,
        "estimator": "bv",
        "gamma": 0.01,
        "replacement": False,
    }
    arguments.update(kwargs)
    positional = [arguments.pop(key) for key in ("histogram", "num_items", "num_negatives", "metric", "k")]
    with pytest.raises(error, match=match):
        sampled.estimate(*positional, **arguments)


def test_full_metric_and_correction_refuse_bad_arguments():
    with pytest.raises(ValueError, match=r"ranks must lie in 1 \.\. num_items = 10"):
        sampled.full_metric([0, 3], 10, "mrr")
    with pytest.raises(ValueError, match="whole numbers"):
        sampled.full_metric([1.5], 10, "mrr")
    with pytest.raises(ValueError, match="no per-rank correction"):
        sampled.correction(100, 9, "mrr", estimator="mle")


# ------------------------------------------------------------------------------------ negatives


def test_sample_negatives_is_uniform_and_never_returns_a_forbidden_id():
    n, m, rows = 40, 6, 6000
    gen = torch.Generator().manual_seed(0)
    positives = torch.full((rows,), 7)
    exclude = torch.tensor([[3, 11, -1, 3, 7]]).expand(rows, 5)  # duplicates and the positive too
    for replacement in (False, True):
        ids = sampled.sample_negatives(
            positives, n, m, exclude=exclude, replacement=replacement, generator=gen
        )
        assert ids.shape == (rows, m) and ids.dtype == torch.int64
        assert not bool(torch.isin(ids, torch.tensor([3, 7, 11])).any())
        assert int(ids.min()) >= 0 and int(ids.max()) < n
        if not replacement:
            assert bool((ids.sort(dim=1).values.diff(dim=1) > 0).all())
        counts = torch.bincount(ids.reshape(-1), minlength=n).numpy()
        allowed = np.setdiff1d(np.arange(n), [3, 7, 11])
        assert stats.chisquare(counts[allowed]).pvalue > 1e-3
        # the first column alone is uniform too (no position favours some items)
        first = torch.bincount(ids[:, 0], minlength=n).numpy()[allowed]
        assert stats.chisquare(first).pvalue > 1e-3


def test_sample_negatives_small_rows_large_catalogs_and_both_exclude_forms():
    gen = torch.Generator().manual_seed(1)
    positives = torch.tensor([0, 5, 9])
    ids_form = torch.tensor([[1, 2, -1], [-1, -1, -1], [0, 1, 2]])
    sparse = torch.zeros(3, 10)
    sparse[0, [1, 2]] = 1
    sparse[2, [0, 1, 2]] = 1
    a = sampled.sample_negatives(
        positives, 10, 6, exclude=ids_form, generator=torch.Generator().manual_seed(2)
    )
    b = sampled.sample_negatives(
        positives, 10, 6, exclude=sparse.to_sparse(), generator=torch.Generator().manual_seed(2)
    )
    assert torch.equal(a, b)  # same draws: the same candidates
    assert sorted(a[2].tolist()) == [3, 4, 5, 6, 7, 8]  # row 2 has exactly 6 candidates
    big = sampled.sample_negatives(torch.tensor([10**8 - 1]), 10**8, 50, generator=gen)
    assert big.unique().numel() == 50 and int(big.max()) < 10**8 - 1
    with pytest.raises(ValueError, match=r"row 0 has 7; row 2 has 6|row 0 has 7, row 2 has 6"):
        sampled.sample_negatives(positives, 10, 8, exclude=ids_form)
    assert sampled.sample_negatives(positives, 10, 8, exclude=ids_form, replacement=True).shape == (3, 8)


def test_sample_negatives_is_reproducible_with_a_generator():
    draw = lambda seed: sampled.sample_negatives(  # noqa: E731
        torch.arange(100), 10_000, 99, generator=torch.Generator().manual_seed(seed)
    )
    assert torch.equal(draw(5), draw(5)) and not torch.equal(draw(5), draw(6))


# --------------------------------------------------------------------------- ranks and the metric


def _tied_batch(rng, batch, columns, threshold=2.0):
    y_pred = torch.as_tensor(rng.integers(0, 4, (batch, columns)).astype(np.float32))
    y = torch.as_tensor(rng.integers(0, 2, (batch, columns)))  # non-relevant grades 0-1
    y[torch.arange(batch), torch.as_tensor(rng.integers(0, columns, batch))] = 3
    return y_pred, y


@pytest.mark.parametrize("ties", ["first", "last", "optimistic", "pessimistic"])
def test_sampled_ranks_are_the_ranking_kernels(ties):
    rng = np.random.default_rng(7)
    y_pred, y = _tied_batch(rng, 300, 8)
    ranked = rank_batch(y_pred, y, 8, relevance_threshold=2.0, ties=ties)
    expected = ranked.relevant.argmax(dim=1) + 1
    got = sampled.sampled_ranks(y_pred, y, relevance_threshold=2.0, ties=ties)
    assert torch.equal(got, expected)


def test_sampled_metrics_equals_estimate_on_its_histogram():
    n, m = 1000, 19
    rng = np.random.default_rng(8)
    y_pred, y = _tied_batch(rng, 500, m + 1)
    for estimator in sampled.ESTIMATORS:
        metric = sampled.SampledMetrics(n, m, [1, 10], estimator=estimator, relevance_threshold=2.0)
        for part in (slice(0, 123), slice(123, 500)):
            metric.update((y_pred[part], y[part]))
        h = metric.histogram()
        assert h.dtype == torch.int64 and int(h.sum()) == 500
        result = metric.compute()
        names = ["mrr@1", "mrr@10", "hit_rate@1", "hit_rate@10", "ndcg@1", "ndcg@10", "auc"]
        assert list(result) == [*names, "num_queries"]
        assert result["num_queries"] == 500
        fit = sampled.fit_rank_distribution(h, n, m)
        for key, value in result.items():
            if key == "num_queries":
                continue
            name, _, cut = key.partition("@")
            k = int(cut) if cut else None
            if estimator == "mle":
                expected = fit.metric(n, name, k)
            else:
                expected = sampled.estimate(h, n, m, name, k, estimator=estimator)
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-15), (estimator, key)
    assert metric.compute_with("sampled")["hit_rate@10"] == h[:10].sum().item() / 500


def test_sampled_metrics_refuses_bad_input_and_keeps_its_state():
    metric = sampled.SampledMetrics(1000, 4, [1, 5])
    good = (torch.tensor([[0.9, 0.1, 0.2, 0.3, 0.4]]), torch.tensor([[1, 0, 0, 0, 0]]))
    metric.update(good)
    before = metric.state_dict()
    bad = [
        (
            (torch.rand(2, 4), torch.zeros(2, 4)),
            ValueError,
            r"num_negatives \+ 1 = 5 columns.*got shape \(2, 4\)",
        ),
        (
            (torch.rand(3, 5), torch.tensor([[1, 0, 0, 0, 0], [0] * 5, [1, 1, 0, 0, 0]])),
            ValueError,
            "row 1 has 0, row 2 has 2",
        ),
        ((torch.rand(1, 5), torch.tensor([[1, 0, 0, 0, 0]]), {"x": 1}), TypeError, r"takes \(y_pred, y\)"),
        ((torch.tensor([[float("nan"), 0, 0, 0, 0]]), torch.tensor([[1, 0, 0, 0, 0]])), ValueError, "NaN"),
    ]
    for output, error, match in bad:
        with pytest.raises(error, match=match):
            metric.update(output)
    assert torch.equal(metric.histogram(), before["__metric_state_per_rank"][0]["_sum_per_k"])
    assert metric.compute()["num_queries"] == 1
    with pytest.raises(ValueError, match="ties='average'"):
        sampled.SampledMetrics(1000, 4, ties="average")
    with pytest.raises(ValueError, match="num_negatives must satisfy"):
        sampled.SampledMetrics(100, 100)
    with pytest.raises(ValueError, match="gamma must be in"):
        sampled.SampledMetrics(100, 10, gamma=2)
    with pytest.raises(ValueError, match="estimator must be one of"):
        sampled.SampledMetrics(100, 10, estimator="magic")
    with pytest.raises(NotComputableError):
        sampled.SampledMetrics(100, 10).compute()


def test_sampled_metrics_state_dict_round_trip_and_settings():
    rng = np.random.default_rng(9)
    y_pred, y = _tied_batch(rng, 64, 10)
    metric = sampled.SampledMetrics(2000, 9, [5], relevance_threshold=2.0)
    metric.update((y_pred, y))
    saved = metric.state_dict()
    assert saved["__metric_state_per_rank"][0]["_settings"] == {
        "metric": "sampled",
        "num_items": 2000,
        "num_negatives": 9,
        "replacement": False,
        "ties": "first",
        "relevance_threshold": 2.0,
    }
    # the estimator and the cutoffs only read the histogram: a state loads into another reading
    restored = sampled.SampledMetrics(2000, 9, [5, 10], estimator="cls", relevance_threshold=2.0)
    restored.load_state_dict(saved)
    assert torch.equal(restored.histogram(), metric.histogram())
    assert restored.compute_with("bv")["ndcg@5"] == metric.compute()["ndcg@5"]
    metric.update((y_pred, y))  # the saved state is a copy
    assert int(saved["__metric_state_per_rank"][0]["_sum_per_k"].sum()) == 64
    other = sampled.SampledMetrics(3000, 9, [5], relevance_threshold=2.0)
    with pytest.raises(ValueError, match="num_items"):
        other.load_state_dict(saved)
    broken = {
        "__metric_state_per_rank": [dict(saved["__metric_state_per_rank"][0], _num_examples=torch.tensor(3))]
    }
    with pytest.raises(ValueError, match="must equal the histogram's total"):
        restored.load_state_dict(broken)
    assert int(restored.histogram().sum()) == 64


# --------------------------------------------------------------------------------- distributed

WORLD_SIZE = 2


def _batches(rank: int):
    rng = np.random.default_rng([11, rank])
    sizes = [(5, 13), (0, 13), (40, 13)] if rank == 0 else [(1, 13), (17, 13)]
    return [_tied_batch(rng, batch, columns) for batch, columns in sizes]


def _results(batches):
    out = {}
    for estimator in ("sampled", "bv", "mle"):
        metric = sampled.SampledMetrics(10_000, 12, [1, 10], estimator=estimator, relevance_threshold=2.0)
        for output in batches:
            metric.update(output)
        out[estimator] = metric.compute()
    return out


def _worker(local_rank: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    results = _results(_batches(rank))
    metric = sampled.SampledMetrics(10_000, 12, [1, 10], relevance_threshold=2.0)
    for output in _batches(rank):
        metric.update(output)
    restored = sampled.SampledMetrics(10_000, 12, [1, 10], relevance_threshold=2.0)
    restored.load_state_dict(metric.state_dict())
    results["restored"] = restored.compute()
    torch.save(results, f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_equal_one(tmp_path):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, str(tmp_path))
    expected = _results([b for r in range(WORLD_SIZE) for b in _batches(r)])
    assert expected["bv"]["num_queries"] == 63
    for rank in range(WORLD_SIZE):
        got = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        for estimator in ("sampled", "bv", "mle"):
            assert got[estimator] == expected[estimator], (rank, estimator)
        assert got["restored"] == expected["bv"]
