"""Worst-case inputs: ties everywhere, many relevant items, deep or many cutoffs.

Each case is one ``update`` of a metric on an adversarial batch, timed side by side (see
``common.py``) with

- ``argsort``: the straightforward exact kernel, a full stable descending ``torch.argsort`` of
  every row and the labels gathered in that order (what any exact method can always fall back on);
- ``topk``: ``torch.topk`` of the metric's depth alone (a speed floor, not a correct method).

The target is ``ours / argsort <= 1.1`` for every case, and temporaries (resident high-water
mark beyond the inputs, one update in a fresh process, see ``common.py``) of at most 64 MiB at
256 x 100,000 unless the output itself is larger (a depth that is a large fraction of the row).

Usage::

    python benchmarks/bench_worst.py                  # every case, with memory (~10 min on 2 cores)
    python benchmarks/bench_worst.py --quick          # tiny sizes, one repeat, no memory runs
    python benchmarks/bench_worst.py --only all-tied  # cases whose name contains the text
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mrr import argsort_reciprocal_rank
from common import (
    TOP_K,
    machine_line,
    markdown_table,
    measure_in_subprocess,
    report_memory_case,
    time_side_by_side,
    verdict,
)

from ignite_ranking import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall, RPrecision

FULL = (256, 100_000)
QUICK = (8, 2_000)
METHODS = ("ours", "argsort", "topk")
TARGET_RATIO = 1.1
TARGET_MIB = 64


# --------------------------------------------------------------------------------------------- data


def sparse_labels(batch: int, items: int, per_row: int, gen: torch.Generator) -> torch.Tensor:
    """int64 grades 1-3 on ``per_row`` random items of each row, 0 elsewhere."""
    y = torch.zeros(batch, items, dtype=torch.int64)
    cols = torch.rand(batch, items, generator=gen).argsort(dim=1)[:, :per_row]
    y.scatter_(1, cols, torch.randint(1, 4, (batch, per_row), generator=gen))
    return y


def continuous_scores(batch: int, items: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(batch, items, generator=gen).round(decimals=4)


def eighths(batch, items, gen):
    """Scores in multiples of 1/8: a tie of a few dozen items across the cutoff in every row."""
    y_pred = (torch.randn(batch, items, generator=gen) * 8).round() / 8
    return y_pred, sparse_labels(batch, items, min(5, items), gen)


def all_tied(batch, items, gen):
    return torch.zeros(batch, items), sparse_labels(batch, items, min(5, items), gen)


def half_tied(batch, items, gen):
    """Every other row all tied (so a tie crosses the cutoff there), the others continuous."""
    y_pred = continuous_scores(batch, items, gen)
    y_pred[::2] = 0.0
    return y_pred, sparse_labels(batch, items, min(5, items), gen)


def many_relevant(batch, items, gen):
    return continuous_scores(batch, items, gen), sparse_labels(batch, items, min(500, items // 4), gen)


def half_relevant(batch, items, gen):
    y = (torch.rand(batch, items, generator=gen) < 0.5).to(torch.int64)
    return continuous_scores(batch, items, gen), y


def quantized_half_relevant(batch, items, gen):
    y = (torch.rand(batch, items, generator=gen) < 0.5).to(torch.int64)
    return (continuous_scores(batch, items, gen) * 4).round() / 4, y


def half_relevant_float_labels(batch, items, gen):
    y_pred, y = half_relevant(batch, items, gen)
    return y_pred, y.to(torch.float32)


def half_relevant_grades(batch, items, gen):
    """Half the items relevant, of grades 1-9 (ten label values)."""
    y_pred, y = half_relevant(batch, items, gen)
    return y_pred, y * torch.randint(1, 10, y.shape, generator=gen)


def half_relevant_half_grades(batch, items, gen):
    """Float grades 0.5, 1.0, 1.5 on the relevant half (relevant from 1.0 up: two grades)."""
    y_pred, y = half_relevant(batch, items, gen)
    return y_pred, y * torch.randint(1, 4, y.shape, generator=gen) * 0.5


def half_relevant_continuous_grades(batch, items, gen):
    """Continuous float grades in [1, 4) on the relevant half (every label distinct)."""
    y_pred, y = half_relevant(batch, items, gen)
    return y_pred, y * (1.0 + 3.0 * torch.rand(y.shape, generator=gen))


def rising(batch, items, gen):
    """Scores that rise along each row (as if sorted ascending), distinct."""
    y_pred = torch.arange(items, dtype=torch.float32).expand(batch, items).contiguous()
    return y_pred, sparse_labels(batch, items, min(5, items), gen)


def continuous(batch, items, gen):
    return continuous_scores(batch, items, gen), sparse_labels(batch, items, min(5, items), gen)


# -------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One adversarial update: its data, its metric, and the depth ``topk`` is timed at."""

    name: str
    data: Callable
    metric: Callable[[], object]
    depth: Callable[[torch.Tensor, torch.Tensor], int]
    size: tuple[int, int] | None = None  # None: FULL (QUICK with --quick)
    # Cutoffs at which ``argsort`` also computes RR@k and sums it over the batch, where the
    # metric's output (one value per cutoff) is itself a large part of the work.
    argsort_rr: tuple[int, ...] = ()
    # Labels whose ideal order needs a sort of its own (NDCG of continuous grades at depth):
    # ``argsort`` then also sorts each row's labels, as any exact kernel must.
    argsort_labels: bool = False

    def shape(self, quick: bool) -> tuple[int, int]:
        if quick:
            return (QUICK[0], min(QUICK[1], self.size[1])) if self.size else QUICK
        return self.size or FULL


