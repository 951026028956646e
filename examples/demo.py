"""Train a small recommender with PyTorch-Ignite and watch its ranking metrics rise.

The data is made here, with a structure the model can find: every user and every item has a
hidden taste vector, items have a popularity, and each user "clicks" items drawn from a softmax
over taste match plus popularity. A few clicks per user are held out for evaluation. The model
is matrix factorization trained with the BPR loss (a clicked item should score above a random
one). After every epoch an evaluator engine scores all items for every user, masks the items the
user clicked in training with -inf (they are not recommendations), and reports MRR@k, HitRate@k,
NDCG@k and Recall@k through one :class:`ignite_ranking.RankingMetrics`, which ranks each batch
once for all of them, with Novelty@10 (the mean self-information of the recommended items, from
the training clicks) beside them: accuracy and novelty pull in different directions.

At the end it prints a table of the final metrics next to two baselines (the untrained model and
"recommend the most popular items"), reads MRR as a typical rank, and writes a plot of every
metric over the epochs plus the numbers as JSON.

Run:  python examples/demo.py            (about a minute on a laptop CPU)
      python examples/demo.py --users 300 --items 200 --epochs 3   (a few seconds)
      python examples/demo.py --beyond-plot docs/_static/accuracy_novelty.png
            (also plots NDCG@10 against Novelty@10 over the epochs)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
from ignite.engine import Engine, Events
from ignite.handlers import ProgressBar
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from ignite_ranking import MRR, NDCG, HitRate, Novelty, RankingMetrics, Recall

# The metrics the evaluator reports, as (group member name, metric). The group publishes
# "mrr@1", "mrr@5", ..., "recall@50", "novelty@10" in engine.state.metrics.
MRR_CUTOFFS = [1, 5, 10, 100]


def make_metrics(item_popularity: torch.Tensor) -> RankingMetrics:
    # confidence=0.95: each value also gets its Student t interval, published as "mrr@10_low" and
    # "mrr@10_high" (the users are a sample; the interval says how far the mean could move).
    return RankingMetrics(
        mrr=MRR(MRR_CUTOFFS),
        hit_rate=HitRate([1, 10]),
        ndcg=NDCG([10]),
        recall=Recall([10, 50]),
        novelty=Novelty([10], item_popularity),
        confidence=0.95,
    )


# --------------------------------------------------------------------------------------------
# Data with planted structure
# --------------------------------------------------------------------------------------------


class Interactions:
    """Synthetic implicit feedback: who clicked what, split into training and held-out clicks.

    Attributes:
        train: ``(num_users, num_items)`` bool, the clicks the model learns from.
        test: ``(num_users, num_items)`` bool, the held-out clicks it should rank high.
        train_pairs: ``(num_clicks, 2)`` int64 ``(user, item)`` rows of ``train``.
    """

    def __init__(self, num_users: int, num_items: int, clicks_per_user: int, held_out: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        dim = 8
        users = torch.randn(num_users, dim, generator=g)
        items = torch.randn(num_items, dim, generator=g)
        popularity = 0.5 * torch.randn(num_items, generator=g)
        # Taste match dominates; popularity alone is a weak but non-trivial baseline.
        affinity = 2.0 * users @ items.T / math.sqrt(dim) + popularity
        clicked = torch.multinomial(torch.softmax(affinity, dim=1), clicks_per_user, generator=g)
        # The first `held_out` draws of each user (a random subset, as draws are exchangeable)
        # are kept for evaluation.
        rows = torch.arange(num_users)[:, None]
        self.test = torch.zeros(num_users, num_items, dtype=torch.bool)
        self.test[rows, clicked[:, :held_out]] = True
        self.train = torch.zeros(num_users, num_items, dtype=torch.bool)
        self.train[rows, clicked[:, held_out:]] = True
        self.train_pairs = self.train.nonzero()
        self.num_users, self.num_items = num_users, num_items


# --------------------------------------------------------------------------------------------
# Model and engines
# --------------------------------------------------------------------------------------------


class MatrixFactorization(nn.Module):
    """score(u, i) = <user_u, item_i> + bias_i."""

    def __init__(self, num_users: int, num_items: int, dim: int):
        super().__init__()
        self.users = nn.Embedding(num_users, dim)
        self.items = nn.Embedding(num_items, dim)
        self.bias = nn.Embedding(num_items, 1)
        for table in (self.users, self.items):
            nn.init.normal_(table.weight, std=0.1)
        nn.init.zeros_(self.bias.weight)

    def pair_scores(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        return (self.users(users) * self.items(items)).sum(-1) + self.bias(items).squeeze(-1)

    def all_scores(self, users: torch.Tensor) -> torch.Tensor:
        """``(len(users), num_items)`` scores of every item for each user."""
        return self.users(users) @ self.items.weight.T + self.bias.weight.T


def make_trainer(model: MatrixFactorization, data: Interactions, lr: float, l2: float, seed: int) -> Engine:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    negatives = torch.Generator().manual_seed(seed + 1)

    def train_step(engine: Engine, batch: list[torch.Tensor]) -> float:
        users, positives = batch
        # BPR: a clicked item should outscore an item drawn at random.
        sampled = torch.randint(0, data.num_items, positives.shape, generator=negatives)
        model.train()
        margin = model.pair_scores(users, positives) - model.pair_scores(users, sampled)
        loss = -nn.functional.logsigmoid(margin).mean()
        # A small L2 penalty on the rows used in this step keeps the scores from overfitting.
        norms = sum(
            t.pow(2).sum() for t in (model.users(users), model.items(positives), model.items(sampled))
        )
        loss = loss + l2 * norms / len(users)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    return Engine(train_step)


def make_evaluator(score_users, data: Interactions) -> Engine:
    """An engine whose output is ``(y_pred, y)`` for a batch of user ids.

    ``score_users`` maps user ids to ``(batch, num_items)`` scores. Items a user clicked in
    training get ``-inf``: they rank last, so they can never take a place in the top k.
    """

    @torch.no_grad()
    def eval_step(engine: Engine, batch: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        (users,) = batch
        scores = score_users(users).masked_fill(data.train[users], -math.inf)
        return scores, data.test[users]

    evaluator = Engine(eval_step)
    # Novelty reads each item's share of the training clicks; one click more for every item keeps
    # the items nobody clicked (their share would be 0, their novelty infinite).
    make_metrics(data.train.sum(dim=0).to(torch.float64) + 1).attach(evaluator, "ranking")
    return evaluator


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def format_table(columns: dict[str, dict[str, float]]) -> str:
    """A plain-text table: one row per metric, one column per run."""
    names = list(next(iter(columns.values())))
    header = ["metric", *columns]
    rows = [[name, *(f"{col[name]:.4f}" for col in columns.values())] for name in names]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded)

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def interpret_mrr(mrr: float, k: int) -> str:
    if mrr <= 0:
        return f"MRR@{k} = 0: no user had a held-out item in the top {k}."
    return (
        f"MRR@{k} = {mrr:.4f}, so 1/MRR = {1 / mrr:.1f}: the first relevant result is typically around "
        f"rank {1 / mrr:.0f} (MRR is the inverse of the harmonic mean of the first relevant rank; "
        f"a user with none in the top {k} counts as rank infinity)."
    )


def plot_history(history: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families: dict[str, list[str]] = {}
    for name in history[0]:
        families.setdefault(name.split("@")[0], []).append(name)
    epochs = list(range(len(history)))
    cols = min(2, len(families))
    rows = math.ceil(len(families) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(families) :]:
        ax.set_visible(False)
    for ax, (family, names) in zip(axes.flat, families.items(), strict=False):
        for name in names:
            ax.plot(epochs, [h[name] for h in history], marker="o", label=name)
        ax.set_title(family)
        ax.set_xlabel("epoch (0 = before training)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle("Held-out ranking metrics over training")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_accuracy_novelty(history: list[dict[str, float]], popularity: dict[str, float], path: Path) -> None:
    """NDCG@10 and Novelty@10 over the epochs, on two axes, with the popularity baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = list(range(len(history)))
    fig, accuracy = plt.subplots(figsize=(6.4, 4.6))
    novelty = accuracy.twinx()
    for ax, name, color, label in (
        (accuracy, "ndcg@10", "tab:blue", "NDCG@10"),
        (novelty, "novelty@10", "tab:orange", "Novelty@10 (bits)"),
    ):
        ax.plot(epochs, [h[name] for h in history], marker="o", color=color, label=label)
        ax.axhline(popularity[name], color=color, linestyle="--", alpha=0.6, label=f"{label}, most popular")
        ax.set_ylabel(label, color=color)
        ax.tick_params(axis="y", labelcolor=color)
    accuracy.set_xlabel("epoch (0 = before training)")
    accuracy.set_xticks(epochs)
    accuracy.grid(alpha=0.3)
    lines = accuracy.get_legend_handles_labels()[0] + novelty.get_legend_handles_labels()[0]
    accuracy.legend(
        lines,
        [line.get_label() for line in lines],
        fontsize="small",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncol=2,
    )
    fig.suptitle("Accuracy and novelty of the top 10 over training")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=6000, help="number of users (default 6000)")
    parser.add_argument("--items", type=int, default=3000, help="number of items (default 3000)")
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the model (default 0)")
    parser.add_argument("--clicks", type=int, default=30, help="clicks per user (default 30)")
    parser.add_argument("--held-out", type=int, default=5, help="clicks per user kept for evaluation")
    parser.add_argument("--dim", type=int, default=16, help="embedding size of the model (default 16)")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--batch-size", type=int, default=1024, help="training pairs per step")
    parser.add_argument("--l2", type=float, default=1e-2, help="L2 penalty on the embeddings used in a step")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (default 1: the ops are too small to split)"
    )
    parser.add_argument("--out", type=Path, default=Path("demo-output"), help="output folder")
    parser.add_argument(
        "--beyond-plot", type=Path, default=None, help="also write a plot of NDCG@10 against Novelty@10 here"
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bars (shown only when stderr is a terminal)"
    )
    args = parser.parse_args(argv)
    if not 0 < args.held_out < args.clicks <= args.items:
        parser.error("need 0 < --held-out < --clicks <= --items")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.perf_counter()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    data = Interactions(args.users, args.items, args.clicks, args.held_out, args.seed)
    model = MatrixFactorization(args.users, args.items, args.dim)
    print(
        f"{args.users} users, {args.items} items, {len(data.train_pairs)} training clicks, "
        f"{int(data.test.sum())} held-out clicks; training for {args.epochs} epochs."
    )

    loader_rng = torch.Generator().manual_seed(args.seed + 2)
    train_loader = DataLoader(
        TensorDataset(data.train_pairs[:, 0], data.train_pairs[:, 1]),
        batch_size=args.batch_size,
        shuffle=True,
        generator=loader_rng,
    )
    eval_loader = DataLoader(TensorDataset(torch.arange(args.users)), batch_size=512)

    trainer = make_trainer(model, data, args.lr, args.l2, args.seed)

    def model_scores(users: torch.Tensor) -> torch.Tensor:
        model.eval()
        return model.all_scores(users)

    evaluator = make_evaluator(model_scores, data)
    if not args.no_progress and sys.stderr.isatty():
        # Bars redraw with carriage returns: on a file or a pipe they would be thousands of lines.
        ProgressBar(persist=False).attach(trainer, output_transform=lambda loss: {"loss": loss})
        ProgressBar(persist=False, desc="evaluate").attach(evaluator)

    history: list[dict[str, float]] = []
    last_bounds: dict[str, float] = {}

    def evaluate(engine: Engine) -> None:
        published = evaluator.run(eval_loader).metrics
        metrics = published["ranking"]
        history.append(dict(metrics))
        last_bounds.update(
            (key, value) for key, value in published.items() if key.endswith(("_low", "_high"))
        )
        shown = ["mrr@10", "hit_rate@10", "ndcg@10", "recall@10", "novelty@10"]
        message = f"epoch {engine.state.epoch:>2}: " + "  ".join(f"{m} {metrics[m]:.4f}" for m in shown)
        print(message, flush=True)

    trainer.add_event_handler(Events.STARTED, evaluate)  # epoch 0: the untrained model
    trainer.add_event_handler(Events.EPOCH_COMPLETED, evaluate)
    trainer.run(train_loader, max_epochs=args.epochs)

    # Baseline: every user gets the items most clicked in training.
    counts = data.train.sum(dim=0).to(torch.float32)
    popular = make_evaluator(lambda users: counts.expand(len(users), -1), data)
    popularity = dict(popular.run(eval_loader).metrics["ranking"])

    args.out.mkdir(parents=True, exist_ok=True)
    plot_path, json_path = args.out / "metrics.png", args.out / "metrics.json"
    plot_history(history, plot_path)
    json_path.write_text(
        json.dumps({"history": history, "popularity": popularity, "args": vars(args)}, indent=2, default=str)
    )

    print()
    print(format_table({"untrained": history[0], "popularity": popularity, "trained": history[-1]}))
    print()
    print(interpret_mrr(history[-1]["mrr@100"], 100))
    half_width = (last_bounds["mrr@10_high"] - last_bounds["mrr@10_low"]) / 2
    print(
        f"MRR@10 = {history[-1]['mrr@10']:.4f} +- {half_width:.4f} (95% Student t interval over the "
        "evaluated users)"
    )
    print(f"Plot of every metric over the epochs: {plot_path}")
    if args.beyond_plot is not None:
        args.beyond_plot.parent.mkdir(parents=True, exist_ok=True)
        plot_accuracy_novelty(history, popularity, args.beyond_plot)
        print(f"Plot of accuracy and novelty over the epochs: {args.beyond_plot}")
    print(f"Numbers as JSON: {json_path}")
    print(f"Done in {time.perf_counter() - started:.0f} s.")
    return {"history": history, "popularity": popularity}


if __name__ == "__main__":
    main()
