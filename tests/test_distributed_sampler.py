"""EvaluationSampler gives every query to exactly one process, and the metrics warn about samplers
that repeat or drop queries (PyTorch's DistributedSampler pads an uneven data set).

The unit tests run in this process; one spawn of 2 real gloo processes then runs every
multi-process scenario (process start is slow): ``idist.auto_dataloader`` with its default
sampler (warned once, on rank 0 only), with :class:`EvaluationSampler` (no warning, the
single-process result) and over a data set that divides evenly (no warning).
"""

from __future__ import annotations

import socket
import warnings

import ignite.distributed as idist
import pytest
import torch
from ignite.engine import Engine
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset

from ignite_ranking import MAP, MRR, NDCG, RankingMetrics, Recall
from ignite_ranking.distributed import EvaluationSampler, PaddedSamplerWarning

WORLD_SIZE = 2
QUERIES = 201  # odd: the default sampler pads it to 202 over 2 processes
BATCH_SIZE = 32  # auto_dataloader divides it by the world size


def _dataset(queries: int = QUERIES) -> TensorDataset:
    g = torch.Generator().manual_seed(19)
    y = (torch.rand(queries, 40, generator=g) < 0.1).to(torch.int64)
    y_pred = y + 1.5 * torch.randn(queries, 40, generator=g)
    # The padding repeats query 0: give it RR@k = 1, above the mean, so that repeating it shows.
    y[0] = 0
    y[0, y_pred[0].argmax()] = 1
    return TensorDataset(y_pred, y)


def _metric(kind: str):
    if kind == "group":
        return RankingMetrics(mrr=MRR([1, 5, 10]), ndcg=NDCG([10]), recall=Recall([5, 20]), map=MAP([10]))
    return MRR([1, 5, 10])


def _evaluate(kind: str, loader, runs: int = 1):
    """The metric's result over ``loader`` and the PaddedSamplerWarning messages of ``runs`` runs."""
    evaluator = Engine(lambda engine, batch: (batch[0], batch[1]))
    _metric(kind).attach(evaluator, "result")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(runs):
            result = evaluator.run(loader).metrics["result"]
    return result, [str(w.message) for w in caught if w.category is PaddedSamplerWarning]


# -- EvaluationSampler, one process ---------------------------------------------------------------


@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5])
def test_every_index_exactly_once(world_size):
    for size in range(51):
        shards = [
            list(EvaluationSampler(range(size), num_replicas=world_size, rank=r)) for r in range(world_size)
        ]
        assert [i for shard in shards for i in shard] == list(range(size))  # contiguous blocks, in order
        lengths = [len(shard) for shard in shards]
        assert max(lengths) - min(lengths) <= 1
        assert lengths == sorted(lengths, reverse=True)  # the first ranks take the extra indices
        for rank, shard in enumerate(shards):
            sampler = EvaluationSampler(range(size), num_replicas=world_size, rank=rank)
            assert len(sampler) == sampler.num_samples == len(shard)
            assert sampler.total_size == size  # no padding
            assert (sampler.num_replicas, sampler.rank) == (world_size, rank)


def test_it_is_a_distributed_sampler_that_neither_shuffles_nor_pads():
    sampler = EvaluationSampler(range(7), num_replicas=3, rank=2)
    assert isinstance(sampler, DistributedSampler)
    assert (sampler.shuffle, sampler.drop_last) == (False, False)
    before = list(sampler)
    sampler.set_epoch(5)
    assert list(sampler) == before == [5, 6]
    assert "5..6 of 7" in repr(sampler)


def test_defaults_are_this_process_rank_and_world_size():
    sampler = EvaluationSampler(range(4))
    assert (sampler.num_replicas, sampler.rank) == (idist.get_world_size(), idist.get_rank()) == (1, 0)
    assert list(sampler) == [0, 1, 2, 3]


