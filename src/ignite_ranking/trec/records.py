"""The records the TREC readers return: :class:`Qrels`, :class:`DiversityQrels` and :class:`Run`
(columns as numpy arrays, query ids interned), and :class:`DuplicateEntryError`, which finds its
lines in the file (:func:`~ignite_ranking.trec.tokens.locate_entries`) only when it is reported.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field

import numpy as np

from .tokens import ID_ERRORS, locate_entries

__all__ = ["DiversityQrels", "DuplicateEntryError", "Qrels", "Run", "to_float32"]


def to_float32(scores: np.ndarray) -> np.ndarray:
    """``scores`` rounded to float32 (``--score-precision float32``); a score past its range is
    +-inf, as the cast makes it, without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return scores.astype(np.float32)


@dataclass
class Qrels:
    """Relevance judgements, one entry per ``qid iter docno rel`` line.

    Attributes:
        qids: the distinct query ids, in order of first appearance.
        qid: ``int32`` index into ``qids`` of each judgement.
        docno: the document id of each judgement (numpy bytes array).
        rel: ``int64`` relevance value of each judgement.
        path: the file it was read from (None when built in memory), for messages.
        ids: the document ids as the ``str`` objects a dict of dicts held, one per judgement,
            in a numpy object array (keyword only; None unless every id was a ``str``): a
            dict-of-dicts run is looked up with them as they are
            (:mod:`~ignite_ranking.trec.run_dicts`). The provider's ``as_qrels`` then gives a
            :class:`~ignite_ranking.trec.columns.DictQrels`, which builds ``docno`` from them
            only when it is read.
    """

    qids: list[str]
    qid: np.ndarray
    docno: np.ndarray
    rel: np.ndarray
    path: str | None = None
    ids: np.ndarray | None = field(default=None, kw_only=True, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.qid)


@dataclass
class DiversityQrels(Qrels):
    """Subtopic judgements, one entry per ``qid subtopic docno rel`` line (TREC Web track diversity
    qrels, as ``ndeval`` reads them).

    Attributes:
        subtopics: the distinct subtopic ids (the second column), in order of first appearance.
        subtopic: ``int32`` index into ``subtopics`` of each judgement.
        (and those of :class:`Qrels`)
    """

    subtopics: list[str] = field(default_factory=list)
    subtopic: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


@dataclass
class Run:
    """A ranked run, one entry per ``qid Q0 docno rank score tag`` line.

    The rank column is read but not kept: like trec_eval, evaluation orders by score.

    Attributes:
        qids: the distinct query ids, in order of first appearance.
        qid: ``int32`` index into ``qids`` of each entry.
        docno: the document id of each entry (numpy bytes array).
        score: ``float64`` score of each entry.
        tag: the run tag (sixth column) of the last line, as trec_eval's ``runid`` takes it.
        path: the file it was read from (None when built in memory), for messages.
    """

    qids: list[str]
    qid: np.ndarray
    docno: np.ndarray
    score: np.ndarray
    tag: str = ""
    path: str | None = None

    def __len__(self) -> int:
        return len(self.qid)


class DuplicateEntryError(ValueError):
    """A document listed twice for one query of a run, or judged twice for one query of the qrels.

    The evaluation finds it on the parsed arrays, where line numbers are gone;
    :meth:`located` looks the two lines up in the file (only then: an error path).

    Attributes:
        kind: ``"run"`` or ``"qrels"``.
        qid, docno: the query id and the repeated document id.
    """

    def __init__(self, kind: str, qid: str, docno: bytes) -> None:
        self.kind, self.qid, self.docno = kind, qid, docno
        verb = "appears twice" if kind == "run" else "is judged twice"
        self.what = f"document {docno.decode(errors=ID_ERRORS)!r} {verb} for query {qid!r}"
        super().__init__(f"{kind}: {self.what}")

    def located(self, path: str | os.PathLike | None) -> ValueError:
        """The error as ``path:line: ...`` with the 1-based line of the second occurrence (and
        the first), or itself when there is no file or the lines are not found."""
        if path is None or not os.path.isfile(path):  # a pipe cannot be read again
            return self
        try:
            lines = locate_entries(path, self.qid, self.docno)
        except (OSError, EOFError, zlib.error):
            return self
        if len(lines) < 2:
            return self
        return ValueError(f"{os.fspath(path)}:{lines[1]}: {self.what} (first at line {lines[0]})")
