"""Qrels and runs held in memory (dicts of dicts, DataFrames, row iterables) as the readers' columns.

:func:`columns` gives what :func:`~ignite_ranking.trec.read_qrels` / :func:`~ignite_ranking.trec.read_run`
give for a file: the distinct query ids, an ``int32`` query code per entry, the document ids as
one fixed-width bytes array and the values as ``float64``, built with as little Python per
entry as possible:

- a dict of dicts is walked by C iterators only (``chain``, ``map``), with no Python code per
  entry and no list of its entries: its document ids and values go straight into numpy, and its
  query codes repeat each query's index by its number of entries (:func:`str_keyed_columns`,
  for qrels, goes query by query instead and keeps their ``str`` ids);
- document ids become a bytes array as the readers make them. ASCII ``str`` ids are copied by
  numpy in C (one pass for the width, one for the copy). Other ids are joined into one
  newline-separated UTF-8 string (one ``str.join`` and one ``encode`` in C) and cut back into
  tokens by the readers' vectorized gather: ids that are not ``str`` (ints...) go through
  ``str()`` first, so ``7`` and ``"7"`` are the same document. An id holding a newline sends
  the list through a per-id path.

Example:
    >>> qids, qid, docno, values = columns({"q1": {"d1": 1, "d2": 0}, "q2": {3: 2}}, "qrels")
    >>> qids, qid.tolist(), docno.tolist(), values.tolist()
    (['q1', 'q2'], [0, 0, 1], [b'd1', b'd2', b'3'], [1.0, 0.0, 2.0])
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from itertools import chain, islice
from operator import methodcaller
from struct import error as StructError
from struct import pack_into

import numpy as np

from .decimals import MAX_GRADE
from .records import Qrels
from .tokens import PAD, as_bytes, gather

__all__ = [
    "FIELDS",
    "DictQrels",
    "bad_entry",
    "columns",
    "dict_entries",
    "dict_qrels",
    "doc_ids",
    "grades",
    "judged_queries",
    "query_dicts",
    "str_keyed_columns",
]

#: The columns ir_measures names: (query, document, value) of qrels and of runs.
FIELDS = {"qrels": ("query_id", "doc_id", "relevance"), "run": ("query_id", "doc_id", "score")}


def doc_ids(ids: Collection) -> np.ndarray:
    """Document ids as the readers' fixed-width bytes array: ``str`` ids in UTF-8, ``bytes`` ids as
    they are when every id is ASCII ``str`` or ``bytes``, other ids through ``str()``."""
    if not len(ids):
        return np.zeros(0, dtype="S1")
    try:  # ASCII str (and bytes) ids: numpy copies them in C, without a bytes object per id
        width = max(max(map(len, ids)), 1)
        return np.fromiter(ids, dtype=f"S{width}", count=len(ids))
    except (UnicodeEncodeError, TypeError, ValueError):
        return _tokens(_joined(ids), ids)


def _tokens(blob: bytes, ids: Collection) -> np.ndarray:
    """``ids`` joined by newlines in ``blob`` (UTF-8), cut back into the readers' bytes array."""
    if blob.count(b"\n") != len(ids) - 1:  # an id holds a newline: one id at a time
        return np.array([_joined([d]) for d in ids], dtype="S")
    size = len(blob) + 1
    buffer = np.empty(size + PAD, dtype=np.uint8)  # gather reads up to PAD bytes past a token
    buffer[: len(blob)] = np.frombuffer(blob, dtype=np.uint8)
    buffer[len(blob)] = 10
    ends = np.flatnonzero(buffer[:size] == 10)
    starts = np.empty_like(ends)
    starts[0] = 0
    np.add(ends[:-1], 1, out=starts[1:])
    return as_bytes(gather(buffer, size, starts, ends))


def _joined(ids: Iterable) -> bytes:
    """The ids joined by newlines, in UTF-8; ids that are not ``str`` go through ``str()``."""
    try:
        return "\n".join(ids).encode("utf-8", "surrogateescape")
    except TypeError:  # not all str
        return "\n".join(map(str, ids)).encode("utf-8", "surrogateescape")


def grades(
    values: np.ndarray, qids: list[str], codes: np.ndarray, docs: np.ndarray | None, ids: np.ndarray | None
) -> np.ndarray:
    """The qrels' grades (``float64`` columns) as ``int64``; a ValueError names the query and the
    document of the first one that is not an integer of magnitude below 2**53 (as the readers: a
    larger one would lose digits, ``inf`` and ``10**30`` would wrap around)."""
    wrong = np.flatnonzero((values != np.round(values)) | ~(np.abs(values) < MAX_GRADE))
    if wrong.size:
        i = int(wrong[0])
        doc = ids[i] if ids is not None else docs[i].decode("utf-8", "surrogateescape")
        raise ValueError(
            f"qrels: relevance must be integers of magnitude below 2**53 ({MAX_GRADE}), got "
            f"{float(values[i])!r} for query {qids[codes[i]]!r}, document {doc!r}"
        )
    return values.astype(np.int64)


