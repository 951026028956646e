"""Evaluate an embedding model over a corpus: exact, chunked, sharded, under the conventions of
this library, BEIR/MTEB or sentence-transformers (:mod:`.conventions`).

:func:`evaluate_embeddings` takes query and corpus embeddings, their ids and the qrels, and
returns the means; :class:`EmbeddingRetrieval` does the same inside an Ignite evaluator
(:mod:`.metric`); :mod:`.beir` reads BEIR folders.

Example:
    >>> import torch
    >>> from ignite_ranking import retrieval
    >>> queries, corpus = torch.eye(2), torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    >>> retrieval.evaluate_embeddings(queries, corpus, {"a": {"x": 1}, "b": {"x": 1, "y": 1}},
    ...     query_ids=["a", "b"], corpus_ids=["x", "y", "z"], measures=["mrr@10", "map@2"],
    ...     convention="sentence-transformers")
    {'cosine_mrr@10': 1.0, 'cosine_map@2': 0.75}
"""

from .beir import as_qrels_dict, iter_beir_texts, read_beir_ids, read_beir_qrels
from .conventions import CONVENTIONS, Convention
from .embeddings import evaluate_embeddings
from .metric import EmbeddingRetrieval

__all__ = [
    "CONVENTIONS",
    "Convention",
    "EmbeddingRetrieval",
    "as_qrels_dict",
    "evaluate_embeddings",
    "iter_beir_texts",
    "read_beir_ids",
    "read_beir_qrels",
]
