"""One model evaluated two ways: on the full catalog, and on 99 sampled negatives per query.

The data are synthetic: users and items have hidden taste vectors; each query's held-out item is
drawn from a softmax over the catalog (a user's taste against every item, plus item popularity);
the model knows the tastes only up to noise. Each query is then evaluated

- on the full catalog: every item scored, the held-out item's rank among all of them, read by
  MRR, HitRate, NDCG and AUC (exact, the recommended protocol);
- on sampled negatives: the held-out item against ``--negatives`` items drawn uniformly from the
  rest of the catalog (:func:`ignite_ranking.sampled.sample_negatives`), read by
  :class:`ignite_ranking.sampled.SampledMetrics` with every estimator: the uncorrected sampled
  metric and the corrections of Krichene and Rendle (rank, CLS, BV) and Jin et al. (MLE).

It prints the values side by side and, with ``--plot PATH``, draws them.

Run:  python examples/sampled_vs_full.py [--items 20000] [--queries 3000] [--negatives 99] \
          [--plot sampled_vs_full.png]
"""

from __future__ import annotations

import argparse

import torch

from ignite_ranking import AUC, MRR, NDCG, HitRate, sampled

TOP_K = [1, 10, 20]
SHOWN = ["mrr@10", "hit_rate@10", "ndcg@10", "hit_rate@20", "auc"]
ESTIMATORS = ["sampled", "rank", "cls", "bv", "mle"]


def make_data(queries: int, items: int, seed: int):
    """``(model_scores_of, positives)``: a function scoring a slice of queries against every item,
    and each query's held-out item."""
    gen = torch.Generator().manual_seed(seed)
    dim = 16
    users = torch.randn(queries, dim, generator=gen)
    tastes = torch.randn(items, dim, generator=gen)
    popularity = 1.5 * torch.randn(items, generator=gen)
    positives = torch.empty(queries, dtype=torch.int64)
    for start in range(0, queries, 256):
        logits = users[start : start + 256] @ tastes.T + popularity
        positives[start : start + 256] = torch.multinomial(logits.softmax(dim=1), 1, generator=gen)[:, 0]
    noisy_users = users + 0.8 * torch.randn(queries, dim, generator=gen)
    noisy_popularity = popularity + 0.5 * torch.randn(items, generator=gen)

    def scores_of(rows: slice, columns: torch.Tensor | None = None) -> torch.Tensor:
        if columns is None:
            return noisy_users[rows] @ tastes.T + noisy_popularity
        return (noisy_users[rows, None, :] * tastes[columns]).sum(-1) + noisy_popularity[columns]

    return scores_of, positives


def evaluate_full(scores_of, positives: torch.Tensor, items: int) -> dict[str, float]:
    """The exact full-catalog metrics, from every item's score, a few queries at a time."""
    metrics = {"mrr": MRR(TOP_K), "hit_rate": HitRate(TOP_K), "ndcg": NDCG(TOP_K), "auc": AUC()}
    for start in range(0, positives.numel(), 256):
        rows = slice(start, start + 256)
        y_pred = scores_of(rows)
        y = torch.zeros_like(y_pred)
        y[torch.arange(y.shape[0]), positives[rows]] = 1
        for metric in metrics.values():
            metric.update((y_pred, y))
    values = {"auc": metrics["auc"].compute()}
    for name in ("mrr", "hit_rate", "ndcg"):
        values.update({f"{name}@{k}": v for k, v in zip(TOP_K, metrics[name].compute(), strict=True)})
    return values


def evaluate_sampled(scores_of, positives, items: int, negatives: int, seed: int) -> dict[str, dict]:
    """The held-out item against ``negatives`` uniform negatives; every estimator's values."""
    gen = torch.Generator().manual_seed(seed + 1)
    metric = sampled.SampledMetrics(items, negatives, TOP_K)
    for start in range(0, positives.numel(), 256):
        rows = slice(start, start + 256)
        drawn = sampled.sample_negatives(positives[rows], items, negatives, generator=gen)
        candidates = torch.cat([positives[rows, None], drawn], dim=1)  # the held-out item first
        y = torch.zeros(candidates.shape, dtype=torch.float32)
        y[:, 0] = 1
        metric.update((scores_of(rows, candidates), y))
    return {estimator: metric.compute_with(estimator) for estimator in ESTIMATORS}


def plot(full: dict, estimates: dict, path: str, negatives: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["full", *ESTIMATORS]
    fig, axes = plt.subplots(1, len(SHOWN), figsize=(3.2 * len(SHOWN), 3.6))
    for ax, key in zip(axes, SHOWN, strict=True):
        values = [full[key], *(estimates[e][key] for e in ESTIMATORS)]
        colors = ["black", "tab:red", *["tab:blue"] * (len(ESTIMATORS) - 1)]
        ax.bar(range(len(names)), values, color=colors)
        ax.axhline(full[key], color="black", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set_title(key)
    fig.suptitle(f"full catalog vs {negatives} sampled negatives (red: uncorrected, blue: corrected)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=3_000)
    parser.add_argument("--negatives", type=int, default=99)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", help="write the bar chart to this path (PNG)")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    scores_of, positives = make_data(args.queries, args.items, args.seed)
    full = evaluate_full(scores_of, positives, args.items)
    estimates = evaluate_sampled(scores_of, positives, args.items, args.negatives, args.seed)
    header = f"{'metric':<12} {'full':>8} " + " ".join(f"{e:>8}" for e in ESTIMATORS)
    print(f"{args.queries} queries, {args.items} items, {args.negatives} sampled negatives per query\n")
    print(header)
    print("-" * len(header))
    for key in SHOWN:
        row = " ".join(f"{estimates[e][key]:>8.4f}" for e in ESTIMATORS)
        print(f"{key:<12} {full[key]:>8.4f} {row}")
    if args.plot:
        plot(full, estimates, args.plot, args.negatives)
        print(f"\nplot written to {args.plot}")
    return {"full": full, "estimates": estimates}


if __name__ == "__main__":
    main()
