"""An ir_measures provider backed by ignite-ranking's TREC evaluator (extra ``ir-measures``).

`ir_measures <https://ir-measur.es>`_ is the evaluation interface of PyTerrier and many IR
papers; its providers compute its measures with some library (pytrec_eval, ranx...). This one
computes them with :func:`ignite_ranking.trec.evaluate`, several times faster than
``ir_measures.pytrec_eval`` on large runs, with the same values:

- measures: ``P@k``, ``R@k``, ``AP``, ``AP@k``, ``RR``, ``RR@k``, ``nDCG``, ``nDCG@k``,
  ``Success@k``, ``Rprec``, ``NumQ``, ``NumRel``, ``NumRet``, ``NumRelRet``, ``Bpref``,
  ``Judged@k``, ``ERR@k``, ``RBP``, ``SetP`` (also ``relative=True``), ``SetR``, ``SetF``
  (``beta=``), ``SetAP``, ``IPrec@recall``, ``infAP``, with ``rel=`` where ir_measures has it,
  ``judged_only=True`` on P, R, AP, RR, nDCG, Success, Rprec, SetP, SetF, SetAP and IPrec,
  ``nDCG(gains={...})`` and ``nDCG(dcg='exp-log2')``,
  cwl_eval's C/W/L measures ``BPM``, ``INST``, ``INSQ``, ``SDCG``, ``NERR8``-``NERR11``
  (:mod:`ignite_ranking.trec.cwl`; the same values as ``ir_measures.cwl_eval``, whose run order
  keeps tied documents in input order), and the diversity measures ``alpha_nDCG@k``,
  ``ERR_IA@k``, ``NRBP``, ``P_IA@k``, ``StRecall@k`` (ndeval's, on qrels whose ``iteration`` is
  the subtopic: see :doc:`/diversity`). A qrels grade of -1 is unjudged here (as in trec_eval),
  where ir_measures' ``Judged`` counts it as judged.
- scores are rounded to float32 before ranking, as pytrec_eval (trec_eval 9) does, unless the
  provider is made with ``score_precision="float64"`` (trec_eval 10); equal scores are ordered by
  document id descending, as trec_eval does. (ir_measures computes ``RR@k`` with its msmarco
  provider, which breaks ties by document id *ascending* on float64 scores: on tied scores
  the two can differ.)
- qrels and runs: what ir_measures takes (dict of dicts, pandas DataFrames, iterables of
  namedtuples such as ``ir_measures.read_trec_run(path)``) and, faster, TREC file paths, read
  by :func:`~ignite_ranking.trec.read_qrels` / :func:`~ignite_ranking.trec.read_run`.
- as with every ir_measures provider, a qrels query the run does not answer counts with value 0
  (``measure.DEFAULT``) in :meth:`calc_aggregate` and :meth:`iter_calc`.

Example:
    >>> from ir_measures import nDCG, P, AP
    >>> from ignite_ranking import ir_measures as provider
    >>> qrels = {"q1": {"d1": 1, "d2": 2}, "q2": {"d1": 1}}
    >>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}, "q2": {"d2": 0.5, "d1": 0.4}}
    >>> result = provider.calc_aggregate([nDCG @ 10, P @ 1, AP], qrels, run)
    >>> {str(m): round(v, 4) for m, v in result.items()}
    {'nDCG@10': 0.7453, 'P@1': 0.5, 'AP': 0.75}
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import ClassVar

import numpy as np

try:
    import ir_measures
    from ir_measures import measures as _im
    from ir_measures.providers.base import Any, Choices
    from ir_measures.util import Metric
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ignite_ranking.ir_measures needs the ir-measures package: pip install 'ignite-ranking[ir-measures]'"
    ) from error

from .trec import Measure, Qrels, Run, evaluate, parse_measure, read_qrels, read_run
from .trec.columns import columns, dict_qrels, grades, judged_queries
from .trec.diversity import DiversityMeasure
from .trec.io import DiversityQrels, read_diversity_qrels

__all__ = ["IgniteRankingProvider", "calc", "calc_aggregate", "evaluator", "iter_calc", "provider"]

_NOT_PROVIDED = _im.base._NOT_PROVIDED
# ir_measures measure name -> our family (NumRet(rel=L) counts relevant retrieved documents)
_FAMILIES = {
    "P": "P",
    "R": "recall",
    "AP": "map",
    "RR": "recip_rank",
    "nDCG": "ndcg",
    "Success": "success",
    "Rprec": "Rprec",
    "NumQ": "num_q",
    "NumRel": "num_rel",
    "NumRet": "num_ret",
    "Bpref": "bpref",
    "Judged": "judged",
    "ERR": "err",
    "SetP": "set_P",
    "SetR": "set_recall",
    "SetF": "set_F",
    "SetAP": "set_map",
    "IPrec": "iprec_at_recall",
    "infAP": "infAP",
}


# ir_measures diversity measure name -> our DiversityMeasure family (ndeval's definitions)
_DIVERSITY = {
    "alpha_nDCG": "alpha_ndcg",
    "ERR_IA": "err_ia",
    "NRBP": "nrbp",
    "P_IA": "p_ia",
    "StRecall": "strec",
}


# ir_measures names whose parameters the measure parser reads, as the command line's names do
_PARSED = ("RBP", "BPM", "INST", "INSQ", "SDCG", "NERR8", "NERR9", "NERR10", "NERR11")


def _parsed(measure) -> Measure:
    """The measure parsed from its name and parameters by :func:`~ignite_ranking.trec.parse_measure`."""
    params = {key: value for key, value in measure.params.items() if key != "cutoff"}
    listed = ",".join(f"{key}={value!r}" for key, value in params.items())
    text = measure.NAME + (f"({listed})" if params else "")
    if "cutoff" in measure.params:
        text += f"@{int(measure.params['cutoff'])}"
    return replace(parse_measure(text), name=str(measure))


def _to_measure(measure) -> Measure | DiversityMeasure:
    """Our :class:`~ignite_ranking.trec.Measure` (or diversity measure) for an ir_measures measure."""
    params = measure.params
    if measure.NAME in _DIVERSITY:
        given = {key: params[key] for key in ("cutoff", "rel", "alpha", "beta") if key in params}
        return DiversityMeasure(
            name=str(measure),
            family=_DIVERSITY[measure.NAME],
            k=None if given.get("cutoff", _NOT_PROVIDED) is _NOT_PROVIDED else int(given["cutoff"]),
            rel=int(given.get("rel", 1)),
            alpha=float(given.get("alpha", 0.5)),
            beta=float(given.get("beta", 0.5)),
        )
    if measure.NAME in _PARSED or set(params) & {"gains", "dcg"}:
        return _parsed(measure)
    family = _FAMILIES[measure.NAME]
    cutoff = params.get("cutoff", _NOT_PROVIDED)
    rel = params.get("rel", _NOT_PROVIDED)
    judged_only = params.get("judged_only", _NOT_PROVIDED)
    if measure.NAME in ("nDCG", "NumQ", "Judged", "ERR"):
        rel = _NOT_PROVIDED  # level-free
    elif rel is _NOT_PROVIDED and measure.NAME != "NumRet":
        rel = 1  # ir_measures' default
    if family == "num_ret" and rel is not _NOT_PROVIDED:
        family = "num_rel_ret"
    if family == "set_P" and params.get("relative", False) is True:
        family = "set_relative_P"
    extra = ()  # SetF's beta (ir_measures' default 1), IPrec's recall point
    if family == "set_F":
        beta = params.get("beta", _NOT_PROVIDED)
        extra = (1.0 if beta is _NOT_PROVIDED else float(beta),)
    elif family == "iprec_at_recall":
        extra = (float(params["recall"]),)
    return Measure(
        name=str(measure),
        family=family,
        k=None if cutoff is _NOT_PROVIDED else int(cutoff),
        rel=None if rel is _NOT_PROVIDED else int(rel),
        judged_only=judged_only is not _NOT_PROVIDED and bool(judged_only),
        params=extra,
    )


def as_qrels(qrels) -> Qrels:
    """:class:`~ignite_ranking.trec.Qrels` of a path, dict of dicts, DataFrame or namedtuples."""
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, os.PathLike)):
        return read_qrels(qrels)
    if isinstance(qrels, Mapping):  # its str ids are kept for the dict path (trec.run_dicts)
        return dict_qrels(qrels)
    qids, codes, docs, rel = columns(qrels, "qrels")
    return Qrels(qids=qids, qid=codes, docno=docs, rel=grades(rel, qids, codes, docs, None), ids=None)


def as_diversity_qrels(qrels) -> DiversityQrels:
    """Subtopic qrels of a path (``qid subtopic docno rel``), a DataFrame or namedtuples: the
    subtopic is ir_measures' ``iteration`` (``"0"`` where it is absent, as a dict of dicts)."""
    if isinstance(qrels, DiversityQrels):
        return qrels
    if isinstance(qrels, (str, os.PathLike)):
        return read_diversity_qrels(qrels)
    if isinstance(qrels, dict):
        names = None
    elif hasattr(qrels, "itertuples") and hasattr(qrels, "columns"):  # pandas DataFrame
        names = qrels["iteration"].astype(str).tolist() if "iteration" in qrels.columns else None
    else:
        qrels = list(qrels)
        names = [str(getattr(row, "iteration", "0")) for row in qrels]
    plain = as_qrels(qrels)
    index: dict[str, int] = {}
    codes = [index.setdefault(name, len(index)) for name in names or ["0"] * len(plain)]
    return DiversityQrels(
        qids=plain.qids,
        qid=plain.qid,
        docno=plain.docno,
        rel=plain.rel,
        subtopics=list(index),
        subtopic=np.asarray(codes, dtype=np.int32),
    )


