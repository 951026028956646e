"""Evaluate an embedding model from its query and corpus embeddings, exactly, in one call.

:func:`evaluate_embeddings` ranks the whole corpus for every judged query with the exact chunked
top-k (:func:`~ignite_ranking.catalog.top_k`; :func:`~ignite_ranking.catalog.sharded_top_k`
with a ``group``), never holding the ``(queries, corpus)`` score matrix, turns the ranked rows
and the qrels into :class:`~ignite_ranking.Retrieved` batches (judged documents absent from the
corpus get ids past it, so they count in R and in the ideal DCG) and feeds them to the metrics,
under the conventions of :mod:`~ignite_ranking.retrieval.conventions`.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
from collections.abc import Callable, Hashable, Mapping, Sequence

import torch
import torch.distributed as dist

from .. import catalog
from ..kernels import Retrieved
from ..kernels.inputs import check_readable
from ..metrics import MAP, MRR, NDCG, HitRate, Precision, RankingMetrics, Recall
from .beir import as_qrels_dict
from .conventions import CONVENTIONS, Convention, parse_measures

__all__ = ["evaluate_embeddings"]

_SIMILARITIES = ("cosine", "dot", "euclidean")


def evaluate_embeddings(
    query_embeddings: torch.Tensor,
    corpus_embeddings: torch.Tensor,
    qrels: object,
    *,
    query_ids: Sequence[Hashable],
    corpus_ids: Sequence[Hashable],
    measures: Sequence[str] | None = None,
    similarity: str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = "cosine",
    convention: str = "trec",
    exclude: Mapping[Hashable, Sequence[Hashable]] | None = None,
    ignore_identical_ids: bool = False,
    batch_size: int | None = None,
    chunk_size: int | None = None,
    group: dist.ProcessGroup | None = None,
    progress: bool | None = None,
    per_query: bool = False,
) -> dict[str, float] | tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The mean of each measure over the judged queries, ranking the whole corpus exactly.

    Args:
        query_embeddings: ``(Q, d)`` floating (float32, float16, bfloat16, float64), any device.
        corpus_embeddings: ``(N, d)``, the queries' dtype and device; with ``group``, this
            process's shard of the corpus (the shards in rank order are the corpus).
        qrels: ``{query id: {document id: grade}}``, a :class:`~ignite_ranking.trec.Qrels`, or a
            path to TREC qrels or a BEIR tsv. Ids are matched as ``str``. Judged documents
            absent from the corpus count in R; queries absent from ``query_ids``, or with no
            judgement, are not evaluated.
        query_ids: the id of each query row (str or int, distinct).
        corpus_ids: the id of each corpus row (distinct over the whole corpus); with ``group``,
            this shard's.
        measures: ``family@k`` names (``accuracy``, ``precision``, ``recall``, ``mrr``, ``ndcg``,
            ``map``); default: the convention's, with its aliases (``"beir"``'s ``accuracy``).
            Explicit measures override the convention's: one key each, no alias.
        similarity: ``"cosine"``, ``"dot"``, ``"euclidean"`` (negated distance: the corpus is
            ranked by ``2 q.c - |c|^2``, the same order) or a callable
            ``(queries, corpus_chunk) -> (batch, chunk) scores`` (not with ``group``).
            Float16 embeddings whose dot products or distances could pass 65,504 are scaled
            by a power of two first, which keeps the order (the same on every process).
        convention: ``"trec"``, ``"beir"`` or ``"sentence-transformers"``
            (:mod:`~ignite_ranking.retrieval.conventions`).
        exclude: ``{query id: [document ids]}`` that are not candidates of the query.
        ignore_identical_ids: a document whose id is the query's is not a candidate (BEIR's
            default; off here, as in sentence-transformers).
        batch_size: queries ranked at once (default 1024).
        chunk_size: corpus rows scored at once (default: a 16 MiB score block).
        group: a ``torch.distributed`` group spanning every process: each passes the same
            queries and its own corpus shard; every process returns the same result, bit for
            bit that of one process holding the whole corpus. Only ``(batch, k)`` candidates
            and the corpus ids travel, never an embedding. Without it, the result is this
            process's own (no collective, also under ``torch.distributed``).
        progress: a tqdm bar over the query batches.
        per_query: also return ``{query id: {key: value}}`` of the evaluated queries (ids as
            ``str``, in ``query_ids``' order).

    Returns:
        ``{key: mean}`` (keys in the convention's names), and with ``per_query`` the per-query
        values as a second item.

    Raises:
        ValueError: ids that do not match the embeddings' rows, duplicate ids, NaN embeddings,
            an unknown convention, similarity or measure, no query to evaluate.

    Example:
        >>> import torch
        >>> from ignite_ranking import retrieval
        >>> queries = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> corpus = torch.tensor([[1.0, 0.1], [0.1, 1.0], [1.0, 1.0]])
        >>> qrels = {"q1": {"d0": 1}, "q2": {"d2": 1, "gone": 1}}
        >>> retrieval.evaluate_embeddings(queries, corpus, qrels, query_ids=["q1", "q2"],
        ...     corpus_ids=["d0", "d1", "d2"], measures=["mrr@10", "recall@2"])
        {'mrr@10': 0.75, 'recall@2': 0.75}
    """
    conv = _convention(convention)
    asked = parse_measures(list(conv.measures) if measures is None else measures)
    sim_name = _check_similarity(similarity, group)
    _check_embeddings(query_embeddings, corpus_embeddings, callable(similarity))
    query_ids, corpus_ids = (
        _ids(query_ids, query_embeddings, "query"),
        _ids(corpus_ids, corpus_embeddings, "corpus", distinct=conv.tie_order == "row"),
    )
    table = as_qrels_dict(qrels)
    ids, offset, num_items = _global_ids(corpus_ids, group)
    ids, corpus, owned = _in_tie_order(ids, corpus_embeddings, conv, group)
    queries, corpus = _prepared(query_embeddings, corpus, similarity, owned=owned, group=group)
    ties = "last" if conv.tie_order == "id_descending" else "first"

    evaluated = [i for i, q in enumerate(query_ids) if table.get(str(q)) and _counts(table[str(q)], conv)]
    if not evaluated:
        judged = (
            "a judged document"
            if conv.binary or conv.count_zero_hits
            else f"a relevant document (grade >= 1; convention={conv.name!r} leaves out queries without one)"
        )
        raise ValueError(
            f"no query of query_ids has {judged} in the qrels: check that the ids match the qrels' "
            "(they are compared as str)"
        )
    if group is not None and conv.tie_order == "row" and len({str(doc) for doc in ids}) != len(ids):
        raise ValueError("corpus_ids hold an id twice (ids are compared as str)")
    exclude = _checked_exclude(exclude)
    named = _named_documents(table, [str(query_ids[i]) for i in evaluated], exclude, ignore_identical_ids)
    row_of = {name: row for row, doc in enumerate(ids) if (name := str(doc)) in named}
    depth = max(1, min(max(k for _, k in asked), len(ids)))  # a cutoff past the corpus ranks all of it
    names = [conv.key_of(family, cutoff, sim_name) for family, cutoff in asked]
    metrics = _metrics(asked, names, conv, per_query, local=group is None)
    low, high = _share(group, len(evaluated))
    batch_size = _check_batch_size(batch_size)
    starts = range(0, len(evaluated), batch_size)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="ranking the corpus", unit="batch", leave=False)
    for start in starts:
        rows = evaluated[start : start + batch_size]
        wanted = [str(query_ids[i]) for i in rows]
        excluded = _excluded(wanted, exclude, ignore_identical_ids, row_of, queries.device)
        batch = queries[rows]
        if group is not None:
            _, top = catalog.sharded_top_k(
                batch, corpus, depth, item_offset=offset, num_items=num_items, exclude=excluded,
                chunk_size=chunk_size, ties=ties, group=group,
            )  # fmt: skip
        else:
            items = corpus if not callable(similarity) else lambda a, b, q=batch: similarity(q, corpus[a:b])
            _, top = catalog.top_k(batch, items, depth, exclude=excluded, chunk_size=chunk_size, ties=ties,
                                   num_items=len(ids))  # fmt: skip
        mine = slice(max(low - start, 0), max(min(high - start, len(rows)), 0))  # this process's share
        if mine.stop > mine.start:
            metrics.update(_retrieved(top[mine].cpu(), wanted[mine], table, row_of, len(ids), conv))
    means = metrics.compute()
    result = {
        name: float(means[f"m{i}@{k}"]) for i, (name, (_, k)) in enumerate(zip(names, asked, strict=True))
    }
    aliased = (lambda values: conv.with_aliases(values, sim_name)) if measures is None else dict
    if not per_query:
        return aliased(result)
    values = metrics.per_query_values()
    keys = [str(query_ids[evaluated[key]]) for key in values.keys.tolist()]
    table_out = {key: {} for key in keys}
    for i, (name, (_, k)) in enumerate(zip(names, asked, strict=True)):
        for key, value in zip(keys, values.values[f"m{i}@{k}"].tolist(), strict=True):
            table_out[key][name] = value
    return aliased(result), {key: aliased(row) for key, row in table_out.items()}


