"""Full-catalog evaluation of a two-tower recommender over 1,000,000 items.

Every item of the catalog is a candidate for every user, except the items the user already
interacted with in training: those are excluded (removed from the ranking, not pushed to its
end). No sampled negatives, so the metrics are the unbiased ones (Krichene and Rendle, "On
Sampled Metrics for Item Recommendation", KDD 2020).

The data are synthetic: every item has a category (up to 1,000, of 200 items at least) and a
popularity; every user likes two categories and clicks items of them in proportion to their
popularity; the last
``--held-out`` clicks of each user are the test set. The model is a small two-tower network: a
user embedding against an item tower built from the item's features (category embedding plus a
popularity direction), trained a few epochs with the BPR loss.

The evaluator's ``evaluate_step`` turns a batch of users into
``Retrieved(ids, relevant, scores)``: the top 100 of the whole catalog from
:func:`ignite_ranking.catalog.top_k` (training items excluded), and the user's held-out items.
A :class:`~ignite_ranking.RankingMetrics` group attached to the evaluator reads it.

Run:  python examples/full_catalog.py [--items 1000000] [--users 4000]
"""

from __future__ import annotations

import argparse
import time

import torch
from ignite.engine import Engine

from ignite_ranking import MRR, NDCG, RankingMetrics, Recall, Retrieved, catalog

K = 100


def make_data(users: int, items: int, clicks: int, held_out: int, seed: int):
    """``(category, log_popularity, train_ids, test_ids)``: item features and per-user clicks."""
    gen = torch.Generator().manual_seed(seed)
    categories = max(1, min(1000, items // 200))
    category = torch.arange(items) % categories
    popularity = torch.rand(items, generator=gen).pow(-1 / 1.5)  # Pareto(1.5): a long tail
    # Each user clicks `clicks` distinct items of two liked categories, by popularity.
    liked = torch.randint(0, categories, (users, 2), generator=gen)
    by_category = category.argsort()
    starts = torch.searchsorted(category[by_category], torch.arange(categories + 1))
    chosen = torch.empty(users, clicks, dtype=torch.int64)
    for user in range(users):
        pools = [by_category[starts[c] : starts[c + 1]] for c in liked[user].tolist()]
        pool = torch.cat(pools)
        weights = popularity[pool]
        chosen[user] = pool[torch.multinomial(weights, clicks, replacement=False, generator=gen)]
    return category, popularity.log(), chosen[:, held_out:], chosen[:, :held_out]


class TwoTower(torch.nn.Module):
    """User embedding · item tower(category, log popularity)."""

    def __init__(self, users: int, categories: int, dim: int):
        super().__init__()
        self.users = torch.nn.Embedding(users, dim)
        self.categories = torch.nn.Embedding(categories, dim)
        self.popularity = torch.nn.Parameter(torch.zeros(dim))
        for table in (self.users, self.categories):
            torch.nn.init.normal_(table.weight, std=0.1)

    def item_vectors(self, category: torch.Tensor, log_popularity: torch.Tensor) -> torch.Tensor:
        return self.categories(category) + log_popularity[:, None] * self.popularity


def train(model: TwoTower, category, log_popularity, train_ids, epochs: int, seed: int) -> None:
    """BPR: a clicked item should outscore a random item of the catalog."""
    gen = torch.Generator().manual_seed(seed)
    users = torch.arange(train_ids.shape[0]).repeat_interleave(train_ids.shape[1])
    positives = train_ids.reshape(-1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(epochs):
        order = torch.randperm(users.numel(), generator=gen)
        for batch in order.split(4096):
            user = model.users(users[batch])
            negatives = torch.randint(0, category.numel(), (batch.numel(),), generator=gen)
            pos = model.item_vectors(category[positives[batch]], log_popularity[positives[batch]])
            neg = model.item_vectors(category[negatives], log_popularity[negatives])
            margin = (user * (pos - neg)).sum(1)
            loss = torch.nn.functional.softplus(-margin).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def make_evaluator(model: TwoTower, item_vectors: torch.Tensor, train_ids, test_ids) -> Engine:
    """An evaluator over batches of user ids; each step ranks the full catalog for them."""

    @torch.no_grad()
    def evaluate_step(engine: Engine, users: torch.Tensor) -> Retrieved:
        scores, ids = catalog.top_k(model.users(users), item_vectors, K, exclude=train_ids[users])
        return Retrieved(ids, test_ids[users], scores)

    evaluator = Engine(evaluate_step)
    RankingMetrics(mrr=MRR([10, 100]), ndcg=NDCG([10, 100]), recall=Recall([10, 100])).attach(
        evaluator, "ranking"
    )
    return evaluator


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=4000)
    parser.add_argument("--clicks", type=int, default=25)
    parser.add_argument("--held-out", type=int, default=5)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)

    category, log_popularity, train_ids, test_ids = make_data(
        args.users, args.items, args.clicks, args.held_out, args.seed
    )
    model = TwoTower(args.users, int(category.max()) + 1, args.dim)
    results = {}
    for stage in ("untrained", "trained"):
        if stage == "trained":
            train(model, category, log_popularity, train_ids, args.epochs, args.seed)
        with torch.no_grad():
            item_vectors = model.item_vectors(category, log_popularity)  # the catalog, once
        evaluator = make_evaluator(model, item_vectors, train_ids, test_ids)
        started = time.perf_counter()
        state = evaluator.run(torch.arange(args.users).split(args.batch_size))
        seconds = time.perf_counter() - started
        results[stage] = {name: value for name, value in state.metrics.items() if "@" in name}
        print(
            f"{stage}: {args.users:,} users x {args.items:,} items ranked in {seconds:.1f} s; "
            + ", ".join(f"{name} {value:.4f}" for name, value in results[stage].items())
        )
    return results


if __name__ == "__main__":
    main()