def query_dicts(data: Mapping, name: str) -> list[Mapping]:
    """The per-query dicts of a dict of dicts; a TypeError names ``name`` and the query where one
    is not a dict."""
    queries = list(data.values())
    bad = next((i for i, e in enumerate(queries) if type(e) is not dict and not isinstance(e, Mapping)), None)
    if bad is not None:
        qid = next(islice(data, bad, None))
        raise TypeError(
            f"{name}: a dict of dicts maps each query id to a dict of document id -> value; "
            f"query {qid!r} maps to {_shown(queries[bad])}"
        )
    return queries


def _shown(value: object) -> str:
    """A value as a message shows what was received: its type and a short repr."""
    return "None" if value is None else f"{type(value).__name__} {reprlib.repr(value)}"


def bad_entry(name: str, entries: Iterable[tuple]) -> ValueError | None:
    """The error naming the first ``(query, document, value)`` of ``entries`` whose value is None
    or refused by numpy's float64 conversion (or NaN, in a run), or None if none is."""
    what = "score" if name == "run" else "relevance grade"
    for qid, doc, value in entries:
        if value is None:
            got = "None"
        else:
            try:
                number = np.fromiter((value,), np.float64, 1)[0]
            except (TypeError, ValueError, OverflowError):
                # an int numpy refuses is one beyond float64's range
                got = (
                    f"an int beyond float64's range ({value.bit_length()} bits)"
                    if isinstance(value, int)
                    else _shown(value)
                )
            else:
                if not (name == "run" and np.isnan(number)):
                    continue
                got = "NaN"
        return ValueError(
            f"{name}: query {qid!r}, document {doc!r}: the {what} must be a number "
            f"(int, float or numeric str), got {got}"
        )
    return None


def _numbers(name: str, convert: Callable[[], np.ndarray], entries: Callable[[], Iterable[tuple]]):
    """``convert()``, the float64 values; where it fails or gives NaN, the error of
    :func:`bad_entry` on ``entries()`` (the entries are walked only then)."""
    try:
        values = convert()
    except (TypeError, ValueError, OverflowError) as err:
        raise (bad_entry(name, entries()) or err) from None
    if np.isnan(values).any():
        error = bad_entry(name, entries())
        if error is not None:
            raise error
    return values


def dict_entries(qids: Iterable, queries: Iterable[Mapping]) -> Iterator[tuple]:
    """``(query, document, value)`` of each query's dict, for :func:`bad_entry`."""
    return ((qid, doc, value) for qid, docs in zip(qids, queries, strict=True) for doc, value in docs.items())