def test_in_a_plain_dataloader():
    dataset = TensorDataset(torch.arange(10))
    loader = DataLoader(dataset, batch_size=3, sampler=EvaluationSampler(dataset, num_replicas=3, rank=1))
    assert [batch[0].tolist() for batch in loader] == [[4, 5, 6]]
    assert len(loader) == 1
    first = DataLoader(dataset, batch_size=3, sampler=EvaluationSampler(dataset, num_replicas=3, rank=0))
    assert [batch[0].tolist() for batch in first] == [[0, 1, 2], [3]]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"num_replicas": 2, "rank": 2},
            ValueError,
            r"rank must be in \[0, num_replicas\) = \[0, 2\), got rank=2",
        ),
        ({"num_replicas": 2, "rank": -1}, ValueError, r"rank must be in .*got rank=-1"),
        (
            {"num_replicas": 0, "rank": 0},
            ValueError,
            "num_replicas must be a positive number of processes, got 0",
        ),
        ({"num_replicas": -3, "rank": 0}, ValueError, r"num_replicas must be a positive .* got -3"),
        ({"num_replicas": 2.0, "rank": 0}, TypeError, "num_replicas must be an int, got 2.0 of type float"),
        ({"num_replicas": 2, "rank": True}, TypeError, "rank must be an int, got True of type bool"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        EvaluationSampler(range(5), **kwargs)


def test_a_data_set_without_len_is_refused():
    with pytest.raises(TypeError, match="needs a data set with len"):
        EvaluationSampler(iter(range(5)), num_replicas=1, rank=0)


def test_a_data_set_that_changed_size_is_refused():
    data = list(range(5))
    sampler = EvaluationSampler(data, num_replicas=2, rank=1)
    data.append(5)
    with pytest.raises(RuntimeError, match=r"had 5 samples .* has 6 now"):
        list(sampler)


# -- the guard, one process (rank 0) --------------------------------------------------------------


def _padding_loader(dataset, **sampler_kwargs):
    sampler = DistributedSampler(dataset, num_replicas=WORLD_SIZE, rank=0, shuffle=False, **sampler_kwargs)
    return DataLoader(dataset, batch_size=16, sampler=sampler)


def test_a_padding_sampler_warns_once_per_metric_with_the_numbers_and_the_fix():
    _, messages = _evaluate("single", _padding_loader(_dataset()), runs=3)
    assert len(messages) == 1
    assert messages[0].startswith(
        "MRR: the data loader's DistributedSampler pads the 201 queries to 202 over 2 processes, "
        "so 1 query is counted twice"
    )
    assert "EvaluationSampler(dataset)" in messages[0]
    # Another metric object warns again, once.
    _, again = _evaluate("single", _padding_loader(_dataset()))
    assert again == messages


def test_a_group_warns_once_not_per_member():
    _, messages = _evaluate("group", _padding_loader(_dataset(13)), runs=2)
    assert len(messages) == 1
    assert messages[0].startswith(
        "RankingMetrics: the data loader's DistributedSampler pads the 13 queries to 14"
    )


def test_a_sampler_inside_a_batch_sampler_is_found():
    dataset = _dataset(7)
    sampler = DistributedSampler(dataset, num_replicas=4, rank=0, shuffle=False)
    loader = DataLoader(dataset, batch_sampler=BatchSampler(sampler, batch_size=2, drop_last=False))
    _, messages = _evaluate("single", loader)
    assert len(messages) == 1 and "pads the 7 queries to 8 over 4 processes" in messages[0]


def test_fewer_queries_than_processes_count_several_times():
    dataset = _dataset(2)
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset, num_replicas=5, rank=0, shuffle=False))
    _, messages = _evaluate("single", loader)
    assert len(messages) == 1
    assert "pads the 2 queries to 5 over 5 processes, so queries are counted up to 3 times" in messages[0]


def test_dropping_queries_warns_too():
    _, messages = _evaluate("single", _padding_loader(_dataset(9), drop_last=True))
    assert len(messages) == 1
    assert "drops the 9 queries to 8 over 2 processes (drop_last=True), so 1 query is left out" in messages[0]


