"""Per-query values under 2 real gloo processes equal one process over all data, in the same order.

Order across processes: arrival keys count rank 0's queries first, then rank 1's (one process
is fed rank 0's batches, then rank 1's); user ids are sorted, so ids interleaved across the ranks
(as a DistributedSampler deals them) come back in dataset order.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest
import torch
from reference import tied_batch

from ignite_ranking import MAP, MRR, NDCG, RankingMetrics, RPrecision

WORLD_SIZE = 2
# rank -> batch sizes; rank 1 sees more, smaller batches, and an empty one
PLAN = {0: [5, 3], 1: [2, 0, 4, 1]}


def _batches(rank: int):
    rng = np.random.default_rng([11, rank])
    return [tied_batch(rng, b, 8) for b in PLAN[rank]]


def _ids(rank: int):
    """Dataset positions dealt round-robin, as DistributedSampler does: rank r gets r, r+2, ..."""
    total = sum(sum(sizes) for sizes in PLAN.values())
    mine = list(range(rank, total, WORLD_SIZE))
    out, start = [], 0
    for size in PLAN[rank]:
        out.append(torch.tensor(mine[start : start + size], dtype=torch.int64))
        start += size
    return out


def _make(kind: str, ignore_zero_hits: bool):
    if kind == "group":
        return RankingMetrics(
            mrr=MRR([1, 5], ignore_zero_hits=ignore_zero_hits),
            ndcg=NDCG([3], ignore_zero_hits=ignore_zero_hits),
            rprec=RPrecision(ignore_zero_hits=ignore_zero_hits),
            per_query=True,
        )
    return MAP([2, 8], ignore_zero_hits=ignore_zero_hits, per_query=True)


def _plain(result):
    return result.keys.tolist(), {name: values.tolist() for name, values in result.values.items()}


def _run(feeds):
    """``feeds``: a list of (y_pred, y, ids or None); results of every case."""
    results = {}
    for kind in ("group", "single"):
        for ignore_zero_hits in (True, False):
            for with_ids in (False, True):
                metric = _make(kind, ignore_zero_hits)
                for y_pred, y, ids in feeds:
                    metric.update((y_pred, y, {"query_ids": ids}) if with_ids else (y_pred, y))
                metric.compute()
                results[kind, ignore_zero_hits, with_ids] = _plain(metric.per_query_values())
    return results


def _feeds(rank: int):
    return [(y_pred, y, ids) for (y_pred, y), ids in zip(_batches(rank), _ids(rank), strict=True)]


def _worker(local_rank: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    results = _run(_feeds(rank))
    # state_dict under two ranks keeps each rank's values; restored, they gather the same.
    metric = _make("group", True)
    for y_pred, y, _ in _feeds(rank):
        metric.update((y_pred, y))
    restored = _make("group", True)
    restored.load_state_dict(metric.state_dict())
    results["restored"] = _plain(restored.per_query_values())
    torch.save(results, f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE)]
    single = _run([feed for r in range(WORLD_SIZE) for feed in _feeds(r)])
    assert single["group", False, True][0] == list(range(15))  # ids: dataset order
    assert single["group", False, False][0] == list(range(15))  # arrival: rank 0 first
    for results in ranks:
        for key, (keys, values) in single.items():
            got_keys, got_values = results[key]
            assert got_keys == keys, key
            assert got_values.keys() == values.keys(), key
            for name in values:
                np.testing.assert_allclose(
                    got_values[name], values[name], rtol=1e-12, atol=0, err_msg=str(key)
                )
        assert results["restored"] == single["group", True, False]