def fixed(k: int) -> Callable:
    return lambda y_pred, y: min(k, y_pred.shape[1])


def largest_r(y_pred, y):
    return max(1, int((y >= 1).sum(dim=1).max()))


def trio(top_k, ties):
    return lambda: RankingMetrics(
        mrr=MRR(top_k, ties=ties), ndcg=NDCG(top_k, ties=ties), recall=Recall(top_k, ties=ties)
    )


def many_cutoffs_group(top_k: list[int]) -> RankingMetrics:
    return RankingMetrics(
        mrr=MRR(top_k),
        hit=HitRate(top_k),
        ndcg=NDCG(top_k),
        precision=Precision(top_k),
        recall=Recall(top_k),
        map=MAP(top_k),
    )


def deep_trio(what: str, data: Callable, ties: str, suffix: str = "", **options) -> Case:
    """MRR+NDCG+Recall at a depth of half the row, half the items relevant."""
    name = f"MRR+NDCG+Recall@50,000, 50% relevant, {what}{ties}{suffix}"
    return Case(name, data, trio([50_000], ties), fixed(50_000), **options)


CASES = [
    *(
        Case(f"all tied, top_k=[100], {ties}", all_tied, trio([100], ties), fixed(100))
        for ties in ("first", "last", "optimistic", "pessimistic", "average")
    ),
    Case("half the rows tied at the cutoff, first", half_tied, lambda: MRR(TOP_K), fixed(100)),
    Case("scores in multiples of 1/8, every row tied at the cutoff", eighths, lambda: MRR(TOP_K), fixed(100)),
    Case("half the rows tied at the cutoff, average", half_tied, trio(TOP_K, "average"), fixed(100)),
    Case(
        "NDCG+Recall, 500 relevant a row",
        many_relevant,
        lambda: RankingMetrics(ndcg=NDCG(TOP_K), recall=Recall(TOP_K)),
        fixed(100),
    ),
    Case("RPrecision, 50% relevant, first", half_relevant, lambda: RPrecision(), largest_r),
    Case("RPrecision, 50% relevant, average", half_relevant, lambda: RPrecision(ties="average"), largest_r),
    Case(
        "RPrecision, 50% relevant, optimistic",
        half_relevant,
        lambda: RPrecision(ties="optimistic"),
        largest_r,
    ),
    Case(
        "RPrecision, 50% relevant, quantized scores, average",
        quantized_half_relevant,
        lambda: RPrecision(ties="average"),
        largest_r,
    ),
    Case(
        "64x1,000, MRR top_k=1..100,000",
        continuous,
        lambda: MRR(list(range(1, 100_001))),
        fixed(1_000),
        size=(64, 1_000),
        argsort_rr=tuple(range(1, 100_001)),
    ),
    *(
        Case(
            f"64x1,000, {what} top_k=1..100,000",
            continuous,
            metric,
            fixed(1_000),
            size=(64, 1_000),
            argsort_rr=tuple(range(1, 100_001)),
        )
        for what, metric in (
            ("NDCG", lambda: NDCG(list(range(1, 100_001)))),
            ("Precision", lambda: Precision(list(range(1, 100_001)))),
            ("MAP, average", lambda: MAP(list(range(1, 100_001)), ties="average")),
            ("group of six", lambda: many_cutoffs_group(list(range(1, 100_001)))),
        )
    ),
    *(deep_trio("", half_relevant, ties) for ties in ("first", "optimistic", "average")),
    *(deep_trio("quantized scores, ", quantized_half_relevant, ties) for ties in ("average", "optimistic")),
    deep_trio("float labels, ", half_relevant_float_labels, "first"),
    deep_trio("grades 1-9, ", half_relevant_grades, "average"),
    deep_trio("grades 0.5-1.5, ", half_relevant_half_grades, "average"),
    deep_trio(
        "continuous grades, ",
        half_relevant_continuous_grades,
        "first",
        suffix=" (argsort: scores and labels)",
        argsort_labels=True,
    ),
    Case(
        "MAP+Precision+HitRate@50,000, 50% relevant, average",
        half_relevant,
        lambda: RankingMetrics(
            map=MAP([50_000], ties="average"),
            precision=Precision([50_000], ties="average"),
            hit=HitRate([50_000], ties="average"),
        ),
        fixed(50_000),
    ),
    Case("scores rising along each row, MRR", rising, lambda: MRR(TOP_K), fixed(100)),
    Case("top_k=[99,999] of 100,000, first", continuous, lambda: MRR([99_999]), fixed(99_999)),
]


