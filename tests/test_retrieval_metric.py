"""retrieval.EmbeddingRetrieval in ignite evaluators: per epoch, the corpus encoded once per
evaluation, equal to evaluate_embeddings bit for bit on one and on 2 gloo processes (uneven
shards, one of them empty), and bad inputs refused before a wrong number comes out."""

from __future__ import annotations

import socket
import warnings

import pytest
import torch
from ignite.engine import Engine, Events
from ignite.exceptions import NotComputableError
from ignite.handlers import Checkpoint, DiskSaver
from retrieval_data import embedding_data
from torch.utils.data import DataLoader, TensorDataset

from ignite_ranking.distributed import EvaluationSampler
from ignite_ranking.retrieval import EmbeddingRetrieval, evaluate_embeddings

MEASURES = ["ndcg@10", "mrr@10", "recall@20", "map@100"]
EPOCHS = 2


def _data():
    return embedding_data(5, num_queries=30, num_docs=120, sorted_ids=True)


def _weights(epoch: int) -> torch.Tensor:
    """The "model" after ``epoch`` epochs of training: a linear map that changes every epoch."""
    return torch.eye(4) + epoch * torch.arange(16.0).reshape(4, 4) / 40


def _expected() -> list[dict]:
    queries, corpus, query_ids, corpus_ids, qrels = _data()
    options = {"query_ids": query_ids, "corpus_ids": corpus_ids, "measures": MEASURES, "convention": "beir"}
    return [
        evaluate_embeddings(queries @ _weights(e), corpus @ _weights(e), qrels, **options)
        for e in range(1, EPOCHS + 1)
    ]


def _train(rank: int = 0, world: int = 1, corpus_cuts=None, query_cuts=None) -> tuple[list[dict], list[int]]:
    """A trainer whose epochs change the model, and an evaluator with EmbeddingRetrieval run after
    each: the published results and the number of corpus rows encoded per evaluation."""
    queries, corpus, query_ids, corpus_ids, qrels = _data()
    corpus_cuts = corpus_cuts or [0, len(corpus)]
    query_cuts = query_cuts or [0, len(queries)]
    low, high = corpus_cuts[rank], corpus_cuts[rank + 1]
    shard = [(corpus[s : min(s + 16, high)], corpus_ids[s : min(s + 16, high)]) for s in range(low, high, 16)]
    q_low, q_high = query_cuts[rank], query_cuts[rank + 1]
    batches = [(queries[s : min(s + 7, q_high)], query_ids[s : min(s + 7, q_high)])
               for s in range(q_low, q_high, 7)]  # fmt: skip
    model = {"epoch": 0}
    encoded: list[int] = []

    def encode(inputs):
        encoded[-1] += len(inputs)
        return inputs @ _weights(model["epoch"])

    evaluator = Engine(lambda engine, batch: (batch[0] @ _weights(model["epoch"]), batch[1]))
    metric = EmbeddingRetrieval(shard, encode, qrels, measures=MEASURES, convention="beir")
    metric.attach(evaluator, "retrieval")
    trainer, results = Engine(lambda engine, batch: None), []

    @trainer.on(Events.EPOCH_COMPLETED)
    def evaluate(engine):
        model["epoch"] = engine.state.epoch
        encoded.append(0)
        metrics = evaluator.run(batches).metrics
        results.append({key: metrics[key] for key in metrics if key != "retrieval"})

    trainer.run([0], max_epochs=EPOCHS)
    return results, encoded


def test_each_evaluation_encodes_the_corpus_once_and_equals_the_functional_form():
    results, encoded = _train()
    assert results == _expected()  # the model of each epoch, with ==
    assert encoded == [120] * EPOCHS  # once per evaluation, none at construction


def _worker(local_rank: int, out: str) -> None:
    import ignite.distributed as idist

    torch.set_num_threads(1)
    rank = idist.get_rank()
    uneven = _train(rank, 2, corpus_cuts=[0, 83, 120], query_cuts=[0, 19, 30])
    empty = _train(rank, 2, corpus_cuts=[0, 120, 120], query_cuts=[0, 25, 30])
    torch.save((uneven, empty), f"{out}/rank{rank}.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_equal_one_bit_for_bit(tmp_path):
    import ignite.distributed as idist

    port = _free_port()
    with idist.Parallel(backend="gloo", nproc_per_node=2, master_addr="127.0.0.1", master_port=port) as p:
        p.run(_worker, str(tmp_path))
    expected = _expected()
    for rank in range(2):
        saved = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        (uneven, encoded), (empty, encoded_empty) = saved
        assert uneven == expected and empty == expected, rank
        assert encoded == [[83, 37][rank]] * EPOCHS and encoded_empty == [[120, 0][rank]] * EPOCHS


def _metric(corpus=None, **options):
    _, corpus_rows, _, corpus_ids, qrels = _data()
    corpus = [(corpus_rows, corpus_ids)] if corpus is None else corpus
    return EmbeddingRetrieval(corpus, lambda inputs: inputs, qrels, **options)


@pytest.mark.parametrize(
    ("corpus", "update", "error", "message"),
    [
        # ids of one batch short by one, made up by the next: the pairs would shift silently
        ("shifted", None, ValueError, r"a corpus batch has 60 embeddings and 59 ids"),
        ("empty", None, ValueError, "the corpus loader yielded no batch"),
        (None, (torch.ones(2, 4), ["q1"]), ValueError, r"a query batch has 2 embeddings and 1 ids"),
        (None, (torch.ones(2, 4), "q1"), TypeError, r"a query batch's ids must be a list or tensor"),
        (None, (torch.ones(2, 4), ["nobody", "none"]), ValueError, "no query of query_ids has a relevant"),
    ],
)
def test_bad_batches_are_refused(corpus, update, error, message):
    _, rows, _, ids, _ = _data()
    loaders = {"shifted": [(rows[:60], ids[:59]), (rows[60:], ids[59:])], "empty": []}
    metric = _metric(loaders.get(corpus))
    with pytest.raises(error, match=message):
        metric.update(update or (rows[:2], ["q1", "q2"]))
        metric.compute()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"query_ids": ["q1"]}, r"got \['query_ids'\]: the ids come with the batches"),
        ({"group": None}, r"got \['group'\].*the group from ignite.distributed"),
        ({"measure": ["mrr@10"]}, r"got \['measure'\]: evaluate_embeddings takes \['batch_size'"),
    ],
)
def test_options_are_checked_at_construction(options, message):
    with pytest.raises(TypeError, match=message):
        _metric(**options)


