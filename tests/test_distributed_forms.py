"""Every input form under real worker processes (gloo, 2 ranks, uneven batches) equals one process.

Each rank sees whole queries (a query's flat rows stay on one process), cut across its own
updates; the flat form's held-back query is closed by each rank before the all-reduce.
"""

from __future__ import annotations

import itertools
import socket

import numpy as np
import pytest
import torch
from reference import METRIC_NAMES, build_metric

from ignite_ranking import RankingMetrics, Retrieved

WORLD_SIZE = 2
KS = [1, 3, 10]
FORMS = ("flat", "retrieved_padded", "retrieved_sparse", "sparse_labels")
# rank -> number of queries of each of its updates (uneven; rank 1 has an empty update)
PLAN = {0: [7, 2, 11], 1: [3, 0, 5, 1]}


def _queries(form, rank, update):
    rng = np.random.default_rng([FORMS.index(form), rank, update])
    return rng, PLAN[rank][update]


def _output(form, rank, update):
    rng, batch = _queries(form, rank, update)
    num_items = 15
    scores = torch.from_numpy(rng.integers(0, 4, size=(batch, num_items)) / 2.0)
    labels = torch.from_numpy(
        rng.integers(0, 4, size=(batch, num_items)) * (rng.random((batch, num_items)) < 0.4)
    )
    if form == "sparse_labels":
        return scores, labels.to_sparse()
    if form == "flat":
        lengths = rng.integers(1, num_items + 1, size=batch)
        keep = torch.arange(num_items)[None, :] < torch.from_numpy(lengths)[:, None]
        ids = 1000 * rank + 50 * update + torch.arange(batch)[:, None].expand(batch, num_items)
        return scores[keep], labels[keep], ids[keep]
    ids = torch.from_numpy(rng.permuted(np.tile(np.arange(num_items), (batch, 1)), axis=1))
    ids = ids[:, :8].clone()
    ids[torch.arange(8)[None, :] >= torch.from_numpy(rng.integers(0, 9, size=batch))[:, None]] = -1
    if form == "retrieved_sparse":
        return Retrieved(ids, labels.to_sparse_csr(), scores[:, :8])
    relevant = torch.where(labels > 0, torch.arange(num_items), -1).sort(dim=1, descending=True).values
    grades = labels.sort(dim=1, descending=True).values.to(torch.float64)
    return Retrieved(ids, relevant, grades=grades)


def _updates(form, rank):
    outputs = [_output(form, rank, u) for u in range(len(PLAN[rank]))]
    if form != "flat":
        return outputs
    # the rank's flat rows re-cut at other points, so its queries straddle updates
    whole = [torch.cat(parts) for parts in zip(*outputs, strict=True)]
    n = whole[0].shape[0]
    cuts = [0, n // 3, n // 3 + 1, 2 * n // 3, n]
    return [tuple(t[a:b] for t in whole) for a, b in itertools.pairwise(cuts)]


def _make(name, ties):
    common = {"ignore_zero_hits": True, "ties": ties}
    if name == "group":
        return RankingMetrics({n: build_metric(n, KS, **common) for n in METRIC_NAMES})
    return build_metric(name, KS, **common)


def _run_all(updates_of):
    results = {}
    for form in FORMS:
        for ties in ("first", "average"):
            for name in ("mrr", "ndcg", "r_precision", "group"):
                metric = _make(name, ties)
                for output in updates_of(form):
                    metric.update(output)
                results[form, ties, name] = metric.compute()
    return results


def _worker(local_rank: int, out_dir: str) -> None:
    import ignite.distributed as idist

    rank = idist.get_rank()
    results = _run_all(lambda form: _updates(form, rank))
    # A state saved while each rank holds back a (different) flat query resumes exactly.
    metric = _make("group", "first")
    updates = _updates("flat", rank)
    metric.update(updates[0])
    restored = _make("group", "first")
    restored.load_state_dict(metric.state_dict())
    for output in updates[1:]:
        restored.update(output)
    results["resumed"] = restored.compute()
    torch.save(results, f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_every_form_on_two_ranks_equals_one_process(tmp_path):
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE)]
    single = _run_all(lambda form: [o for r in range(WORLD_SIZE) for o in _updates(form, r)])
    single["resumed"] = single["flat", "first", "group"]
    for results in ranks:
        assert results.keys() == single.keys()
        for key, expected in single.items():
            got = results[key]
            assert got == expected, key  # to the bit: the sums are exact