def as_run(run) -> Run:
    """:class:`~ignite_ranking.trec.Run` of a path, dict of dicts, DataFrame or namedtuples."""
    if isinstance(run, Run):
        return run
    if isinstance(run, (str, os.PathLike)):
        return read_run(run)
    qids, codes, docs, score = columns(run, "run")  # refuses NaN, naming the query and document
    return Run(qids=qids, qid=codes, docno=docs, score=score)


class _Evaluator(ir_measures.providers.Evaluator):
    def __init__(self, measures, qrels: Qrels, score_precision: str):
        super().__init__(measures, set(qrels.qids))
        self._measures = list(measures)
        self._ours = [_to_measure(m) for m in self._measures]
        self._qrels = judged_queries(qrels)
        self._score_precision = score_precision

    def _values(self, run) -> tuple[list[str], np.ndarray]:
        """The evaluated queries (those of the qrels the run lists) and their rows of values.

        A query the run lists without documents (an empty dict) counts as ``trec_eval -c`` counts
        a query without results: NumQ 1, NumRel R, every other measure 0. The qrels queries the
        run does not list are left to :meth:`_unanswered`.
        """
        if isinstance(run, Mapping):  # evaluate reads dicts of dicts itself (trec.run_dicts)
            listed = {str(q) for q in run}
        else:
            run = as_run(run)
            listed = set(run.qids)
        if not listed & set(self._qrels.qids):
            return [], np.zeros((0, len(self._measures)))
        result = evaluate(
            self._qrels, run, self._ours, score_precision=self._score_precision, missing_as_zero=True
        )
        queries, values = result.queries, result.values
        kept = [i for i, q in enumerate(queries) if q in listed]
        if len(kept) < len(queries):
            queries, values = [queries[i] for i in kept], values[kept]
        return queries, values

    def _unanswered(self, queries: list[str]) -> list[str]:
        answered = set(queries)
        return sorted(q for q in self.qrel_qids if q not in answered)

    # iter_calc and calc_aggregate give what ir_measures' base Evaluator gives (qrels queries the
    # run does not answer count with measure.DEFAULT, in its order), without its per-value hashing
    # of measures, which took longer than the evaluation on large runs.
    def iter_calc(self, run) -> Iterator[Metric]:
        queries, values = self._values(run)
        for qid, row in zip(queries, values.tolist(), strict=True):
            for measure, value in zip(self._measures, row, strict=True):
                yield Metric(query_id=qid, measure=measure, value=value)
        unanswered = self._unanswered(queries)
        for measure in sorted(self._measures, key=str):
            for qid in unanswered:
                yield Metric(query_id=qid, measure=measure, value=measure.DEFAULT)

    def calc_aggregate(self, run) -> dict:
        queries, values = self._values(run)
        unanswered = len(self._unanswered(queries))
        return {
            measure: _aggregate(measure.aggregator(), values[:, column], unanswered, measure.DEFAULT)
            for column, measure in enumerate(self._measures)
        }


