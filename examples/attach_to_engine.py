"""Ranking metrics on an Ignite evaluator engine.

An evaluator's ``process_function`` returns ``(y_pred, y)`` for a batch of queries: scores of
every candidate item and their relevance labels. Metrics attached to the engine read that output
after every iteration and publish their values in ``engine.state.metrics`` when the run ends.

Two ways are shown: one metric attached on its own (its value is the list over its cutoffs), and
a :class:`~ignite_ranking.RankingMetrics` group, which ranks each batch once for all of its
members and publishes one scalar per metric and cutoff ("mrr@10", "ndcg@10", ...), the form
Ignite's loggers (TensorBoard, MLflow, ...) expect.

Run:  python examples/attach_to_engine.py [--queries 2000] [--items 500]
"""

from __future__ import annotations

import argparse

import torch
from ignite.engine import Engine

from ignite_ranking import MAP, MRR, NDCG, HitRate, RankingMetrics, Recall


def make_batches(queries: int, items: int, batch_size: int, seed: int) -> list[tuple[torch.Tensor, ...]]:
    """Synthetic queries: graded labels 0-3, and scores that are noisy copies of the labels."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (queries, items), generator=g) * (
        torch.rand(queries, items, generator=g) < 0.02
    )
    scores = labels + 2.0 * torch.randn(queries, items, generator=g)
    return list(zip(scores.split(batch_size), labels.split(batch_size), strict=True))


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    batches = make_batches(args.queries, args.items, args.batch_size, args.seed)

    # In a real evaluator this step runs the model; here the batch already holds the scores.
    def eval_step(
        engine: Engine, batch: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y_pred, y = batch
        return y_pred, y

    evaluator = Engine(eval_step)

    # One metric alone: engine.state.metrics["mrr"] is a list, one value per cutoff.
    MRR(top_k=[1, 10]).attach(evaluator, "mrr")

    # A group: ranks each batch once, publishes "map@10", "ndcg@5", ... as separate scalars.
    # NDCG uses the labels 0-3 as graded gains; the others count label >= 1 as relevant.
    group = RankingMetrics(
        hit_rate=HitRate([1, 10]),
        ndcg=NDCG([5, 10]),
        recall=Recall([10, 100]),
        map=MAP([10]),
    )
    group.attach(evaluator, "ranking")

    state = evaluator.run(batches)
    print(f"MRR@[1, 10] (one metric): {[round(v, 4) for v in state.metrics['mrr']]}")
    scalars = {name: value for name, value in state.metrics.items() if "@" in name}
    for name, value in scalars.items():
        print(f"{name:>14}  {value:.4f}")
    return {"mrr@1": state.metrics["mrr"][0], "mrr@10": state.metrics["mrr"][1], **scalars}


if __name__ == "__main__":
    main()