def test_a_corpus_read_once_is_refused_at_construction():
    _, rows, _, ids, _ = _data()
    with pytest.raises(TypeError, match="a generator is read once: give a DataLoader or a list"):
        _metric(batch for batch in [(rows, ids)])


def test_a_refused_batch_keeps_nothing():
    """Regression: the embeddings of a batch whose ids were refused were kept, so every later
    compute() paired the queries with the wrong ids."""
    queries, _, query_ids, _, _ = _data()
    metric, clean = _metric(measures=MEASURES), _metric(measures=MEASURES)
    for m in (metric, clean):
        m.update((queries[:10], query_ids[:10]))
    bad = [
        ((queries[10:12], "q1"), TypeError, "ids must be a list or tensor"),
        ((queries[10:12], query_ids[10:11]), ValueError, "2 embeddings and 1 ids"),
        ((queries[10:12, :3], query_ids[10:12]), ValueError, "d=3 torch.float32 after batches of d=4"),
        ((queries[10:12].double(), query_ids[10:12]), ValueError, "every batch must have one d and dtype"),
        ((queries[10].tolist(), query_ids[10:11]), ValueError, r"a \(batch, d\) floating tensor, got list"),
    ]
    for batch, error, message in bad:
        with pytest.raises(error, match=message):
            metric.update(batch)
    assert metric.compute() == clean.compute()


def test_the_state_round_trips_and_refuses_other_options():
    """Regression: state_dict() held nothing, and a load "succeeded" into a metric that then
    failed on tensor shapes; compute() before any batch raised a shape error."""
    queries, _, query_ids, _, _ = _data()
    with pytest.raises(NotComputableError, match="at least one query batch"):
        _metric(measures=MEASURES).compute()
    metric = _metric(measures=MEASURES)
    metric.update((queries[:13], query_ids[:13]))
    state = metric.state_dict()
    loaded = _metric(measures=MEASURES)
    loaded.load_state_dict(state)
    assert loaded.compute() == metric.compute()
    loaded.update((queries[13:], query_ids[13:]))
    metric.update((queries[13:], query_ids[13:]))
    whole = _metric(measures=MEASURES)
    whole.update((queries, query_ids))
    assert loaded.compute() == metric.compute() == whole.compute()
    empty = _metric(measures=MEASURES)
    empty.load_state_dict(_metric(measures=MEASURES).state_dict())
    with pytest.raises(NotComputableError):
        empty.compute()
    other = _metric(measures=["mrr@10"])
    with pytest.raises(ValueError, match=r"other settings than this EmbeddingRetrieval.*measures"):
        other.load_state_dict(state)
    with pytest.raises(NotComputableError):
        other.compute()  # the refused load kept nothing


class _Preempted(Exception):
    pass


def test_an_evaluation_interrupted_mid_epoch_resumes_exactly(tmp_path):
    """Regression: the resumed evaluator reset the loaded query batches at its epoch's start and
    counted only those after the checkpoint (docs/distributed.md, "Resuming")."""
    queries, _, query_ids, _, _ = _data()
    data = TensorDataset(queries, torch.arange(len(query_ids)))

    def build(folder=None):
        loader = DataLoader(data, batch_size=4, sampler=EvaluationSampler(data))
        evaluator = Engine(lambda engine, batch: (batch[0], [query_ids[i] for i in batch[1].tolist()]))
        metric = _metric(measures=MEASURES)
        metric.attach(evaluator, "retrieval")
        to_save = {"metric": metric, "evaluator": evaluator}
        if folder is not None:
            saver = DiskSaver(folder, require_empty=False)
            checkpoint = Checkpoint(to_save, saver, n_saved=1, filename_pattern="{name}.{ext}")
            evaluator.add_event_handler(Events.ITERATION_COMPLETED, checkpoint)
        return loader, evaluator, to_save

    loader, evaluator, _ = build()
    expected = {key: evaluator.run(loader).metrics[key] for key in MEASURES}
    loader, evaluator, _ = build(tmp_path)
    evaluator.add_event_handler(
        Events.ITERATION_COMPLETED(once=3), lambda engine: (_ for _ in ()).throw(_Preempted)
    )
    with pytest.raises(_Preempted):
        evaluator.run(loader)
    loader, evaluator, to_save = build(tmp_path)
    Checkpoint.load_objects(to_save, tmp_path / "checkpoint.pt")
    assert len(to_save["metric"]._query_ids) == 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = evaluator.run(loader).metrics
    assert {key: metrics[key] for key in MEASURES} == expected
