"""What :func:`~ignite_ranking.trec.evaluate` and :func:`~ignite_ranking.trec.evaluate_diversity`
share: the checks of the options and the run they both take, and the result they both return with
its summary line (so that neither imports the other)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .columns import columns
from .extra_measures import MIN_GEO_MEAN
from .io import Qrels, Run
from .measures import Measure

__all__ = [
    "SCORE_PRECISIONS",
    "EvaluationResult",
    "check_relevance_level",
    "check_score_precision",
    "run_columns",
    "summaries",
]

#: How scores are compared: as float64 (trec_eval 10) or rounded to float32 (trec_eval 9, pytrec_eval).
SCORE_PRECISIONS = ("float64", "float32")


def check_relevance_level(relevance_level: object) -> None:
    """Raises unless ``relevance_level`` is an int >= 0 (a grade >= it is relevant)."""
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)):
        raise TypeError(f"relevance_level must be an int, got {type(relevance_level).__name__}")
    if relevance_level < 0:
        raise ValueError(
            f"relevance_level must be >= 0 (negative grades mark unjudged documents), got {relevance_level}"
        )


def check_batch_size(batch_size: object) -> None:
    """Raises unless ``batch_size`` (queries per batch of tensors) is an int >= 1."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")


def check_score_precision(score_precision: object) -> None:
    """Raises unless ``score_precision`` is one of :data:`SCORE_PRECISIONS`."""
    if score_precision not in SCORE_PRECISIONS:
        raise ValueError(
            f"score_precision must be one of {', '.join(map(repr, SCORE_PRECISIONS))}, "
            f"got {score_precision!r}"
        )


def run_columns(run: Mapping) -> Run:
    """A dict-of-dicts run ``{query id: {document id: score}}`` as a :class:`Run`."""
    qids, codes, docs, score = columns(run, "run")
    return Run(qids=qids, qid=codes, docno=docs, score=score)


@dataclass
class EvaluationResult:
    """Summary and per-query values.

    Attributes:
        means: measure name -> summary over the evaluated queries: the mean, or for counts
            (``num_q``, ``num_rel``... see :attr:`Measure.is_count`) the sum, or for ``gm_map``
            and ``gm_bpref`` the geometric mean of the values floored at 1e-5, as trec_eval.
        queries: the evaluated query ids, in the order of ``values``' rows: order of first
            appearance in the run, then (``missing_as_zero``) the qrels queries it lacks.
        values: ``(len(queries), len(metrics))`` float64 per-query values.
        metrics: the measure names, in the order of ``values``' columns: every measure asked
            for but those whose value is a string (:attr:`Measure.is_text`).
        measures: every parsed measure, in the order asked for (also the string-valued ones).
        texts: measure name -> per-query strings (in ``queries``' order) of the string-valued
            measures: ``relstring``'s grades, ``runid``'s run tag.
    """

    means: dict[str, float]
    queries: list[str]
    values: np.ndarray
    metrics: list[str]
    measures: list[Measure] = field(default_factory=list)
    texts: dict[str, list[str]] = field(default_factory=dict)

    @property
    def num_queries(self) -> int:
        return len(self.queries)

    def per_query(self) -> dict[str, dict[str, float]]:
        """qid -> measure name -> value."""
        return {
            q: dict(zip(self.metrics, row.tolist(), strict=True))
            for q, row in zip(self.queries, self.values, strict=True)
        }


def summaries(
    measures: list[Measure], out: np.ndarray, queries: list[str], qrels: Qrels, missing_as_zero: bool
) -> dict:
    """The mean of each measure over the queries, or the sum for counts (trec_eval's "all" line).

    As trec_eval, the values are added one by one in ascending query id (``strcmp``) order and
    the sum divided by the number of queries: a mean halfway between two printed digits then
    rounds as trec_eval's does (numpy's pairwise sum can land on the other side).
    With ``missing_as_zero``, trec_eval's ``num_rel`` total counts the judgements of grade > 0 in
    the whole qrels, whatever the relevance level; so does this.
    """
    in_order = out[sorted(range(len(queries)), key=lambda i: queries[i].encode("utf-8", "surrogateescape"))]
    means = {}
    for column, m in enumerate(measures):
        if m.family == "num_rel" and missing_as_zero:
            means[m.name] = float(np.count_nonzero(qrels.rel > 0))
        elif m.is_count:
            means[m.name] = float(out[:, column].sum())
        elif m.family in ("gm_map", "gm_bpref"):  # trec_eval adds the logs in query order
            logs = np.log(np.maximum(in_order[:, column], MIN_GEO_MEAN))
            means[m.name] = float(np.exp(np.cumsum(logs)[-1] / len(out))) if len(out) else math.nan
        else:  # cumsum adds sequentially
            means[m.name] = float(np.cumsum(in_order[:, column])[-1] / len(out)) if len(out) else math.nan
    return means