# ------------------------------------------------------------------------------------ checks


def _convention(convention: object) -> Convention:
    if not isinstance(convention, str) or convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {', '.join(map(repr, CONVENTIONS))}, got {convention!r}")
    return CONVENTIONS[convention]


def _check_similarity(similarity: object, group) -> str:
    if callable(similarity):
        if group is not None:
            raise ValueError(
                "a callable similarity is not sharded; pass 'cosine', 'dot' or 'euclidean' with group"
            )
        return getattr(similarity, "__name__", "custom")
    if similarity not in _SIMILARITIES:
        raise ValueError(
            f"similarity must be one of {', '.join(map(repr, _SIMILARITIES))} or a callable, "
            f"got {similarity!r}"
        )
    return similarity


def _check_embeddings(queries: object, corpus: object, custom: bool) -> None:
    for name, value in (("query_embeddings", queries), ("corpus_embeddings", corpus)):
        if not isinstance(value, torch.Tensor) or value.dim() != 2 or not value.is_floating_point():
            raise ValueError(f"{name} must be a 2-D floating tensor, got {_describe(value)}")
        check_readable(name, value)
        # A finite sum has no NaN or inf in it (one read, no mask); an overflowing one is checked.
        if not value.sum().isfinite() and not value.isfinite().all():
            raise ValueError(f"{name} contain NaN or infinite values")
    if not custom and (queries.shape[1] != corpus.shape[1] or queries.dtype != corpus.dtype):
        raise ValueError(
            "query_embeddings and corpus_embeddings must have one d and dtype, got "
            f"{_describe(queries)} and {_describe(corpus)}"
        )
    if queries.device != corpus.device:
        raise ValueError(f"the embeddings must be on one device, got {queries.device} and {corpus.device}")


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def _ids(ids: object, embeddings: torch.Tensor, name: str, distinct: bool = True) -> list:
    """The ids as a list, checked; ``distinct=False`` leaves their repeats to the id sort. A 1-D
    NumPy array (of ints or str) or integer tensor is read as its list."""
    if not isinstance(ids, Sequence) and getattr(ids, "ndim", None) == 1 and hasattr(ids, "tolist"):
        listed = ids.tolist()
        if not all(isinstance(i, str) or (isinstance(i, int) and not isinstance(i, bool)) for i in listed):
            raise TypeError(f"{name}_ids must hold str or int ids, got an array of {ids.dtype}")
        ids = listed
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"{name}_ids must be a sequence of str or int ids, got {type(ids).__name__}")
    ids = list(ids)
    if len(ids) != embeddings.shape[0]:
        raise ValueError(f"{name}_ids has {len(ids)} ids for {embeddings.shape[0]} {name} embeddings")
    if distinct and len({str(i) for i in ids}) != len(ids):
        raise ValueError(f"{name}_ids hold an id twice (ids are compared as str)")
    return ids