def str_keyed_columns(
    data: Mapping, name: str
) -> tuple[list[str], np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """:func:`columns` of a dict of dicts, and its document ids as the objects it holds (an
    object array, in the columns' order) when every one is a ``str``, else None. With the ids,
    the doc ids column is None: :class:`DictQrels` builds it when it is first read.

    Made for qrels, whose few ids a query lie scattered in memory: each query's ids are listed,
    checked and copied into the object array, and its values packed by ``struct``, while they
    are in cache (each pass over all the ids costs a cache miss an id). Values ``struct`` does
    not take as floats (``str``...) go through numpy's conversion, as in :func:`columns`.
    """
    queries = query_dicts(data, name)
    counts = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
    ids = np.empty(int(counts.sum()), dtype=object)
    values = np.empty(len(ids), dtype=np.float64)
    start, packed = 0, True
    for docs, count in zip(queries, counts.tolist(), strict=True):
        keys = list(docs)
        if not all(map(str.__instancecheck__, keys)):
            return (*_dict_columns(data, name, queries), None)
        ids[start : start + count] = keys
        if packed:
            try:
                pack_into(f"{count}d", values, 8 * start, *docs.values())
            except (StructError, TypeError, OverflowError):
                packed = False
        start += count
    if not packed:
        values = _values(data, name, queries, len(values))
    # Kept as an object array: its slices are views, and the garbage collector, which would
    # visit every id of a list at each collection of its generation, does not track it.
    return [str(q) for q in data], _codes(counts), None, values, ids


class DictQrels(Qrels):
    """:class:`~ignite_ranking.trec.io.Qrels` of a dict of dicts whose document ids are all
    ``str`` (kept in ``ids``), made with ``docno=None``: the bytes column is built from the ids
    when first read. The dict path (:mod:`~ignite_ranking.trec.run_dicts`) looks the ids up as
    they are and never reads it."""

    @property
    def docno(self) -> np.ndarray:
        if self._docno is None:
            listed = self.ids.tolist()
            self._docno = _tokens(_joined(listed), listed) if listed else np.zeros(0, dtype="S1")
        return self._docno

    @docno.setter
    def docno(self, value: np.ndarray | None) -> None:
        self._docno = value


def dict_qrels(data: Mapping) -> Qrels:
    """:class:`~ignite_ranking.trec.io.Qrels` of a dict of dicts ``{query: {document: grade}}``;
    with every document id a ``str``, a :class:`DictQrels` that keeps them for the dict path."""
    qids, codes, docs, rel, ids = str_keyed_columns(data, "qrels")
    kind = Qrels if ids is None else DictQrels
    return kind(qids=qids, qid=codes, docno=docs, rel=grades(rel, qids, codes, docs, ids), ids=ids)


def judged_queries(qrels: Qrels) -> Qrels:
    """The qrels without their queries that have no judgement (an empty dict in a dict of dicts):
    trec_eval and pytrec_eval do not know them, and ir_measures counts them as unanswered."""
    counts = np.bincount(qrels.qid, minlength=len(qrels.qids))
    if counts.all():
        return qrels
    keep = counts > 0
    code = (np.cumsum(keep) - 1).astype(np.int32)
    qids = [q for q, k in zip(qrels.qids, keep.tolist(), strict=True) if k]
    return replace(qrels, qids=qids, qid=code[qrels.qid])


class _Chained:
    """The entries of several collections as one collection, without copying them into a list."""

    def __init__(self, parts: list, count: int) -> None:
        self.parts, self.count = parts, count

    def __iter__(self) -> Iterator:
        return chain.from_iterable(self.parts)

    def __len__(self) -> int:
        return self.count


def _dict_columns(data: Mapping, name: str, queries: list | None = None):
    """:func:`columns` of a dict of dicts (of its :func:`query_dicts`, where listed)."""
    queries = query_dicts(data, name) if queries is None else queries
    counts = np.fromiter(map(len, queries), dtype=np.int64, count=len(queries))
    total = int(counts.sum())
    docs = doc_ids(_Chained(queries, total))
    return [str(q) for q in data], _codes(counts), docs, _values(data, name, queries, total)


def _values(data: Mapping, name: str, queries: list[Mapping], total: int) -> np.ndarray:
    """The dicts' values, one after another, as float64 (see :func:`_numbers`)."""
    listed = chain.from_iterable(map(methodcaller("values"), queries))
    return _numbers(
        name, lambda: np.fromiter(listed, np.float64, count=total), lambda: dict_entries(data, queries)
    )


def _codes(counts: np.ndarray) -> np.ndarray:
    """``int32`` query code of each entry, for queries of ``counts`` entries one after another."""
    return np.repeat(np.arange(len(counts), dtype=np.int32), counts)


def columns(data, name: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``(qids, qid codes, doc ids, values)`` of ``name`` (``"qrels"`` or ``"run"``): a dict of
    dicts, a pandas DataFrame with ir_measures' columns (:data:`FIELDS`), or an iterable of rows
    with those attributes (ir_measures' namedtuples)."""
    fields = FIELDS[name]
    if isinstance(data, Mapping):
        return _dict_columns(data, name)
    if hasattr(data, "itertuples") and hasattr(data, "columns"):  # pandas DataFrame
        import pandas as pd

        missing = [f for f in fields if f not in data.columns]
        if missing:
            raise ValueError(
                f"{name}: the DataFrame lacks the columns {missing}; it has {list(data.columns)}"
            )
        codes, uniques = pd.factorize(data[fields[0]])
        docs = doc_ids(data[fields[1]].tolist())
        values = _numbers(
            name,
            lambda: data[fields[2]].to_numpy(np.float64),
            lambda: zip(*(data[f] for f in fields), strict=True),
        )
        return [str(q) for q in uniques], codes.astype(np.int32), docs, values
    index: dict = {}
    codes, ids, values = [], [], []
    for row in data:
        codes.append(index.setdefault(getattr(row, fields[0]), len(index)))
        ids.append(getattr(row, fields[1]))
        values.append(getattr(row, fields[2]))
    qids = [str(q) for q in index]
    keys = list(index)
    numbers = _numbers(
        name,
        lambda: np.asarray(values, np.float64),
        lambda: zip(map(keys.__getitem__, codes), ids, values, strict=True),
    )
    return qids, np.asarray(codes, dtype=np.int32), doc_ids(ids), numbers
