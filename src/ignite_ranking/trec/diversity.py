"""Diversity evaluation of a TREC run against subtopic qrels, as TREC's ``ndeval -traditional``.

The qrels are :class:`~ignite_ranking.trec.io.DiversityQrels` (``qid subtopic docno rel`` lines,
:func:`~ignite_ranking.trec.io.read_diversity_qrels`); the measures are those of
:mod:`ignite_ranking.kernels.diversity`, named as ir_measures or ndeval name them:

- ``alpha_nDCG@k`` / ``alpha-nDCG@k``, with ``alpha_nDCG(alpha=0.3)@k`` (default 0.5);
- ``ERR_IA@k`` / ``ERR-IA@k`` (the alpha of the novelty gains, default 0.5, as ``ERR_IA(alpha=...)``);
- ``NRBP`` with ``NRBP(alpha=0.5,beta=0.5)``;
- ``P_IA@k`` / ``P-IA@k``; ``StRecall@k`` / ``strec@k``;
- each takes ``rel=L`` (a judgement is relevant iff ``rel >= L``; default: ``relevance_level``).

The rules are ndeval's: the run is ordered by descending score, ties by descending docno (its
``-traditional`` order, also trec_eval's); a document is relevant to a subtopic iff it is judged
``>= level`` for it; a subtopic counts (N) if some document is relevant to it; the ideal ranking
of alpha-nDCG is ndeval's greedy one, equal gains going to the larger docno. Queries: those of the
run that are in the qrels, in order of first appearance in the run; a query whose judgements make
no subtopic relevant scores 0 and counts in the mean; qrels queries missing from the run are left
out, or count as 0 with ``missing_as_zero`` (ndeval's ``-c``). Deviations: any cutoff is taken
(ndeval stops at 20), and ERR-IA@1 is normalised like the other cutoffs (ndeval leaves it
undivided by N).

Example:
    >>> import numpy as np
    >>> from ignite_ranking.trec.io import DiversityQrels, Run
    >>> qrels = DiversityQrels(["1"], np.zeros(3, np.int32), np.array([b"a", b"b", b"c"]),
    ...                        np.array([1, 1, 1]), subtopics=["1", "2"],
    ...                        subtopic=np.array([0, 0, 1], np.int32))
    >>> run = Run(["1"], np.zeros(3, np.int32), np.array([b"a", b"b", b"c"]), np.array([3.0, 2.0, 1.0]))
    >>> result = evaluate_diversity(qrels, run, ["alpha_nDCG@2", "strec@2", "NRBP"])
    >>> {name: round(value, 4) for name, value in result.means.items()}
    {'alpha_nDCG@2': 0.8066, 'strec@2': 0.5, 'NRBP': 0.5625}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..kernels.diversity import (
    SubtopicBatch,
    alpha_ndcg,
    check_alpha,
    err_ia,
    nrbp,
    precision_ia,
    subtopic_recall,
)
from .io import DiversityQrels, DuplicateEntryError, Run
from .judgements import words
from .records import to_float32
from .result import (
    EvaluationResult,
    check_batch_size,
    check_relevance_level,
    check_score_precision,
    run_columns,
    summaries,
)

__all__ = [
    "DIVERSITY_HELP",
    "DiversityMeasure",
    "evaluate_diversity",
    "is_diversity_measure",
    "parse_diversity_measures",
]

# Spellings (ir_measures', ndeval's) -> family.
_NAMES = {
    "alpha_nDCG": "alpha_ndcg",
    "alpha-nDCG": "alpha_ndcg",
    "ERR_IA": "err_ia",
    "ERR-IA": "err_ia",
    "NRBP": "nrbp",
    "P_IA": "p_ia",
    "P-IA": "p_ia",
    "StRecall": "strec",
    "strec": "strec",
}
_PARAMS = {
    "alpha_ndcg": ("alpha", "rel"),
    "err_ia": ("alpha", "rel"),
    "nrbp": ("alpha", "beta", "rel"),
    "p_ia": ("rel",),
    "strec": ("rel",),
}
#: The command line's help on the diversity measures.
DIVERSITY_HELP = """
diversity measures (ndeval -traditional; the qrels are then read as 'qid subtopic docno rel'):
  alpha_nDCG@k, alpha_nDCG(alpha=0.3)@k   alpha-nDCG (alpha 0.5 by default)
  ERR_IA@k                                intent-aware ERR, ndeval's normalisation
  NRBP, NRBP(alpha=0.5,beta=0.5)          novelty- and rank-biased precision
  P_IA@k, StRecall@k                      intent-aware precision, subtopic recall
  (also ndeval's names: alpha-nDCG@k, ERR-IA@k, P-IA@k, strec@k; rel=L on each)
"""
_NAME = re.compile(r"^(?P<name>[A-Za-z_-]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>\d+))?$")


@dataclass(frozen=True)
class DiversityMeasure:
    """A parsed diversity measure: ``family`` (``alpha_ndcg``, ``err_ia``, ``nrbp``, ``p_ia``,
    ``strec``), cutoff ``k`` (None for NRBP), relevance level ``rel`` (None: the evaluation's),
    and the novelty and patience parameters ``alpha`` and ``beta``."""

    name: str
    family: str
    k: int | None = None
    rel: int | None = None
    alpha: float = 0.5
    beta: float = 0.5

    @property
    def is_count(self) -> bool:
        return False

    @property
    def is_text(self) -> bool:
        return False


def is_diversity_measure(name: object) -> bool:
    """Whether ``name`` is a :class:`DiversityMeasure` or names one (by its base name)."""
    if isinstance(name, DiversityMeasure):
        return True
    match = _NAME.match(name) if isinstance(name, str) else None
    return match is not None and match["name"] in _NAMES


def _parse(name: str) -> DiversityMeasure:
    match = _NAME.match(name)
    if match is None or match["name"] not in _NAMES:
        raise ValueError(
            f"unknown diversity measure {name!r}; expected one of alpha_nDCG@k, ERR_IA@k, NRBP, "
            "P_IA@k, StRecall@k (or ndeval's alpha-nDCG@k, ERR-IA@k, P-IA@k, strec@k)"
        )
    family = _NAMES[match["name"]]
    values: dict[str, float | int] = {}
    for item in filter(None, (match["params"] or "").split(",")):
        key, _, text = (part.strip() for part in item.partition("="))
        if key not in _PARAMS[family]:
            raise ValueError(
                f"measure {name!r}: unknown parameter {key!r}; it takes {', '.join(_PARAMS[family])}"
            )
        try:
            values[key] = int(text) if key == "rel" else check_alpha(key, float(text))
        except ValueError as err:
            raise ValueError(f"measure {name!r}: bad value for {key}: {err}") from None
    if "rel" in values and values["rel"] < 0:
        raise ValueError(f"measure {name!r}: rel must be >= 0, got {values['rel']}")
    k = int(match["k"]) if match["k"] else None
    if family == "nrbp" and k is not None:
        raise ValueError(f"measure {name!r}: NRBP reads the whole ranking and takes no cutoff")
    if family != "nrbp" and (k is None or k < 1):
        raise ValueError(f"measure {name!r}: a cutoff >= 1 is needed, as in {match['name']}@20")
    return DiversityMeasure(name=name, family=family, k=k, **values)


def parse_diversity_measures(names: Iterable[str | DiversityMeasure]) -> list[DiversityMeasure]:
    """The measures named (see the module docstring); ``ValueError`` for any other name."""
    if isinstance(names, str):
        names = [names]
    return [n if isinstance(n, DiversityMeasure) else _parse(n) for n in names]


def _first_duplicate(key: np.ndarray) -> int | None:
    """The index of an entry whose key occurred before, or None."""
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    return int(order[same[0] + 1]) if same.size else None


def _lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The index of each key in ``sorted_keys``, -1 where it is absent."""
    if not len(sorted_keys):
        return np.full(len(keys), -1, dtype=np.int64)
    found = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return np.where(sorted_keys[found] == keys, found, -1)


def _local_index(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """For each entry, the index of its key among the distinct keys of its group, ascending."""
    if not key.size:
        return np.zeros(0, dtype=np.int64)
    key = key - key.min()
    span = int(key.max()) + 1
    pairs, inverse = np.unique(group * span + key, return_inverse=True)
    pair_group = pairs // span
    return (np.arange(len(pairs)) - np.searchsorted(pair_group, pair_group, side="left"))[inverse.ravel()]


def _docno_codes(docno: np.ndarray) -> np.ndarray:
    """Dense int64 codes of the docnos, ascending in ``strcmp`` order (sorting uint64 words of the
    docnos: several times faster than sorting the bytes)."""
    if not len(docno):
        return np.zeros(0, dtype=np.int64)
    grid = words(docno)
    # equal words are equal docnos: one word sorts unstably (faster)
    order = np.argsort(grid[:, 0]) if grid.shape[1] == 1 else np.lexsort(grid.T[::-1])
    ordered = grid[order]
    new = np.ones(len(order), dtype=np.int64)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    codes = np.empty(len(order), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes


def evaluate_diversity(
    qrels: DiversityQrels,
    run: Run | Mapping,
    metrics: Sequence[str | DiversityMeasure],
    *,
    relevance_level: int = 1,
    score_precision: str = "float64",
    missing_as_zero: bool = False,
    batch_size: int = 1024,
):
    """Evaluates ``run`` against subtopic ``qrels``; see the module docstring for the rules.

    Args:
        qrels: subtopic judgements, from :func:`~ignite_ranking.trec.io.read_diversity_qrels`.
        run: the run, from :func:`~ignite_ranking.trec.io.read_run`, or a dict of dicts
            ``{query id: {document id: score}}`` (read as
            :func:`~ignite_ranking.trec.columns.columns` reads it).
        metrics: diversity measure names, e.g. ``["alpha_nDCG@20", "ERR-IA@20", "NRBP"]``.
        relevance_level: a judgement is relevant iff ``rel >= relevance_level`` (default 1).
        score_precision: ``"float64"`` (ndeval) or ``"float32"`` (scores rounded first).
        missing_as_zero: count qrels queries that the run lacks as 0 (ndeval's ``-c``).
        batch_size: queries per batch of tensors.

    Returns:
        An :class:`~ignite_ranking.trec.EvaluationResult`.

    Raises:
        ValueError: an unknown measure, a document twice in a query of the run, a judgement
            twice in the qrels, or no query to evaluate.
        TypeError: qrels that are not subtopic qrels, a run neither a Run nor a dict of dicts.
    """
    measures = parse_diversity_measures(metrics)
    check_relevance_level(relevance_level)
    check_score_precision(score_precision)
    check_batch_size(batch_size)
    if not isinstance(qrels, DiversityQrels):
        raise TypeError(
            "diversity measures need subtopic qrels: a DiversityQrels from read_diversity_qrels (or, "
            "through the ir_measures provider, records or a DataFrame whose iteration is the "
            f"subtopic), got {type(qrels).__name__}"
        )
    if isinstance(run, Mapping):
        run = run_columns(run)
    elif not isinstance(run, Run):
        raise TypeError(
            f"run must be a Run (read_run) or a dict of dicts {{query id: {{document id: score}}}}, "
            f"got {type(run).__name__}"
        )

    index = {q: i for i, q in enumerate(qrels.qids)}
    run_to_qrels = np.array([index.get(q, -1) for q in run.qids], dtype=np.int64)
    mapped = run_to_qrels[run.qid] if len(run) else np.zeros(0, dtype=np.int64)
    keep = np.flatnonzero(mapped >= 0)
    run_q, run_doc, score = mapped[keep], run.docno[keep], run.score[keep]
    if score_precision == "float32":
        score = to_float32(score).astype(np.float64)
    codes = _docno_codes(np.concatenate((qrels.docno, run_doc)))
    qrels_code, run_code = codes[: len(qrels)], codes[len(qrels) :]
    num_docs = int(codes.max()) + 1 if codes.size else 1

    run_key = run_q * num_docs + run_code
    duplicate = _first_duplicate(run_key)
    if duplicate is not None:
        err = DuplicateEntryError("run", qrels.qids[run_q[duplicate]], run_doc[duplicate])
        raise err.located(run.path)
    judgement_key = (
        qrels.qid.astype(np.int64) * len(qrels.subtopics) + qrels.subtopic
    ) * num_docs + qrels_code
    duplicate = _first_duplicate(judgement_key)
    if duplicate is not None:
        err = DuplicateEntryError("qrels", qrels.qids[qrels.qid[duplicate]], qrels.docno[duplicate])
        raise err.located(qrels.path)

    # Ranks: by query, descending score, descending docno (ndeval -traditional, trec_eval).
    # (two stable integer sorts: a lexsort with a float key took 7x longer)
    _, score_rank = np.unique(-score, return_inverse=True)
    by_docno = np.argsort(-run_code, kind="stable")
    order = by_docno[
        np.argsort((run_q * (int(score_rank.max(initial=0)) + 1) + score_rank)[by_docno], kind="stable")
    ]
    rank = np.empty(len(order), dtype=np.int64)
    sorted_q = run_q[order]
    rank[order] = np.arange(len(order)) - np.searchsorted(sorted_q, sorted_q, side="left")
    by_key = np.argsort(run_key)

    evaluated = run_to_qrels[run_to_qrels >= 0]
    if evaluated.size == 0 and not missing_as_zero:
        raise ValueError("no query of the run is in the qrels; nothing to evaluate")
    row_of = np.full(len(qrels.qids), -1, dtype=np.int64)
    row_of[evaluated] = np.arange(len(evaluated))

    out = np.zeros((len(evaluated), len(measures)))
    levels = sorted({relevance_level if m.rel is None else m.rel for m in measures})
    for level in levels:
        columns = [
            c for c, m in enumerate(measures) if (relevance_level if m.rel is None else m.rel) == level
        ]
        relevant = np.flatnonzero((qrels.rel >= level) & (row_of[qrels.qid] >= 0))
        row = row_of[qrels.qid[relevant]]
        subtopic = _local_index(row, qrels.subtopic[relevant].astype(np.int64))
        # candidates in descending docno order: ndeval's greedy ideal gives ties to the larger docno
        candidate = _local_index(row, -qrels_code[relevant])
        found = _lookup(
            run_key[by_key], qrels.qid[relevant].astype(np.int64) * num_docs + qrels_code[relevant]
        )
        hit_rank = np.where(found >= 0, rank[by_key[np.maximum(found, 0)]] if len(by_key) else 0, -1)
        entries = np.argsort(row, kind="stable")
        sorted_rows = row[entries]
        num_subtopics = int(subtopic.max()) + 1 if subtopic.size else 1
        num_candidates = int(candidate.max()) + 1 if candidate.size else 0
        for b0 in range(0, len(evaluated), batch_size):
            b1 = min(b0 + batch_size, len(evaluated))
            part = entries[np.searchsorted(sorted_rows, b0) : np.searchsorted(sorted_rows, b1)]
            hits = part[hit_rank[part] >= 0]
            depth = max(max((m.k or 0 for m in measures), default=1), 1)
            if any(measures[c].family == "nrbp" for c in columns) and hits.size:
                depth = max(depth, int(hit_rank[hits].max()) + 1)  # NRBP reads every relevant rank
            hits = hits[hit_rank[hits] < depth]
            ranked = torch.zeros((b1 - b0, depth, num_subtopics), dtype=torch.bool)
            ranked[row[hits] - b0, hit_rank[hits], subtopic[hits]] = True
            candidates = torch.zeros((b1 - b0, num_candidates, num_subtopics), dtype=torch.bool)
            candidates[row[part] - b0, candidate[part], subtopic[part]] = True
            batch = SubtopicBatch(ranked, candidates)
            for column in columns:
                out[b0:b1, column] = _score(batch, measures[column]).numpy()

    queries = [qrels.qids[q] for q in evaluated]
    if missing_as_zero:
        missing = np.flatnonzero(row_of < 0)
        queries += [qrels.qids[q] for q in missing]
        out = np.concatenate((out, np.zeros((len(missing), len(measures)))))
    return EvaluationResult(
        means=summaries(measures, out, queries, qrels, missing_as_zero),
        queries=queries,
        values=out,
        metrics=[m.name for m in measures],
        measures=measures,
    )


def _score(batch: SubtopicBatch, measure: DiversityMeasure) -> torch.Tensor:
    """``(batch,)`` values of one measure."""
    if measure.family == "alpha_ndcg":
        values = alpha_ndcg(batch, [measure.k], measure.alpha)
    elif measure.family == "err_ia":
        values = err_ia(batch, [measure.k], measure.alpha)
    elif measure.family == "nrbp":
        values = nrbp(batch, measure.alpha, measure.beta)
    elif measure.family == "p_ia":
        values = precision_ia(batch, [measure.k])
    else:
        values = subtopic_recall(batch, [measure.k])
    return values[:, 0]
