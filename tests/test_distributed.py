"""Real worker processes (gloo, 2 ranks): every rank's compute() equals one process over all data.

Process start is slow, so one spawn runs every metric, the group and the state_dict round trip
over several scenarios; the ranks see uneven batch sizes and counts, and in some scenarios one
rank sees only queries without a relevant item.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest
import torch
from ignite.exceptions import NotComputableError
from reference import METRIC_NAMES, build_metric, tied_batch

from ignite_ranking import RankingMetrics

WORLD_SIZE = 2
KS = [1, 3, 10]
NOT_COMPUTABLE = "not computable"

# name -> (relevance_threshold, ties, {rank: [(batch, num_items, only_zero_hits), ...]})
SCENARIOS = {
    "one-rank-without-hits": (
        1.0,
        "first",
        {0: [(5, 9, False), (1, 9, False), (8, 9, False)], 1: [(3, 9, True), (2, 9, True)]},
    ),
    "uneven-and-last": (
        2.0,
        "last",
        {0: [(4, 7, False)], 1: [(1, 12, False), (6, 12, False), (2, 12, False)]},
    ),
    "no-hits-anywhere": (1.0, "first", {0: [(2, 5, True)], 1: [(3, 4, True), (1, 4, True)]}),
    "one-rank-empty": (1.0, "first", {0: [(6, 8, False), (0, 8, False)], 1: [(0, 8, False)]}),
}


def _batches(scenario: str, rank: int):
    _, _, plan = SCENARIOS[scenario]
    rng = np.random.default_rng([sorted(SCENARIOS).index(scenario), rank])
    out = []
    for batch, num_items, no_hits in plan[rank]:
        y_pred, y = tied_batch(rng, batch, num_items)
        if no_hits:
            y = torch.zeros_like(y)
        out.append((y_pred.to(torch.float32), y.to(torch.int64)))
    return out


def _make(name: str, threshold: float, ties: str, ignore_zero_hits: bool):
    common = {"ignore_zero_hits": ignore_zero_hits, "relevance_threshold": threshold, "ties": ties}
    if name == "group":
        members = {n: build_metric(n, KS, **common) for n in METRIC_NAMES}
        members["ndcg_linear"] = build_metric("ndcg", KS, "linear_rank", **common)
        return RankingMetrics(members)
    if name == "ndcg_linear":
        return build_metric("ndcg", KS, "linear_rank", **common)
    return build_metric(name, KS, **common)


NAMES = [*METRIC_NAMES, "ndcg_linear", "group"]


def _compute(metric):
    try:
        return metric.compute()
    except NotComputableError:
        return NOT_COMPUTABLE


def _run_all(batches_of):
    """Results of every metric in every scenario; ``batches_of(scenario)`` gives this process's data."""
    results = {}
    for scenario, (threshold, ties, _) in SCENARIOS.items():
        for ignore_zero_hits in (True, False):
            for name in NAMES:
                metric = _make(name, threshold, ties, ignore_zero_hits)
                for output in batches_of(scenario):
                    metric.update(output)
                results[scenario, ignore_zero_hits, name] = _compute(metric)
    return results


def _worker(local_rank: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    assert idist.get_world_size() == WORLD_SIZE and idist.backend() == "gloo"
    results = _run_all(lambda scenario: _batches(scenario, rank))

    # state_dict under 2 ranks holds one state per rank; loading it back gives the same result.
    metric = _make("group", 1.0, "first", True)
    for output in _batches("one-rank-without-hits", rank):
        metric.update(output)
    saved = metric.state_dict()
    restored = _make("group", 1.0, "first", True)
    restored.load_state_dict(saved)
    results["state_dict", True, "group"] = _compute(restored)
    results["state_dict_ranks"] = len(saved["__metric_state_per_rank"])
    torch.save(results, f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    import ignite.distributed as idist

    out_dir = tmp_path_factory.mktemp("dist")
    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, str(out_dir))
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE)]


@pytest.fixture(scope="module")
def single_process_results():
    return _run_all(lambda scenario: [b for r in range(WORLD_SIZE) for b in _batches(scenario, r)])


def _assert_close(got, expected, key):
    """Equal to the bit: the sums are exact, so no tolerance is needed."""
    if expected == NOT_COMPUTABLE:
        assert got == NOT_COMPUTABLE, key
    else:
        assert type(got) is type(expected) and got == expected, key


@pytest.mark.slow
def test_every_rank_equals_one_process_over_all_data(rank_results, single_process_results):
    assert single_process_results["one-rank-without-hits", True, "mrr"] != NOT_COMPUTABLE
    assert single_process_results["no-hits-anywhere", True, "mrr"] == NOT_COMPUTABLE
    assert single_process_results["no-hits-anywhere", False, "mrr"] == [0.0] * len(KS)
    for rank, results in enumerate(rank_results):
        for key, expected in single_process_results.items():
            _assert_close(results[key], expected, (rank, *key))


@pytest.mark.slow
def test_state_dict_round_trip_under_two_ranks(rank_results, single_process_results):
    for results in rank_results:
        assert results["state_dict_ranks"] == WORLD_SIZE
        _assert_close(
            results["state_dict", True, "group"],
            single_process_results["one-rank-without-hits", True, "group"],
            "state_dict",
        )
