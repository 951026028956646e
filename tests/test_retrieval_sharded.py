"""retrieval.evaluate_embeddings with a group, on 2 and 3 real gloo processes, each holding its
own shard of the corpus, equals one process holding the whole corpus, bit for bit, under every
convention, with exclusions, identical ids and per-query values."""

from __future__ import annotations

import socket
import time
from datetime import timedelta

import pytest
import torch
from retrieval_data import embedding_data

from ignite_ranking import retrieval

DEADLINE_S = 240
# (convention, similarity, ignore_identical_ids, exclude, chunk_size, float16 with norms to 512)
SCENARIOS = [
    ("trec", "cosine", False, False, 37, False),
    ("beir", "dot", True, False, None, False),
    ("sentence-transformers", "cosine", False, True, 64, False),
    ("beir", "euclidean", False, True, 100, False),
    ("trec", "euclidean", False, False, 50, True),  # every shard scales by the largest norm of all
    ("beir", "dot", False, False, 50, True),
]


def _call(scenario, rank: int | None, world: int):
    """The scenario's result on ``rank`` of ``world`` (its shard), or on one process (None)."""
    convention, similarity, identical, with_exclude, chunk, large_float16 = scenario
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(
        11, num_queries=40, num_docs=300, identical=identical, sorted_ids=True
    )
    if large_float16:  # norms to 512 from row 120 on: the first shard's alone need no scaling
        corpus[120:] *= 128
        queries, corpus = queries.half(), corpus.half()
    exclude = {q: [corpus_ids[(7 * i) % 300], corpus_ids[(11 * i) % 300]] for i, q in enumerate(query_ids)}
    kwargs = {
        "query_ids": query_ids, "convention": convention, "similarity": similarity, "chunk_size": chunk,
        "ignore_identical_ids": identical, "exclude": exclude if with_exclude else None, "per_query": True,
        "batch_size": 16,
    }  # fmt: skip
    if rank is None:
        return retrieval.evaluate_embeddings(queries, corpus, qrels, corpus_ids=corpus_ids, **kwargs)
    import torch.distributed as dist

    cuts = [0, 50, 300] if world == 2 else [0, 120, 121, 300]  # uneven, one of a single row
    low, high = cuts[rank], cuts[rank + 1]
    return retrieval.evaluate_embeddings(
        queries, corpus[low:high], qrels, corpus_ids=corpus_ids[low:high], group=dist.group.WORLD, **kwargs
    )


def _local(rank: int):
    """Regression: without a group, under torch.distributed, the metrics reduced over every
    process (each got the mean of all processes' queries) and per_query=True crashed."""
    queries, corpus, query_ids, corpus_ids, qrels = embedding_data(11, num_queries=40, num_docs=300)
    mine = slice(7 * rank, 7 * rank + 5 + rank)  # uneven shares of the queries
    return retrieval.evaluate_embeddings(
        queries[mine], corpus, qrels, query_ids=query_ids[mine], corpus_ids=corpus_ids, per_query=True
    )


def _worker(rank: int, world: int, port: int, out_dir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))  # fmt: skip
    results = [_call(scenario, rank, world) for scenario in SCENARIOS]
    try:
        _call(("trec", lambda q, c: q @ c.T, False, False, None, False), rank, world)
    except ValueError as error:
        results.append(str(error))
    results.append(_local(rank))  # without a group: this process's queries alone, no collective
    if rank == 0:
        results.append(_local(rank))  # called on one process only: no wait for the others
    dist.barrier()
    torch.save(results, f"{out_dir}/rank{rank}.pt")
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_every_process_equals_one_process_bitwise(world, tmp_path):
    import torch.multiprocessing as mp

    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    if method == "forkserver":
        mp.get_context(method).set_forkserver_preload([__name__])
    context = mp.start_processes(_worker, args=(world, _free_port(), str(tmp_path)), nprocs=world, join=False,
                                 start_method=method)  # fmt: skip
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not context.join(timeout=max(1.0, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                pytest.fail(f"the {world} processes did not finish in {DEADLINE_S} s: a hang")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(world)]
    expected = [_call(scenario, None, 1) for scenario in SCENARIOS]
    for rank, results in enumerate(ranks):
        assert results[: len(SCENARIOS)] == expected  # floats compared with ==: bit for bit
        assert "callable similarity is not sharded" in results[len(SCENARIOS)]
        assert results[len(SCENARIOS) + 1 :] == [_local(rank)] * (2 if rank == 0 else 1)
    assert all(means for means, _ in expected)
