"""BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) and qrels in any form.

The readers give ids and texts, never a model: encoding the texts is the user's model's business.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping

from ..trec.io import Qrels, read_qrels

__all__ = ["as_qrels_dict", "iter_beir_texts", "read_beir_ids", "read_beir_qrels"]

_HEADER = ("query-id", "corpus-id", "score")


def read_beir_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """``{query id: {document id: grade}}`` of a BEIR qrels tsv (``query-id corpus-id score``
    after a header line), ids as ``str``, grades as ``int``; a ValueError names a bad line.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "test.tsv"
        >>> _ = path.write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\nq1\\td2\\t0\\n")
        >>> read_beir_qrels(path)
        {'q1': {'d1': 1, 'd2': 0}}
    """
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            fields = line.rstrip("\r\n").split("\t")
            if number == 1 and tuple(fields) == _HEADER:
                continue
            if line.strip() == "":
                continue
            try:
                query, doc, grade = fields
                qrels.setdefault(query, {})[doc] = int(grade)
            except ValueError:
                raise ValueError(
                    f"{path}:{number}: a BEIR qrels line is 'query-id<TAB>corpus-id<TAB>integer score', "
                    f"got {line.rstrip()!r}"
                ) from None
    return qrels


def iter_beir_texts(path: str | os.PathLike) -> Iterator[tuple[str, str, str]]:
    """``(id, title, text)`` of each line of a BEIR ``corpus.jsonl`` or ``queries.jsonl``
    (``title`` is ``""`` where absent, as in queries), in file order."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                yield str(record["_id"]), record.get("title", "") or "", record.get("text", "") or ""
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{number}: not a BEIR record with an '_id'") from None


def read_beir_ids(path: str | os.PathLike) -> list[str]:
    """The ids of a BEIR ``corpus.jsonl`` or ``queries.jsonl``, in file order."""
    return [record[0] for record in iter_beir_texts(path)]


def _is_beir_tsv(path: str | os.PathLike) -> bool:
    with open(path, encoding="utf-8") as lines:
        first = lines.readline().rstrip("\r\n").split("\t")
    return tuple(first) == _HEADER


def as_qrels_dict(qrels: object) -> dict[str, dict[str, float]]:
    """``{str query id: {str document id: float grade}}`` of a dict of dicts, a
    :class:`~ignite_ranking.trec.Qrels`, or a path to TREC qrels or a BEIR tsv (with its header)."""
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_beir_qrels(qrels) if _is_beir_tsv(qrels) else read_qrels(qrels)
    if isinstance(qrels, Qrels):
        table: dict[str, dict[str, float]] = {q: {} for q in qrels.qids}
        for code, doc, grade in zip(
            qrels.qid.tolist(), qrels.docno.tolist(), qrels.rel.tolist(), strict=True
        ):
            table[qrels.qids[code]][doc.decode("utf-8")] = float(grade)
        return table
    if not isinstance(qrels, Mapping):
        raise TypeError(
            "qrels must be a dict {query: {document: grade}}, a trec.Qrels or a path (TREC qrels or "
            f"a BEIR tsv), got {type(qrels).__name__}"
        )
    table = {}
    for query, docs in qrels.items():
        if not isinstance(docs, Mapping):
            raise TypeError(f"qrels[{query!r}] must be a dict {{document: grade}}, got {type(docs).__name__}")
        grades = {str(doc): _grade(query, doc, grade) for doc, grade in docs.items()}
        if str(query) in table or len(grades) != len(docs):
            raise ValueError(f"qrels hold {query!r} or one of its documents twice (ids are compared as str)")
        table[str(query)] = grades
    return table


def _grade(query: object, doc: object, grade: object) -> float:
    try:
        value = float(grade) if not isinstance(grade, (str, bytes)) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"qrels[{query!r}][{doc!r}] must be a finite number, got {grade!r}")
    return value
