"""``compare``: paired comparison of systems evaluated on the same queries."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from . import stats
from .report import Comparison, Report

__all__ = ["CompareWarning", "compare"]


class CompareWarning(UserWarning):
    """A comparison that runs but cannot say much, e.g. on fewer than two common queries."""


# trec_eval's measures summarised by a geometric mean: their per-query values are AP and bpref,
# which map and bpref compare, so a test of their mean would be printed under the wrong name.
GEOMETRIC = ("gm_map", "gm_bpref")


def _system_table(name: str, system: object) -> tuple[list | None, list[str], np.ndarray]:
    """``(keys or None, metric names, (num_queries, num_metrics) values)`` of one system's input
    (an EvaluationResult without its geometric means)."""
    if hasattr(system, "queries") and hasattr(system, "metrics") and hasattr(system, "values"):
        # ignite_ranking.trec.EvaluationResult: rows are queries, columns metrics.
        values = np.asarray(system.values, dtype=np.float64).reshape(len(system.queries), len(system.metrics))
        kept = [i for i, m in enumerate(system.metrics) if m not in GEOMETRIC]
        if not kept:
            raise ValueError(
                f"system {name!r} has no per-query number to compare (runid and relstring are "
                "strings; gm_map and gm_bpref are geometric means: compare map or bpref)"
            )
        return list(system.queries), [system.metrics[i] for i in kept], values[:, kept]
    if hasattr(system, "keys") and hasattr(system, "values") and not isinstance(system, Mapping):
        # ignite_ranking.PerQuery: keyed per-query values of a metric or a group.
        columns = {m: np.asarray(v, dtype=np.float64) for m, v in system.values.items()}
        keys = np.asarray(system.keys).tolist()
        return keys, list(columns), _stack(name, columns)
    if isinstance(system, Mapping):
        columns = {str(m): np.asarray(v, dtype=np.float64) for m, v in system.items()}
        return None, list(columns), _stack(name, columns)
    raise TypeError(
        f"system {name!r} must be a mapping of metric names to per-query values, a PerQuery or a "
        f"trec EvaluationResult, got {type(system).__name__}"
    )


def _stack(name: str, columns: Mapping[str, np.ndarray]) -> np.ndarray:
    if not columns:
        raise ValueError(f"system {name!r} has no metric")
    shapes = {m: v.shape for m, v in columns.items()}
    if any(len(s) != 1 for s in shapes.values()) or len(set(shapes.values())) != 1:
        raise ValueError(f"system {name!r}: every metric needs one value per query, got shapes {shapes}")
    return np.stack(list(columns.values()), axis=1)


def _align(tables: dict, missing: str) -> tuple[list, np.ndarray]:
    """The common queries and their values ``(systems, queries, metrics-of-each)`` per system."""
    keyed = [name for name, (keys, _, _) in tables.items() if keys is not None]
    if keyed and len(keyed) != len(tables):
        raise ValueError(
            f"systems {keyed} name their queries and the others do not; give query keys to all or none"
        )
    if not keyed:
        sizes = {name: values.shape[0] for name, (_, _, values) in tables.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"systems must have values for the same queries, got query counts {sizes}")
        return list(range(next(iter(sizes.values())))), {n: v for n, (_, _, v) in tables.items()}
    rows = {}
    for name, (keys, _, _) in tables.items():
        index = {key: i for i, key in enumerate(keys)}
        if len(index) != len(keys):
            raise ValueError(f"system {name!r} has a query key more than once")
        rows[name] = index
    first = next(iter(rows.values()))
    common = [key for key in first if all(key in index for index in rows.values())]
    if missing == "error":
        lacking = {
            name: len(index) - len(common) for name, index in rows.items() if len(index) != len(common)
        }
        if lacking:
            raise ValueError(
                f"systems must cover the same queries; queries not in every system, per system: "
                f"{lacking} (pass missing='intersect' to compare on the common ones)"
            )
    if not common:
        raise ValueError("the systems have no query in common")
    aligned = {}
    for name, (_, _, values) in tables.items():
        take = np.fromiter((rows[name][key] for key in common), dtype=np.int64, count=len(common))
        aligned[name] = values[take]
    return common, aligned


def _pairs(names: list[str], baseline: str | None) -> list[tuple[int, int]]:
    if baseline is None:
        return [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    if baseline not in names:
        raise ValueError(f"baseline must be one of the systems {names}, got {baseline!r}")
    base = names.index(baseline)
    return [(base, j) for j in range(len(names)) if j != base]


def compare(
    systems: Mapping[str, object],
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    tests: str | Sequence[str] = ("t-test",),
    correction: str = "holm",
    alpha: float = 0.05,
    alternative: str = "two-sided",
    resamples: int = 10_000,
    seed: int | None = 0,
    missing: str = "error",
) -> Report:
    """Paired comparison of two or more systems on the same queries.

    Each comparison pairs a system A with a system B (B against the baseline, or every pair
    ``i < j`` in the order of ``systems`` when there is none) on one metric; the difference is
    ``B - A`` per query. For each it reports both means, the mean difference with ``1 - alpha``
    Student t, percentile bootstrap and BCa bootstrap intervals, a p-value per test, the p-value
    adjusted over the family of all comparisons of that metric, the paired Cohen's d, and
    wins/ties/losses of B.

    With fewer than two common queries, the t-test, the intervals, the bootstrap test and the
    effect size are NaN (a single difference has no spread) and a :class:`CompareWarning` says so.

    Args:
        systems: name -> per-query values: a mapping of metric names to 1-D arrays (queries
            aligned by position), a :class:`~ignite_ranking.PerQuery` from a metric or a group,
            or a :class:`~ignite_ranking.trec.EvaluationResult` (queries aligned by key).
        baseline: compare every other system with this one; None compares all pairs.
        metrics: the metrics to compare (default: all of the first system's).
        tests: any of ``"t-test"``, ``"wilcoxon"``, ``"randomization"``, ``"bootstrap"``; the
            first one decides the significance marks of the reports.
        correction: ``"holm"``, ``"bonferroni"``, ``"bh"`` (Benjamini-Hochberg) or ``"none"``.
        alpha: significance level; the intervals have confidence ``1 - alpha``.
        alternative: ``"two-sided"``, ``"greater"`` (B better) or ``"less"``.
        resamples: Monte Carlo resamples of the randomization test and the bootstrap.
        seed: the seed of the resampling (default 0, so that the same inputs give the same
            report; None draws fresh randomness each call).
        missing: for keyed inputs that cover different queries, ``"error"`` or ``"intersect"``
            (compare on the queries every system has).

    Example:
        >>> from ignite_ranking.compare import compare
        >>> report = compare(
        ...     {"bm25": {"ndcg@10": [0.2, 0.5, 0.1, 0.4]}, "dense": {"ndcg@10": [0.4, 0.6, 0.3, 0.4]}},
        ...     tests=["t-test", "randomization"],
        ...     seed=0,
        ... )
        >>> row = report.comparisons[0]
        >>> round(row.difference, 3), row.wins, row.ties, row.losses, round(row.p["randomization"], 3)
        (0.125, 3, 1, 0, 0.25)
    """
    if isinstance(tests, str):
        tests = [tests]
    tests = list(dict.fromkeys(tests))
    for test in tests:
        if test not in stats.TESTS:
            raise ValueError(f"tests must be among {stats.TESTS}, got {test!r}")
    if not tests:
        raise ValueError(f"tests must name at least one of {stats.TESTS}")
    if correction not in stats.CORRECTIONS:
        raise ValueError(f"correction must be one of {stats.CORRECTIONS}, got {correction!r}")
    if not isinstance(alpha, float | int) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive int, got {resamples!r}")
    if missing not in ("error", "intersect"):
        raise ValueError(f"missing must be 'error' or 'intersect', got {missing!r}")
    if not isinstance(systems, Mapping) or len(systems) < 2:
        raise ValueError("systems must be a mapping of at least two system names to per-query values")
    names = [str(n) for n in systems]
    tables = {str(n): _system_table(str(n), s) for n, s in systems.items()}
    left_out = [m for m in GEOMETRIC if m in getattr(next(iter(systems.values())), "metrics", ())]
    if left_out:
        warnings.warn(
            f"{', '.join(left_out)} left out: compare tests means of per-query values (see map, bpref)",
            CompareWarning,
            stacklevel=2,
        )
    metric_names = list(metrics) if metrics is not None else tables[names[0]][1]
    for name, (_, available, _) in tables.items():
        lacking = [m for m in metric_names if m not in available]
        if lacking:
            raise ValueError(f"system {name!r} lacks metrics {lacking}; it has {available}")
    tables = {
        name: (keys, metric_names, values[:, [available.index(m) for m in metric_names]])
        for name, (keys, available, values) in tables.items()
    }
    for name, (_, _, values) in tables.items():
        if not np.isfinite(values).all():
            raise ValueError(f"system {name!r} has NaN or infinite per-query values; they cannot be compared")
    queries, aligned = _align(tables, missing)
    values = np.stack([aligned[name] for name in names])  # (systems, queries, metrics)
    pairs = _pairs(names, baseline)
    num_metrics = len(metric_names)
    # One column per (pair, metric).
    col_a = np.concatenate([values[i] for i, _ in pairs], axis=1)
    col_b = np.concatenate([values[j] for _, j in pairs], axis=1)
    diff = col_b - col_a

    if len(queries) < 2:
        warnings.warn(
            f"the systems have only {len(queries)} query in common; the t-test, the t and "
            "bootstrap intervals, the bootstrap test and the effect size need at least 2 and are "
            "NaN (the Wilcoxon and randomization tests of a single query give p = 1)",
            CompareWarning,
            stacklevel=2,
        )
    rand_seed, boot_seed = np.random.SeedSequence(seed).spawn(2)
    p: dict[str, np.ndarray] = {}
    if "t-test" in tests:
        p["t-test"] = stats.t_test(col_a, col_b, alternative)
    if "wilcoxon" in tests:
        p["wilcoxon"] = stats.wilcoxon_test(col_a, col_b, alternative)
    if "randomization" in tests:
        p["randomization"] = stats.randomization_test(
            diff, resamples=resamples, seed=np.random.default_rng(rand_seed), alternative=alternative
        )
    # The bootstrap resamples each system's means once; a pair's distribution is their difference.
    system_means = stats.bootstrap_means(
        values.transpose(1, 0, 2).reshape(len(queries), -1),
        resamples=resamples,
        seed=np.random.default_rng(boot_seed),
    ).reshape(resamples, len(names), num_metrics)
    distribution = np.concatenate([system_means[:, j] - system_means[:, i] for i, j in pairs], axis=1)
    boot = stats.bootstrap(diff, alpha=alpha, alternative=alternative, distribution=distribution)
    if "bootstrap" in tests:
        p["bootstrap"] = boot.p_value
    # The family of a correction: every comparison of one metric.
    adjusted = {}
    for test, values_p in p.items():
        table = values_p.reshape(len(pairs), num_metrics)
        adjusted[test] = np.stack([stats.adjust(table[:, m], correction) for m in range(num_metrics)], axis=1)
    scale = stats.magnitude(col_a, col_b)
    t_bounds = stats.t_interval(diff, alpha=alpha, scale=scale)
    effect = stats.effect_size(diff, scale=scale)
    wins, ties, losses = (diff > 0).sum(axis=0), (diff == 0).sum(axis=0), (diff < 0).sum(axis=0)

    comparisons = []
    for m, metric in enumerate(metric_names):
        for c, (i, j) in enumerate(pairs):
            col = c * num_metrics + m
            comparisons.append(
                Comparison(
                    metric=metric,
                    system_a=names[i],
                    system_b=names[j],
                    mean_a=float(col_a[:, col].mean()),
                    mean_b=float(col_b[:, col].mean()),
                    difference=float(diff[:, col].mean()),
                    ci_t=(float(t_bounds[0, col]), float(t_bounds[1, col])),
                    ci_percentile=(float(boot.percentile[0, col]), float(boot.percentile[1, col])),
                    ci_bca=(float(boot.bca[0, col]), float(boot.bca[1, col])),
                    p={test: float(p[test][col]) for test in tests},
                    p_adjusted={test: float(adjusted[test][c, m]) for test in tests},
                    effect_size=float(effect[col]),
                    wins=int(wins[col]),
                    ties=int(ties[col]),
                    losses=int(losses[col]),
                )
            )
    return Report(
        systems=names,
        metrics=metric_names,
        queries=queries,
        values=values,
        comparisons=comparisons,
        tests=tests,
        correction=correction,
        alpha=float(alpha),
        alternative=alternative,
        resamples=resamples,
        seed=seed,
        baseline=baseline,
    )
