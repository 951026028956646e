"""Evaluating an embedding model: retrieval.evaluate_embeddings against sentence-transformers.

Given query and corpus embeddings (d = 64, float32, cosine), the measures
sentence-transformers' InformationRetrievalEvaluator reports by default (accuracy, precision and
recall at 1, 3, 5, 10, NDCG@10, MRR@10, MAP@100), end to end:

- ``ours``: ``retrieval.evaluate_embeddings(..., convention="sentence-transformers")``;
- ``sentence-transformers``: ``InformationRetrievalEvaluator`` with a stand-in model whose
  encode returns the same embeddings (a row lookup: the encode step replaced on both sides);
- ``matmul+topk``: a plain batched matmul, ``torch.topk`` and this library's metrics on the
  ``Retrieved`` rows (not exact under ties; what the exact path costs over it).

The three agree (checked: ours equals sentence-transformers to 1e-12). Peak memory of ours is
measured in a fresh process and compared with 2x the corpus embeddings plus one score block.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine_line, markdown_table, measure_in_subprocess, report_memory_case, time_side_by_side

from ignite_ranking import (
    MAP,
    MRR,
    NDCG,
    HitRate,
    Precision,
    RankingMetrics,
    Recall,
    Retrieved,
    catalog,
    retrieval,
)

FULL = (5000, 200_000)
QUICK = (200, 5000)
D = 64


def make_data(num_queries: int, num_docs: int, seed: int = 0):
    """Embeddings whose queries lie near 1-3 relevant documents (one in 10 missing from the corpus)."""
    gen = torch.Generator().manual_seed(seed)
    corpus = torch.randn(num_docs, D, generator=gen)
    rng = np.random.default_rng(seed)
    relevant = [rng.choice(num_docs, size=int(rng.integers(1, 4)), replace=False) for _ in range(num_queries)]
    anchors = torch.stack([corpus[torch.from_numpy(r)].mean(0) for r in relevant])
    queries = anchors + 0.8 * torch.randn(num_queries, D, generator=gen)
    query_ids = [f"q{i}" for i in range(num_queries)]
    corpus_ids = [f"d{j}" for j in range(num_docs)]
    qrels = {q: {corpus_ids[j]: 1 for j in r.tolist()} for q, r in zip(query_ids, relevant, strict=True)}
    for i in range(0, num_queries, 10):
        qrels[query_ids[i]][f"gone{i}"] = 1
    return queries, corpus, query_ids, corpus_ids, qrels


class StandIn:
    """The model InformationRetrievalEvaluator calls: each text's fixed embedding, by lookup."""

    similarity_fn_name = "cosine"

    def __init__(self, queries, corpus, query_ids, corpus_ids):
        from sentence_transformers import util

        self.similarity = util.cos_sim
        self.rows = {f"Q {q}": (queries, i) for i, q in enumerate(query_ids)}
        self.rows |= {f"D {c}": (corpus, j) for j, c in enumerate(corpus_ids)}
        self.model_card_data = type("Card", (), {"set_evaluation_metrics": lambda *a, **k: None})()

    def encode(self, texts, **kwargs):
        table = self.rows[texts[0]][0]
        return table[torch.tensor([self.rows[t][1] for t in texts])]

    encode_query = encode_document = encode


def cases(queries, corpus, query_ids, corpus_ids, qrels):
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    evaluator = InformationRetrievalEvaluator(
        {q: f"Q {q}" for q in query_ids},
        {c: f"D {c}" for c in corpus_ids},
        {q: set(d) for q, d in qrels.items()},
        show_progress_bar=False,
    )
    model = StandIn(queries, corpus, query_ids, corpus_ids)

    def ours():
        return retrieval.evaluate_embeddings(
            queries, corpus, qrels, query_ids=query_ids, corpus_ids=corpus_ids,
            convention="sentence-transformers",
        )  # fmt: skip

    def plain():
        unit = torch.nn.functional.normalize
        q, c = unit(queries, dim=1), unit(corpus, dim=1)
        group = RankingMetrics(
            a=HitRate([1, 3, 5, 10]), p=Precision([1, 3, 5, 10]), r=Recall([1, 3, 5, 10]),
            n=NDCG([10], gain_function="linear_rank"), m=MRR([10]),
            map=MAP([100], denominator="min_k_relevant"),
        )  # fmt: skip
        row = {c: j for j, c in enumerate(corpus_ids)}
        for start in range(0, len(query_ids), 1024):
            ids = (q[start : start + 1024] @ c.T).topk(100, dim=1).indices
            wanted = query_ids[start : start + 1024]
            judged = [[row.get(d, len(row) + n) for n, d in enumerate(qrels[w])] for w in wanted]
            width = max(map(len, judged))
            group.update(Retrieved(ids, torch.tensor([j + [-1] * (width - len(j)) for j in judged])))
        return group.compute()

    return {"ours": ours, "sentence-transformers": lambda: evaluator(model), "matmul+topk": plain}


def memory_case(argv: list[str]) -> int:
    num_queries, num_docs = int(argv[0]), int(argv[1])
    data = make_data(num_queries, num_docs)
    small = make_data(8, 1000, seed=1)
    run = lambda d: cases(*d)["ours"]  # noqa: E731
    report_memory_case(lambda: run(data)(), warm=lambda: run(small)())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat, no memory run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--size", nargs=2, type=int, metavar=("QUERIES", "DOCS"))
    parser.add_argument("--memory-case", nargs=2, metavar=("QUERIES", "DOCS"))
    args = parser.parse_args(argv)
    if args.memory_case:
        return memory_case(args.memory_case)
    num_queries, num_docs = args.size or (QUICK if args.quick else FULL)
    print(machine_line())
    data = make_data(num_queries, num_docs)
    run = cases(*data)
    ours, theirs = run["ours"](), run["sentence-transformers"]()
    worst = max(abs(ours[k] - theirs[k]) for k in theirs)
    assert set(ours) == set(theirs) and worst <= 1e-12, worst
    timings = time_side_by_side(run, repeats=1 if args.quick else args.repeats, warmup=0 if args.quick else 1)
    base = timings["ours"].median
    rows = [
        [f"{num_queries:,} x {num_docs:,} x {D}", name, t.median, t.spread, f"{t.median / base:.2f}x"]
        for name, t in timings.items()
    ]
    print()
    print(markdown_table(["queries x docs x d", "case", "median ms", "spread ms", "vs ours"], rows))
    print(f"\nours equals sentence-transformers to {worst:.1e} on every measure")
    if not args.quick:
        mib, method = measure_in_subprocess(__file__, [str(num_queries), str(num_docs)])
        corpus_mib = num_docs * D * 4 / 2**20
        budget = 2 * corpus_mib + catalog.BLOCK_BYTES / 2**20
        print(f"peak memory of ours: {mib:.0f} MiB ({method}); budget 2 x corpus {corpus_mib:.0f} MiB + "
              f"block {catalog.BLOCK_BYTES / 2**20:.0f} MiB = {budget:.0f} MiB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
