"""A run and its qrels held as Python dicts, as the padded id tensors of a ``Retrieved`` batch.

``run`` is ``{query: {document: score}}`` or ``{query: [document, ...]}`` (best first), and
``qrels`` ``{query: {document: grade}}``, the forms of pytrec_eval, ir_measures, BEIR and
sentence-transformers. Every document id of either is numbered by its sorted order (ints
before strs), so that under the tie policies, which order equal scores by item id, ``"first"``
puts the lower document id first and ``"last"`` the higher one (trec_eval's docno order).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import torch

__all__ = ["id_tensors"]


def _order_key(doc: object) -> tuple:
    if isinstance(doc, bool) or not isinstance(doc, (int, str)):
        raise TypeError(f"document ids must be str or int, got {type(doc).__name__} {doc!r}")
    return (isinstance(doc, str), doc)


def _padded(rows: list[list], fill, dtype: torch.dtype) -> torch.Tensor:
    width = max(map(len, rows), default=0)
    return torch.tensor([row + [fill] * (width - len(row)) for row in rows], dtype=dtype).reshape(
        len(rows), width
    )


def id_tensors(
    run: Mapping, qrels: Mapping, query_ids: Sequence[Hashable] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor, list]:
    """``(ids, relevant, scores or None, grades, query ids)``: one row per query of
    ``query_ids`` (default: the qrels' queries, in their order), ``-1``-padded int64 ids.

    A query the run lacks is a row that retrieved nothing; one the qrels lack has no judgement.
    """
    for name, data in (("run", run), ("qrels", qrels)):
        if not isinstance(data, Mapping):
            raise TypeError(f"{name} must be a dict {{query: ...}}, got {type(data).__name__}")
    queries = list(qrels) if query_ids is None else list(query_ids)
    if len(set(queries)) != len(queries):
        raise ValueError("query_ids holds a query twice")
    kinds = {isinstance(docs, Mapping) for docs in run.values()}
    if len(kinds) > 1:
        raise TypeError("run must give every query a dict of scores, or every query a list of ids")
    scored = kinds != {False}
    lists, judged = [], []
    for query in queries:
        docs = run.get(query, {} if scored else [])
        if not scored:
            if isinstance(docs, (str, bytes)) or not isinstance(docs, Iterable):
                raise TypeError(f"run[{query!r}] must be a dict of scores or a list of ids, got {docs!r}")
            docs = list(docs)
            if len(set(docs)) != len(docs):
                raise ValueError(f"run: query {query!r} lists a document twice")
        grades = qrels.get(query, {})
        if not isinstance(grades, Mapping):
            raise TypeError(
                f"qrels[{query!r}] must be a dict {{document: grade}}, got {type(grades).__name__}"
            )
        lists.append(docs)
        judged.append(grades)
    vocabulary = sorted({doc for part in (*lists, *judged) for doc in part}, key=_order_key)
    number = {doc: i for i, doc in enumerate(vocabulary)}
    ids = _padded([[number[doc] for doc in docs] for docs in lists], -1, torch.int64)
    scores = None
    if scored:
        scores = _padded([[float(docs[d]) for d in docs] for docs in lists], 0.0, torch.float64)
        if scores.isnan().any():
            raise ValueError("run holds a NaN score")
    relevant = _padded([[number[doc] for doc in grades] for grades in judged], -1, torch.int64)
    grades = _padded([[float(g) for g in grades.values()] for grades in judged], 0.0, torch.float64)
    return ids, relevant, scores, grades, queries
