"""Ranking metrics in a plain PyTorch loop, without an Ignite Engine.

An ignite metric is a small accumulator: ``reset()`` clears it, ``update((y_pred, y))`` adds a
batch, ``compute()`` returns the mean over every query seen so far. The state is a few numbers per
cutoff, so memory does not grow with the number of batches. The per-query values are available
from :mod:`ignite_ranking.functional` for inspection of single queries.

Run:  python examples/plain_loop.py [--queries 3000] [--items 1000]
"""

from __future__ import annotations

import argparse

import torch

from ignite_ranking import MRR, NDCG, Precision, RPrecision
from ignite_ranking.functional import reciprocal_rank


def main(argv: list[str] | None = None) -> dict[str, list[float] | float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    g = torch.Generator().manual_seed(args.seed)

    # A "model": a fixed random projection of query and item features, whose scores agree a
    # little with the hidden relevance.
    item_features = torch.randn(args.items, 16, generator=g)

    metrics = {
        "mrr": MRR(top_k=[1, 10, 100]),
        "ndcg": NDCG(top_k=[10], gain_function="linear_rank"),
        "precision": Precision(top_k=[5]),
        "r_precision": RPrecision(),
    }
    for metric in metrics.values():
        metric.reset()

    with torch.no_grad():
        for start in range(0, args.queries, args.batch_size):
            n = min(args.batch_size, args.queries - start)
            queries = torch.randn(n, 16, generator=g)
            affinity = queries @ item_features.T
            # Relevant: the 1% best items for the query under the hidden affinity.
            y = (affinity >= affinity.quantile(0.99, dim=1, keepdim=True)).to(torch.int64)
            y_pred = affinity + 3.0 * torch.randn(n, args.items, generator=g)  # a noisy model
            for metric in metrics.values():
                metric.update((y_pred, y))
            if start == 0:
                first = reciprocal_rank(y_pred[:3], y[:3], top_k=100)[:, 0].tolist()
                print(f"RR@100 of the first three queries: {[round(v, 4) for v in first]}")

    results = {name: metric.compute() for name, metric in metrics.items()}
    for name, value in results.items():
        shown = [round(v, 4) for v in value] if isinstance(value, list) else round(value, 4)
        print(f"{name:>12}: {shown}")
    return results


if __name__ == "__main__":
    main()