def test_no_warning_when_every_query_counts_once():
    dataset = _dataset(10)
    assert _evaluate("single", _padding_loader(dataset))[1] == []  # 10 divides by 2
    exact = DataLoader(dataset, batch_size=4, sampler=EvaluationSampler(dataset, num_replicas=3, rank=0))
    assert _evaluate("group", exact)[1] == []
    assert _evaluate("single", DataLoader(dataset, batch_size=4))[1] == []
    assert _evaluate("single", [dataset[:5], dataset[5:]])[1] == []  # a list of batches: no sampler


def test_a_detached_metric_does_not_warn():
    for kind in ("single", "group"):
        evaluator = Engine(lambda engine, batch: (batch[0], batch[1]))
        metric = _metric(kind)
        metric.attach(evaluator, "result")
        metric.detach(evaluator)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            evaluator.run(_padding_loader(_dataset(5)))
        assert not [w for w in caught if w.category is PaddedSamplerWarning], kind


@pytest.fixture(scope="module")
def single_process_results():
    """One process over all queries, through ``auto_dataloader`` (which adds no sampler here)."""
    results = {}
    for kind in ("single", "group"):
        loader = idist.auto_dataloader(_dataset(), batch_size=BATCH_SIZE)
        results[kind], messages = _evaluate(kind, loader)
        assert messages == [], kind
    return results


# -- 2 gloo processes -----------------------------------------------------------------------------


def _worker(local_rank: int, out_dir: str) -> None:
    torch.set_num_threads(1)
    rank = idist.get_rank()
    assert idist.get_world_size() == WORLD_SIZE and idist.backend() == "gloo"
    dataset = _dataset()
    out = {}
    for kind in ("single", "group"):
        padded = idist.auto_dataloader(dataset, batch_size=BATCH_SIZE, shuffle=False)
        out["padded", kind] = _evaluate(kind, padded, runs=2)
        even = idist.auto_dataloader(_dataset(QUERIES - 1), batch_size=BATCH_SIZE, shuffle=False)
        out["even", kind] = _evaluate(kind, even)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sampler = EvaluationSampler(dataset)
            loader = idist.auto_dataloader(dataset, batch_size=BATCH_SIZE, sampler=sampler)
            result = _evaluate(kind, loader)
        out["exact", kind] = result
        out["exact_warnings", kind] = [f"{w.category.__name__}: {w.message}" for w in caught]
        out["sampler_kept", kind] = loader.sampler is sampler
        out["shard", kind] = list(loader.sampler)
    torch.save(out, f"{out_dir}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("sampler")
    with idist.Parallel(
        backend="gloo", nproc_per_node=WORLD_SIZE, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(_worker, str(out_dir))
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["single", "group"])
def test_default_sampler_warns_once_on_rank_0_only(rank_results, single_process_results, kind):
    (result0, messages0), (result1, messages1) = (r["padded", kind] for r in rank_results)
    assert len(messages0) == 1, messages0  # two runs, one warning
    assert "pads the 201 queries to 202 over 2 processes, so 1 query is counted twice" in messages0[0]
    assert messages1 == []
    # What the warning is about: the padded result is not the mean over the data set.
    assert result0 == result1 != single_process_results[kind]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["single", "group"])
def test_evaluation_sampler_gives_the_single_process_result(rank_results, single_process_results, kind):
    assert [r["shard", kind] for r in rank_results] == [list(range(101)), list(range(101, 201))]
    for rank, results in enumerate(rank_results):
        assert results["sampler_kept", kind], rank  # auto_dataloader neither wraps nor replaces it
        assert results["exact_warnings", kind] == [], rank  # nor warns; nor does the metric
        result, messages = results["exact", kind]
        assert messages == []
        assert result == single_process_results[kind], rank  # to the bit


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["single", "group"])
def test_no_warning_when_the_data_set_divides_evenly(rank_results, kind):
    for results in rank_results:
        assert results["even", kind][1] == []
