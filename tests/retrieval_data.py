"""Random embeddings with ties for the retrieval tests: small-integer vectors (many equal scores,
across chunks), relevant documents among each query's near neighbours, judged documents missing
from the corpus, queries without judgements and queries judged only non-relevant."""

from __future__ import annotations

import numpy as np
import torch


def embedding_data(seed: int, num_queries: int = 60, num_docs: int = 800, d: int = 4, identical: bool = False,
                   sorted_ids: bool = False):  # fmt: skip
    """``(queries, corpus, query ids, corpus ids, qrels)``; with ``identical``, every third
    query's id is also a corpus id; with ``sorted_ids``, the corpus ids ascend (as str)."""
    rng = np.random.default_rng(seed)
    queries = torch.from_numpy(rng.integers(-2, 3, size=(num_queries, d)).astype(np.float32))
    corpus = torch.from_numpy(rng.integers(-2, 3, size=(num_docs, d)).astype(np.float32))
    queries[queries.abs().sum(1) == 0] = 1.0
    corpus[corpus.abs().sum(1) == 0] = 1.0
    query_ids = [f"q{i}" for i in range(num_queries)]
    order = np.arange(num_docs) if sorted_ids else rng.permutation(num_docs)
    corpus_ids = [f"d{j:05d}" for j in order]
    if identical:
        for i in range(0, num_queries, 3):
            corpus_ids[i] = query_ids[i]
        if sorted_ids:
            corpus_ids = sorted(corpus_ids)
    unit = torch.nn.functional.normalize
    near = (unit(queries, dim=1) @ unit(corpus, dim=1).T).argsort(dim=1, descending=True)[:, :30]
    qrels = {}
    for i, query in enumerate(query_ids):
        if i % 10 == 0:
            continue  # not judged
        picks = rng.choice(30, size=int(rng.integers(1, 8)), replace=False)
        docs = {corpus_ids[int(near[i, j])]: int(rng.integers(0, 3)) for j in picks}
        if i % 7 == 0:
            docs[f"missing-{query}"] = 1  # judged, not in the corpus
        if i % 11 == 0:
            docs = dict.fromkeys(docs, 0)  # judged, none relevant
        qrels[query] = docs
    return queries, corpus, query_ids, corpus_ids, qrels
