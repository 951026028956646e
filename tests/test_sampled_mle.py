"""The MLE where it is unique (m = n - 1, P(r' | r) square and invertible): the optimum itself,
not EM's approach to it. Checked against P^-T w and, where that leaves the simplex, the KKT
conditions and scipy's optimizer on the log-likelihood; P is built here from math.comb."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ignite_ranking import sampled

CUTS = [("hit_rate", 1), ("hit_rate", 2), ("mrr", None), ("ndcg", 3), ("auc", None)]


def binomial_pmf(n: int) -> np.ndarray:
    """P(r' = j + 1 | r) with m = n - 1 draws of probability (r - 1) / (n - 1), rows r = 1 .. n."""
    m = n - 1
    t = np.arange(n) / m
    return np.array([[math.comb(m, j) * p**j * (1 - p) ** (m - j) for j in range(n)] for p in t])


def metric_of(pi: np.ndarray, n: int, metric: str, k: int | None) -> float:
    r = np.arange(1, n + 1, dtype=np.float64)
    inside = np.ones(n) if k is None else (r <= k).astype(np.float64)
    value = {"hit_rate": inside, "mrr": inside / r, "ndcg": inside / np.log2(r + 1), "auc": (n - r) / (n - 1)}
    return float(pi @ value[metric])


def kkt_excess(pmf: np.ndarray, h: np.ndarray, pi: np.ndarray) -> tuple[float, float]:
    """(max |g - 1| on the support, max g - 1 off it), g the gradient of the mean log-likelihood."""
    w = h / h.sum()
    gradient = pmf @ (w / (pi @ pmf))
    on = float(np.abs(gradient[pi > 0] - 1).max())
    off = float((gradient[pi == 0] - 1).max()) if bool((pi == 0).any()) else -math.inf
    return on, off


def cases(rng: np.random.Generator, inside: bool, count: int):
    """Integer histograms with every sampled rank seen, with P^-T w inside (or outside) the simplex."""
    found = 0
    while found < count:
        n = int(rng.integers(3, 9))
        pmf = binomial_pmf(n)
        law = rng.dirichlet(np.ones(n) * (3.0 if inside else 0.5)) @ pmf
        h = rng.multinomial(100_000 if inside else 300, law).astype(np.float64)
        direct = np.linalg.solve(pmf.T, h / h.sum())
        if (h > 0).all() and bool((direct > 0).all()) == inside:
            found += 1
            yield n, pmf, h, direct


def test_mle_is_p_inverse_transpose_w_where_that_lies_in_the_simplex():
    rng = np.random.default_rng(32)
    for n, _, h, direct in cases(rng, inside=True, count=12):
        fit = sampled.fit_rank_distribution(h, n, n - 1, replacement=True)
        assert fit.converged
        np.testing.assert_allclose(fit.probabilities.numpy(), direct, rtol=0, atol=1e-9)
        for metric, k in CUTS:
            got = sampled.estimate(h, n, n - 1, metric, k, estimator="mle", replacement=True)
            assert got == pytest.approx(metric_of(direct, n, metric, k), abs=1e-9), (n, metric, k)


def test_the_issue_case_and_the_metric_form_reach_the_optimum():
    """n = 5: EM stopped with hit_rate@1 0.20989 where the optimum is 0.21034."""
    n = 5
    pmf = binomial_pmf(n)
    truth = np.array([0.21, 0.3, 0.19, 0.2, 0.1])
    h = np.rint(20_000 * truth @ pmf)
    direct = np.linalg.solve(pmf.T, h / h.sum())
    assert (direct > 0).all()
    got = sampled.estimate(h, n, n - 1, "hit_rate", 1, estimator="mle", replacement=True)
    assert got == pytest.approx(direct[0], abs=1e-9)
    metric = sampled.SampledMetrics(n, n - 1, [1], estimator="mle", replacement=True)
    counts = torch.as_tensor(h, dtype=torch.int64)
    ranks = torch.repeat_interleave(torch.arange(n), counts)  # r' - 1 items above the held-out one
    columns = torch.arange(n)[None, :]
    y_pred = ((columns >= 1) & (columns <= ranks[:, None])).to(torch.float32)  # the beaters score 1
    y_pred[:, 0] = 0.5  # the held-out item, column 0
    y = torch.zeros(len(ranks), n)
    y[:, 0] = 1
    metric.update((y_pred, y))
    assert torch.equal(metric.histogram(), counts)
    assert metric.compute()["hit_rate@1"] == pytest.approx(direct[0], abs=1e-9)


def test_mle_reaches_the_constrained_optimum_where_p_inverse_transpose_w_leaves_the_simplex():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(33)
    for n, pmf, h, direct in cases(rng, inside=False, count=10):
        fit = sampled.fit_rank_distribution(h, n, n - 1, replacement=True)
        pi = fit.probabilities.numpy()
        assert fit.converged and direct.min() < 0 and pi.min() == 0.0
        on, off = kkt_excess(pmf, h, pi)
        assert on <= 1e-9 and off <= 1e-9, (n, on, off)
        w = h / h.sum()
        loss = lambda x, w=w, pmf=pmf: -float(w @ np.log(np.maximum(x @ pmf, 1e-300)))  # noqa: E731
        generic = scipy_optimize.minimize(
            loss,
            np.full(n, 1.0 / n),
            method="SLSQP",
            bounds=[(0.0, 1.0)] * n,
            constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}],
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        assert loss(pi) <= generic.fun + 1e-12
        np.testing.assert_allclose(pi, generic.x, atol=1e-6)  # the generic solver's own accuracy
        assert fit.log_likelihood == pytest.approx(-loss(pi) * h.sum(), rel=1e-12)
        got = sampled.estimate(h, n, n - 1, "mrr", estimator="mle", replacement=True)
        assert got == pytest.approx(metric_of(pi, n, "mrr", None), abs=1e-12)