def _check_batch_size(batch_size: object) -> int:
    if batch_size is None:
        return 1024
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
    return int(batch_size)


# ------------------------------------------------------------------------------------ the corpus


def _global_ids(corpus_ids: list, group) -> tuple[list, int, int | None]:
    """Every corpus id in global row order, this shard's first row and the corpus size."""
    if group is None:
        return corpus_ids, 0, None
    gathered: list = [None] * dist.get_world_size(group)
    dist.all_gather_object(gathered, corpus_ids, group=group)
    sizes = [len(part) for part in gathered]
    rank = dist.get_rank(group)
    return [i for part in gathered for i in part], sum(sizes[:rank]), sum(sizes)


def _in_tie_order(
    ids: list, corpus: torch.Tensor, conv: Convention, group
) -> tuple[list, torch.Tensor, bool]:
    """The ids and corpus rows in the order whose row tie rule is the convention's (id order),
    and whether the corpus returned is a copy of ours; the permutation dies here."""
    order = _tie_permutation(ids, conv, group)
    if order is None:
        return ids, corpus, False
    rows = torch.tensor(order, dtype=torch.int64, device=corpus.device)
    return [ids[i] for i in order], corpus.index_select(0, rows), True


def _prepared(queries: torch.Tensor, corpus: torch.Tensor, similarity, owned: bool, group):
    """The embeddings as ``top_k`` scores them; ``owned``: ``corpus`` is a copy of ours, so a
    cosine normalizes it in place (one corpus copy at a time, not two). In float16, whose
    largest value is 65,504, embeddings whose scores could overflow are first scaled by a power
    of two, which scales every score exactly (short of subnormals) and so keeps their order."""
    if similarity == "cosine":
        return _unit(queries, in_place=False), _unit(corpus, in_place=owned)
    if similarity not in ("dot", "euclidean"):
        return queries, corpus
    top = torch.finfo(corpus.dtype).max
    narrow = top < 2**64  # float32, float64, bfloat16: no embedding's scores come near
    query_norm, corpus_norm = _largest_norms(queries, corpus, group) if narrow else (0.0, 0.0)
    if similarity == "dot":  # q.c <= |q| |c|: the queries alone are scaled
        scale = _power_of_two_within(top / 2, query_norm * corpus_norm)
        return (queries * scale if scale != 1 else queries), corpus
    # 2 q.c - |c|^2 = |q|^2 - |q - c|^2, the order of -|q - c|; with norms <= sqrt(top) / 4,
    # neither |q|^2 nor |q - c|^2 overflows.
    scale = _power_of_two_within(math.sqrt(top) / 4, max(query_norm, corpus_norm))
    if scale != 1:
        queries, corpus = queries * scale, corpus.mul_(scale) if owned else corpus * scale
    ones = torch.ones(queries.shape[0], 1, dtype=queries.dtype, device=queries.device)
    norms = corpus.square().sum(dim=1, keepdim=True)
    return torch.cat([queries, ones], dim=1), torch.cat([2 * corpus, -norms], dim=1)


