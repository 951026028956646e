"""Train a tiny bi-encoder with Ignite and evaluate it over its whole corpus after every epoch.

Synthetic pairs: each document is a bag of tokens, its query a noisy half of them. The model is
an ``EmbeddingBag`` trained with in-batch negatives. After each epoch an evaluator engine runs
over the query batches with :class:`ignite_ranking.retrieval.EmbeddingRetrieval` attached: it
encodes the corpus once (each process its own contiguous shard), keeps the query embeddings and
ranks the whole corpus exactly for them (sharded over the processes). Every process trains the
same model (same seed, same data), so one and several processes must report the same numbers.

    python examples/dense_retrieval.py --nproc-per-node 2
"""

from __future__ import annotations

import argparse
import json
import socket

import ignite.distributed as idist
import torch
from ignite.engine import Engine, Events

from ignite_ranking.retrieval import EmbeddingRetrieval

MEASURES = ["ndcg@10", "mrr@10", "recall@100"]


def make_data(num_docs: int, vocabulary: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    docs = torch.randint(0, vocabulary, (num_docs, 12), generator=gen)
    keep = torch.rand(num_docs, 12, generator=gen).argsort(dim=1)[:, :6]
    queries = docs.gather(1, keep)
    noise = torch.rand(queries.shape, generator=gen) < 0.3
    queries = torch.where(noise, torch.randint(0, vocabulary, queries.shape, generator=gen), queries)
    return docs, queries


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(local_rank: int, config: dict) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(config["seed"])
    docs, queries = make_data(config["docs"], config["vocabulary"], config["seed"])
    doc_ids = [f"d{j}" for j in range(len(docs))]
    num_queries = config["queries"]
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(num_queries)}
    model = torch.nn.EmbeddingBag(config["vocabulary"], config["dim"])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)

    def train_step(engine, batch):
        query_tokens, doc_tokens = batch
        scores = model(query_tokens) @ model(doc_tokens).T / 0.1
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(scores)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    trainer = Engine(train_step)
    pairs = list(zip(queries.split(64), docs.split(64), strict=True))

    # This process's contiguous shard of the corpus, and of the evaluated queries.
    rank, world = idist.get_rank(), idist.get_world_size()
    low, high = len(docs) * rank // world, len(docs) * (rank + 1) // world
    shard = [(docs[s : min(s + 256, high)], doc_ids[s : min(s + 256, high)]) for s in range(low, high, 256)]
    q_low, q_high = num_queries * rank // world, num_queries * (rank + 1) // world
    query_batches = [
        (queries[s : min(s + 100, q_high)], [f"q{i}" for i in range(s, min(s + 100, q_high))])
        for s in range(q_low, q_high, 100)
    ]

    def eval_step(engine, batch):
        tokens, ids = batch
        with torch.no_grad():
            return model(tokens), ids

    evaluator = Engine(eval_step)
    EmbeddingRetrieval(shard, model, qrels, measures=MEASURES).attach(evaluator, "retrieval")
    history = []

    @trainer.on(Events.EPOCH_COMPLETED)
    def evaluate(engine):
        state = evaluator.run(query_batches)
        history.append({m: state.metrics[m] for m in MEASURES})
        if rank == 0:
            print(f"epoch {engine.state.epoch}: " + ", ".join(f"{m} {v:.4f}" for m, v in history[-1].items()))

    trainer.run(pairs, max_epochs=config["epochs"])
    if rank == 0 and config["out"]:
        with open(config["out"], "w") as out:
            json.dump({"world_size": world, "history": history}, out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc-per-node", type=int, default=2)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=500, help="the first ones are evaluated")
    parser.add_argument("--vocabulary", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="", help="write the metrics of each epoch here as JSON")
    args = parser.parse_args(argv)
    config = vars(args)
    with idist.Parallel(backend="gloo", nproc_per_node=args.nproc_per_node, master_addr="127.0.0.1",
                        master_port=free_port()) as parallel:  # fmt: skip
        parallel.run(run, config)


if __name__ == "__main__":
    main()