def make_case(case: Case, method: str, y_pred: torch.Tensor, y: torch.Tensor) -> Callable[[], object]:
    if method == "ours":
        metric = case.metric()
        return lambda: metric.update((y_pred, y))
    if method == "argsort" and case.argsort_rr:
        top_k = list(case.argsort_rr)
        return lambda: argsort_reciprocal_rank(y_pred, y, top_k).sum(dim=0)
    if method == "argsort":

        def argsort():
            order = torch.argsort(y_pred, dim=1, descending=True, stable=True)
            if case.argsort_labels:
                y.sort(dim=1, descending=True)
            return y.gather(1, order) >= 1

        return argsort
    if method == "topk":
        depth = case.depth(y_pred, y)
        return lambda: torch.topk(y_pred, depth, dim=1)
    raise ValueError(f"unknown method {method!r}")


def build(case: Case, quick: bool) -> tuple[torch.Tensor, torch.Tensor]:
    batch, items = case.shape(quick)
    return case.data(batch, items, torch.Generator().manual_seed(batch + items))


def memory_case(argv: list[str]) -> int:
    """Subprocess side: ``--memory-case CASE_INDEX METHOD QUICK``."""
    case, method, quick = CASES[int(argv[0])], argv[1], argv[2] == "1"
    if len(argv) > 3:
        torch.set_num_threads(int(argv[3]))
    y_pred, y = build(case, quick)
    tiny = case.data(4, min(500, y_pred.shape[1]), torch.Generator().manual_seed(1))
    report_memory_case(make_case(case, method, y_pred, y), warm=make_case(case, method, *tiny))
    return 0


def run(cases, quick: bool, repeats: int, warmup: int, memory: bool) -> list[dict]:
    threads = str(torch.get_num_threads())
    script = str(Path(__file__).resolve())
    results = []
    for case in cases:
        y_pred, y = build(case, quick)
        timings = time_side_by_side(
            {m: make_case(case, m, y_pred, y) for m in METHODS}, repeats=repeats, warmup=warmup
        )
        peaks = {}
        if memory:
            args = [str(CASES.index(case)), "1" if quick else "0", threads]
            for method in METHODS:
                peaks[method], _ = measure_in_subprocess(script, [args[0], method, *args[1:]])
        results.append({"case": case, "shape": tuple(y_pred.shape), "timings": timings, "peaks": peaks})
        print(
            f"  {case.name}: "
            + "  ".join(f"{m} {t.median:.1f} ms" for m, t in timings.items())
            + (f"; MiB {', '.join(f'{m} {p:.0f}' for m, p in peaks.items())}" if peaks else ""),
            flush=True,
        )
    return results


def table(results: list[dict]) -> str:
    header = ["case", "batch x items", "ours ms", "argsort ms", "topk ms", "ours/argsort"]
    header.append("MiB ours / argsort / topk")
    rows = []
    for r in results:
        t, p = r["timings"], r["peaks"]
        mib = " / ".join(f"{p[m]:.0f}" for m in METHODS) if p else "-"
        ratio = t["ours"].median / t["argsort"].median
        rows.append(
            [
                r["case"].name,
                f"{r['shape'][0]}x{r['shape'][1]:,}",
                t["ours"].median,
                t["argsort"].median,
                t["topk"].median,
                f"{ratio:.2f}x",
                mib,
            ]
        )
    return markdown_table(header, rows)


def targets(results: list[dict], quick: bool) -> list[str]:
    if quick:
        return ["targets: not evaluated (they are set at 256x100,000; run without --quick)"]
    worst = max(results, key=lambda r: r["timings"]["ours"].median / r["timings"]["argsort"].median)
    ratio = worst["timings"]["ours"].median / worst["timings"]["argsort"].median
    lines = [
        f"target ours/argsort <= {TARGET_RATIO}x: worst {ratio:.2f}x ({worst['case'].name}), "
        f"{verdict(ratio <= TARGET_RATIO)}"
    ]
    measured = [r for r in results if r["peaks"]]
    if measured:
        heaviest = max(measured, key=lambda r: r["peaks"]["ours"])
        mib = heaviest["peaks"]["ours"]
        lines.append(
            f"memory beyond inputs <= {TARGET_MIB} MiB: heaviest {mib:.0f} MiB ({heaviest['case'].name}), "
            f"{verdict(mib <= TARGET_MIB)} (deep outputs excepted, see RESULTS.md)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--memory-case"]:
        return memory_case(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat, no memory runs")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per case (default 3)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads, here and in the memory runs"
    )
    parser.add_argument("--only", default=None, help="run only the cases whose name contains this text")
    parser.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="measure peak memory in fresh subprocesses (default: on, off with --quick)",
    )
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    warmup = 0 if args.quick else 1
    memory = (not args.quick) if args.memory is None else args.memory
    cases = [c for c in CASES if args.only is None or args.only in c.name]
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {machine_line()}")
    print(f"median of {repeats} interleaved run(s) after {warmup} warm-up(s)")
    results = run(cases, args.quick, repeats, warmup, memory)
    print()
    print(table(results))
    print()
    for line in targets(results, args.quick):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
