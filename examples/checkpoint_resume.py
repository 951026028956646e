"""Save a metric's state in the middle of an evaluation, load it into a fresh metric, go on.

A long evaluation (many queries, a preemptible machine) can be checkpointed: ``state_dict()``
returns the metric's sums and query count (copies, so later updates do not change them), it goes
through ``torch.save`` and ``torch.load(..., weights_only=True)`` (it holds only tensors, dicts,
lists, strings and numbers), and ``load_state_dict()`` puts it into a new metric built with the
same arguments. The resumed result is exactly, bit for bit, the result of an uninterrupted run
over the same batches, because the sums are exact fixed-point integers (int64 limbs): adding them
gives the same bits in any order and at any batching.

The same works for a whole :class:`~ignite_ranking.RankingMetrics` group, whose state is the
states of its members, and with Ignite's ``Checkpoint`` handler, which calls these methods.

Run:  python examples/checkpoint_resume.py [--batches 40] [--items 800]
"""

from __future__ import annotations

import argparse
import io

import torch

from ignite_ranking import MAP, MRR, NDCG, RankingMetrics


def make_metric() -> RankingMetrics:
    return RankingMetrics(mrr=MRR([1, 10]), ndcg=NDCG([10]), map=MAP([100]))


def batches(count: int, items: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        y = torch.randint(0, 3, (64, items), generator=g) * (torch.rand(64, items, generator=g) < 0.02)
        yield y + torch.randn(64, items, generator=g), y


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--items", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = list(batches(args.batches, args.items, args.seed))
    half = len(data) // 2

    # The uninterrupted run.
    whole = make_metric()
    for batch in data:
        whole.update(batch)
    expected = whole.compute()

    # The interrupted run: half the batches, then a checkpoint (to bytes here; a file in practice).
    first = make_metric()
    for batch in data[:half]:
        first.update(batch)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    print(f"checkpoint after {half} of {len(data)} batches: {buffer.tell()} bytes")
    del first

    # A fresh process would start here: build the metric the same way, load, continue.
    resumed = make_metric()
    buffer.seek(0)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    for batch in data[half:]:
        resumed.update(batch)
    result = resumed.compute()

    for name in expected:
        print(f"{name:>10}  uninterrupted {expected[name]:.12f}  resumed {result[name]:.12f}")
    same = result == expected
    print(f"resumed result equals the uninterrupted run exactly: {same}")
    if not same:
        raise SystemExit(1)
    return {"expected": expected, "resumed": result}


if __name__ == "__main__":
    main()