_NORM_ROWS = 65_536  # rows whose norms are taken at once in float32


def _largest_norms(queries: torch.Tensor, corpus: torch.Tensor, group) -> tuple[float, float]:
    """The largest query and corpus row norms; with a group, over every shard, so that every
    shard scales alike and their scores compare."""
    largest = torch.zeros(2, dtype=torch.float32, device=corpus.device)
    for side, rows in enumerate((queries, corpus)):
        for start in range(0, rows.shape[0], _NORM_ROWS):
            norms = torch.linalg.vector_norm(rows[start : start + _NORM_ROWS].float(), dim=1)
            largest[side] = torch.maximum(largest[side], norms.amax())
    if group is not None:
        dist.all_reduce(largest, op=dist.ReduceOp.MAX, group=group)
    query_norm, corpus_norm = largest.tolist()
    return query_norm, corpus_norm


def _power_of_two_within(bound: float, value: float) -> float:
    """1, or the largest power of two that brings ``value`` to at most ``bound``."""
    return 1.0 if value <= bound else 2.0 ** math.floor(math.log2(bound / value))


def _unit(rows: torch.Tensor, in_place: bool) -> torch.Tensor:
    """``torch.nn.functional.normalize(rows, dim=1)``, bit for bit, in place if asked. Its
    ``eps`` of 1e-12 is 0 in float16, where a zero row would be 0/0: there ``eps`` is float16's
    smallest subnormal, below every norm but 0, so a zero row is 0 in every dtype."""
    info = torch.finfo(rows.dtype)
    eps = max(1e-12, info.tiny * info.eps)
    if not in_place:
        return torch.nn.functional.normalize(rows, dim=1, eps=eps)
    return rows.div_(rows.norm(2, 1, keepdim=True).clamp_min_(eps))


def _tie_permutation(ids: list, conv: Convention, group) -> list[int] | None:
    """The permutation that puts the corpus in id order, or None where the rows are in it
    already or the convention orders ties by row; refused with a group (shards cannot move).
    Refuses an id held twice, found next to itself in that order (no set of the corpus)."""
    if conv.tie_order == "row":
        return None
    key = (
        str
        if conv.str_ids or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in ids)
        else int
    )
    keys = list(map(key, ids))  # distinct ints have distinct str: one repeat test for both
    if all(map(operator.lt, keys, itertools.islice(keys, 1, None))):
        return None
    order = sorted(range(len(ids)), key=keys.__getitem__)
    keys = [keys[row] for row in order]
    if any(map(operator.eq, keys, itertools.islice(keys, 1, None))):
        raise ValueError("corpus_ids hold an id twice (ids are compared as str)")
    if group is not None:
        raise ValueError(
            f"convention={conv.name!r} orders equal scores by document id: with a group, the shards "
            "must hold the corpus sorted by id (as str)"
            if key is str
            else "sorted by id"
        )
    return order


