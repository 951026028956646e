"""Cost of each tie policy: the six-metric group under every ``ties`` value vs ``"first"``.

One process, the same tensors, timed side by side (see ``common.py``). The issue's target is that
no policy costs more than 2x ``"first"`` on continuous scores; the quantized variant (a tie across
the cutoff in most rows) is printed too, where ``"average"`` reads whole tied blocks and
``"optimistic"``/``"pessimistic"`` sort the rows whose tie crosses the cutoff.

Usage::

    python benchmarks/bench_ties.py            # 256 x 100,000 and 512 x 10,000
    python benchmarks/bench_ties.py --quick    # tiny sizes, one repeat (smoke test)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import TOP_K, machine_line, make_batch, markdown_table, time_side_by_side, verdict

from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall
from ignite_ranking.kernels import TIE_POLICIES

FULL_SIZES = [(256, 100_000), (512, 10_000)]
QUICK_SIZES = [(8, 2_000)]


def family(ties: str) -> RankingMetrics:
    return RankingMetrics(
        mrr=MRR(TOP_K, ties=ties),
        hit_rate=HitRate(TOP_K, ties=ties),
        ndcg=NDCG(TOP_K, ties=ties),
        precision=Precision(TOP_K, ties=ties),
        recall=Recall(TOP_K, ties=ties),
        map=MAP(TOP_K, ties=ties),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 5)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 5)
    print(machine_line())
    rows = []
    worst_continuous = 0.0
    for batch, items in QUICK_SIZES if args.quick else FULL_SIZES:
        for kind in ("continuous", "quantized"):
            y_pred, y = make_batch(batch, items, kind)
            groups = {ties: family(ties) for ties in TIE_POLICIES}
            batch_data = (y_pred, y)
            cases = {ties: (lambda g=g, d=batch_data: g.update(d)) for ties, g in groups.items()}
            timings = time_side_by_side(cases, repeats)
            first = timings["first"].median
            for ties, timing in timings.items():
                ratio = timing.median / first
                if kind == "continuous":
                    worst_continuous = max(worst_continuous, ratio)
                rows.append([f"{batch}x{items:,}", kind, ties, f"{timing.median:.1f}", f"{ratio:.2f}x"])
    print(markdown_table(["size", "scores", "ties", "median ms", "vs first"], rows))
    print(
        f"\nworst policy on continuous scores: {worst_continuous:.2f}x 'first' (target <= 2x) "
        f"{verdict(worst_continuous <= 2.0)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