def _aggregate(aggregator, values: np.ndarray, unanswered: int, default: float):
    """What ``aggregator`` gives once ``values`` and then ``unanswered`` defaults are added to it.

    ir_measures' mean and sum add the values one at a time from 0; numpy's accumulate makes the
    same sequential float64 additions, in C. Other aggregators are fed value by value.
    """
    count = len(values) + unanswered
    if type(aggregator) in (_im.MeanAgg, _im.SumAgg) and count:
        added = np.concatenate(([0.0], values, np.full(unanswered, default, dtype=np.float64)))
        total = float(np.add.accumulate(added)[-1])
        return total / count if type(aggregator) is _im.MeanAgg else total
    for value in [*values.tolist(), *[default] * unanswered]:
        aggregator.add(value)
    return aggregator.result()


class IgniteRankingProvider(ir_measures.providers.Provider):
    """ir_measures provider on ignite-ranking's evaluator; see the module docstring.

    Args:
        score_precision: ``"float32"`` (default: as pytrec_eval and trec_eval 9) or
            ``"float64"`` (as trec_eval 10).
    """

    NAME = "ignite_ranking"
    SUPPORTED_MEASURES: ClassVar[list] = [
        _im._P(cutoff=Any(), rel=Any(), judged_only=Any()),
        _im._R(cutoff=Any(), rel=Any(), judged_only=Any()),
        _im._AP(cutoff=Any(), rel=Any(), judged_only=Any()),
        _im._RR(cutoff=Any(), rel=Any(), judged_only=Any()),
        _im._nDCG(cutoff=Any(), dcg=Choices("log2", "exp-log2"), gains=Any(), judged_only=Any()),
        _im._Success(cutoff=Any(), rel=Any(), judged_only=Any()),
        _im._Rprec(rel=Any(), judged_only=Any()),
        _im._NumQ(),
        _im._NumRel(rel=Any()),
        _im._NumRet(rel=Any()),
        _im._Bpref(rel=Any()),
        _im._Judged(cutoff=Any()),
        _im._ERR(cutoff=Any()),
        _im._SetP(rel=Any(), relative=Any(), judged_only=Any()),
        _im._SetR(rel=Any()),
        _im._SetF(rel=Any(), beta=Any(), judged_only=Any()),
        _im._SetAP(rel=Any(), judged_only=Any()),
        _im._IPrec(recall=Any(), rel=Any(), judged_only=Any()),
        _im._infAP(rel=Any()),
        _im._alpha_nDCG(cutoff=Any(), alpha=Any(), rel=Any(), judged_only=Choices(False)),
        _im._ERR_IA(cutoff=Any(), rel=Any(), judged_only=Choices(False)),
        _im._NRBP(alpha=Any(), beta=Any(), rel=Any()),
        _im._P_IA(cutoff=Any(), rel=Any(), judged_only=Choices(False)),
        _im._StRecall(cutoff=Any(), rel=Any()),
        _im._RBP(cutoff=Any(), p=Any(), rel=Any()),
        _im._BPM(cutoff=Any(required=True), T=Any(), min_rel=Any(), max_rel=Any(required=True)),
        _im._INST(T=Any(), min_rel=Any(), max_rel=Any(required=True)),
        _im._INSQ(T=Any(), min_rel=Any(), max_rel=Any(required=True)),
        _im._SDCG(cutoff=Any(required=True), dcg=Choices("log2"), min_rel=Any(), max_rel=Any(required=True)),
        _im._NERR8(cutoff=Any(required=True), min_rel=Any(), max_rel=Any(required=True)),
        _im._NERR9(cutoff=Any(required=True), min_rel=Any(), max_rel=Any(required=True)),
        _im._NERR10(p=Any(), min_rel=Any(), max_rel=Any(required=True)),
        _im._NERR11(T=Any(), min_rel=Any(), max_rel=Any(required=True)),
    ]

    def __init__(self, score_precision: str = "float32") -> None:
        super().__init__()
        if score_precision not in ("float32", "float64"):
            raise ValueError(f"score_precision must be 'float32' or 'float64', got {score_precision!r}")
        self.score_precision = score_precision

    def _evaluator(self, measures: Iterable, qrels) -> _Evaluator:
        measures = list(measures)
        for measure in measures:
            try:
                measure.validate_params()
            except AssertionError as error:  # ir_measures checks a measure's parameters by assert
                typed = str(error).startswith("invalid param")
                hint = " (a float parameter takes T=2.0, not T=2)" if typed else ""
                name = f"{measure.NAME}({measure.params})"  # its repr fails on an unknown parameter
                raise ValueError(f"invalid measure {name}: {error}{hint}") from None
        unsupported = [str(m) for m in measures if not self.supports(m)]
        if unsupported:
            raise ValueError(
                f"measures {unsupported} are not supported by the {self.NAME} provider; it supports "
                "P, R, AP, RR, nDCG, Success, Rprec, NumQ, NumRel, NumRet, Bpref, Judged, ERR, RBP, "
                "BPM, INST, INSQ, SDCG, NERR8, NERR9, NERR10, NERR11 (judged_only on P, R, AP, RR, "
                "nDCG, Success, Rprec); diversity: alpha_nDCG@k, ERR_IA@k, NRBP, P_IA@k, StRecall@k "
                "(with a cutoff, except NRBP); trec_eval's SetP, SetR, SetF, SetAP, IPrec, infAP "
                "(judged_only on SetP, SetF, SetAP, IPrec)"
            )
        diversity = [m.NAME in _DIVERSITY for m in measures]
        if any(diversity):
            if not all(diversity):
                raise ValueError(
                    "diversity measures (alpha_nDCG, ERR_IA, NRBP, P_IA, StRecall) read subtopic qrels: "
                    "compute them apart from the other measures"
                )
            return _Evaluator(measures, as_diversity_qrels(qrels), self.score_precision)
        return _Evaluator(measures, as_qrels(qrels), self.score_precision)


provider = IgniteRankingProvider()
if IgniteRankingProvider.NAME not in ir_measures.providers.registry:
    ir_measures.providers.register(provider)
evaluator = provider.evaluator
iter_calc = provider.iter_calc
calc_aggregate = provider.calc_aggregate
calc = provider.calc