def _share(group, count: int) -> tuple[int, int]:
    """The evaluated queries ``low .. high - 1`` that this process adds to the metrics: one
    contiguous share each, in rank order, so that the metrics' one all-reduce (over the default
    group) sums every query once and their arrival order is the single process's."""
    if group is None:
        return 0, count
    world = dist.get_world_size(group)
    if world != dist.get_world_size():
        raise ValueError("group must span every process: the metrics reduce over the default group")
    per = -(-count // world)
    low = dist.get_rank(group) * per
    return low, min(count, low + per)


# ------------------------------------------------------------------------------------ the batches


def _counts(judged: Mapping[str, float], conv: Convention) -> bool:
    """Whether a judged query is evaluated: under the convention's rule for those without a
    relevant document (sentence-transformers' every listed one is)."""
    return conv.binary or conv.count_zero_hits or any(grade >= 1 for grade in judged.values())


def _named_documents(table, wanted, exclude, ignore_identical_ids) -> set[str]:
    """The documents the judgements and exclusions of the ``wanted`` queries name: the only
    ones whose rows are looked up (a dict over the whole corpus costs more than its block)."""
    named = {doc for query in wanted for doc in table[query]}
    if exclude is not None:
        named.update(doc for docs in exclude.values() for doc in docs)
    if ignore_identical_ids:
        named.update(wanted)
    return named


def _checked_exclude(exclude) -> dict[str, list[str]] | None:
    """``exclude`` with its ids as str (they are compared as str), or None; refuses another form."""
    if exclude is None:
        return None
    if not isinstance(exclude, Mapping):
        raise TypeError(f"exclude must be a dict {{query id: [document ids]}}, got {type(exclude).__name__}")
    return {str(q): [str(d) for d in _doc_ids(q, docs)] for q, docs in exclude.items()}


def _excluded(wanted, exclude, ignore_identical_ids, row_of, device) -> torch.Tensor | None:
    """The ``(batch, m)`` rows excluded for the ``wanted`` queries, padded with -1, or None."""
    if exclude is None and not ignore_identical_ids:
        return None
    exclude = exclude or {}
    rows = []
    for query in wanted:
        docs = exclude.get(query, []) + ([query] if ignore_identical_ids else [])
        rows.append([row_of[d] for d in docs if d in row_of])
    width = max(map(len, rows), default=0)
    return torch.tensor(
        [r + [-1] * (width - len(r)) for r in rows], dtype=torch.int64, device=device
    ).reshape(len(rows), width)


def _doc_ids(query, docs) -> list:
    if isinstance(docs, (str, bytes)) or not isinstance(docs, (Sequence, set, frozenset)):
        raise TypeError(f"exclude[{query!r}] must be a list of document ids, got {type(docs).__name__}")
    return list(docs)


def _retrieved(top, wanted, table, row_of, num_items, conv) -> Retrieved:
    """The ranked rows and the queries' judgements as a Retrieved batch, with the query keys."""
    relevant, grades = [], []
    for query in wanted:
        docs = table[query]
        missing = num_items
        rows = []
        for doc in docs:
            if doc in row_of:
                rows.append(row_of[doc])
            else:  # judged but not in the corpus: an id past it, never retrieved, counted in R
                rows.append(missing)
                missing += 1
        relevant.append(rows)
        grades.append([1.0] * len(rows) if conv.binary else [float(g) for g in docs.values()])
    width = max(map(len, relevant))
    pad = lambda rows, fill: [r + [fill] * (width - len(r)) for r in rows]  # noqa: E731
    return Retrieved(
        top,
        torch.tensor(pad(relevant, -1), dtype=torch.int64),
        grades=torch.tensor(pad(grades, 0.0), dtype=torch.float64),
    )


def _metrics(asked, names, conv: Convention, per_query: bool, local: bool) -> RankingMetrics:
    """One metric per measure (named ``m0``, ``m1``... in the group), under the convention;
    ``local``: computed from this process's queries alone, also under ``torch.distributed``."""
    common = {"ignore_zero_hits": not conv.count_zero_hits}
    build = {
        "accuracy": lambda k: HitRate([k], **common),
        "precision": lambda k: Precision([k], **common),
        "recall": lambda k: Recall([k], **common),
        "mrr": lambda k: MRR([k], **common),
        "ndcg": lambda k: NDCG([k], gain_function=conv.gain_function, **common),
        "map": lambda k: MAP([k], denominator=conv.map_denominator, **common),
    }
    members = {f"m{i}": build[family](k) for i, (family, k) in enumerate(asked)}
    for metric in members.values():
        metric._local = local
    return RankingMetrics(members, per_query=per_query)
