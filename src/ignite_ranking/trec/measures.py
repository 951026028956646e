"""Measure names: trec_eval's, ir_measures' and ranx's, parsed into :class:`Measure` objects.

Three syntaxes are accepted, in every list of measure names of the library (the command line's
``-m``, :func:`~ignite_ranking.trec.evaluate`, the ir_measures provider):

- trec_eval: ``P_10``, ``ndcg_cut_10``, ``recip_rank``, ``map``, ``Rprec``, ``num_rel_ret``...;
  with trec_eval's parameter syntax ``P.5,10,20`` (one measure per cutoff, named ``P_5``,
  ``P_10``, ``P_20`` as trec_eval prints them), ``ndcg.1=0.5,2=3`` (custom NDCG gains per
  relevance level, see trec_eval's ``m_ndcg.c``); a bare ``P``, ``recall``, ``map_cut``,
  ``ndcg_cut`` or ``success`` takes trec_eval's default cutoffs; ``official`` and ``all_trec``
  name trec_eval's sets (:data:`SETS`, every measure of them computed); the other measures'
  parameters too: ``iprec_at_recall.0.1,0.5``, ``Rprec_mult.0.2``, ``relative_P.5``, ``unj.5``
  (one measure per parameter), ``11pt_avg.0.2,0.8``, ``utility.1,-1,0,0``, ``set_F.0.5``,
  ``relstring.20``, ``G.1=2`` (one measure, named ``11pt_avg_0.2,0.8``...).
- ir_measures (https://ir-measur.es): ``nDCG@10``, ``nDCG``, ``P@5``, ``P(rel=2)@5``,
  ``R@100``, ``AP``, ``AP@100``, ``RR``, ``RR@10``, ``Success@1``, ``Rprec``, ``NumQ``,
  ``NumRel``, ``NumRet``, ``NumRelRet``, ``nDCG(gains={0: 0, 1: 1, 2: 3})@10``,
  ``nDCG(dcg='exp-log2')``, ``RBP(rel=1, p=0.8)``, cwl_eval's ``BPM(T=1.0, max_rel=3)@10``,
  ``INST(max_rel=3)``, ``SDCG(max_rel=3)@10``, ``NERR10(p=0.9, max_rel=3)``, trec_eval's set
  measures ``SetP``, ``SetF(beta=0.5)``, ``IPrec@0.5``... (see :data:`MEASURE_HELP`;
  case-sensitive, as ir_measures writes them).
- ranx-style lowercase names with ``@k`` or ``_k``: ``mrr@10``, ``ndcg@10``, ``ndcg_burges@5``,
  ``precision@10``, ``recall@100``, ``map@100``, ``hit_rate@10``, ``r-precision``.

Example:
    >>> [m.name for m in parse_measures(["P.5,10", "nDCG@10", "mrr@10"])]
    ['P_5', 'P_10', 'nDCG@10', 'mrr@10']
    >>> parse_measures(["P(rel=2)@5"])[0]
    Measure(name='P(rel=2)@5', family='P', k=5, rel=2, gains=None, p=None, judged_only=False, params=())
    >>> parse_measures(["rbp.p=0.8", "RBP(p=0.8)", "P(judged_only=True)@10"])[2].judged_only
    True
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["FAMILIES", "MEASURE_HELP", "SETS", "Measure", "parse_measure", "parse_measures"]

#: What each family computes, for a query with R relevant documents (judged ``rel >= level``).
FAMILIES = {
    "P": "relevant documents in the top k / k",
    "recall": "relevant documents in the top k / R",
    "map": "sum of P@i over the ranks i <= k of relevant documents, / R",
    "recip_rank": "1 / rank of the first relevant document (0 if none in the top k)",
    "success": "1 if a relevant document is in the top k",
    "Rprec": "relevant documents in the top R / R",
    "ndcg": "DCG@k / ideal DCG@k, gain = the judged grade (or a custom gain per grade)",
    "ndcg_burges": "NDCG with gain 2**grade - 1",
    "num_q": "number of queries (summed, not averaged)",
    "num_ret": "retrieved documents (summed)",
    "num_rel": "relevant documents R (summed)",
    "num_rel_ret": "relevant documents retrieved (summed)",
    "rbp": "rank-biased precision (1 - p) * sum of gain_i * p**(i - 1), gain = grade / max grade",
    "rbp_resid": "RBP's residual: p**n + (1 - p) * sum of p**(i - 1) over unjudged ranks i",
    "bpref": "1/R * sum over relevant d of 1 - min(nonrelevant above d, R) / min(N, R)",
    "err": "expected reciprocal rank, stop probability (2**grade - 1) / 2**4",
    "nerr": "ERR / ideal ERR",
    "judged": "judged documents in the top k / min(k, retrieved)",
    "gm_map": "AP; summarised by the geometric mean of max(AP, 1e-5) over queries",
    "gm_bpref": "bpref; summarised by the geometric mean of max(bpref, 1e-5) over queries",
    "iprec_at_recall": "max precision at ranks at or after the first reaching recall x (x*R rounded)",
    "11pt_avg": "mean of iprec_at_recall over recall points (0, 0.1, ..., 1 by default)",
    "Rprec_mult": "relevant documents in the top x*R (+0.9, truncated) / that many",
    "relative_P": "relevant documents in the top k / min(k, R)",
    "infAP": "inferred AP (Yilmaz and Aslam 2006): pooled-but-unjudged documents skipped",
    "utility": "p1*relret + p2*nonrelret + p3*relnotret + p4*nonrelnotret (default 1,-1,0,0)",
    "binG": "1/R * sum over relevant retrieved d of 1 / log2(2 + non-relevant above d)",
    "G": "trec_eval's normalized gain G (m_G.c), graded",
    "ndcg_rel": "NDCG averaged over the ranks of the relevant documents (m_ndcg_rel.c)",
    "Rndcg": "NDCG averaged at the R-level boundaries of the ideal ranking (m_Rndcg.c)",
    "set_P": "relevant retrieved / retrieved",
    "set_recall": "relevant retrieved / R",
    "set_relative_P": "relevant retrieved / min(retrieved, R)",
    "set_map": "set_P * set_recall",
    "set_F": "(1 + beta) * P * R / (beta * P + R) over the retrieved set (beta default 1)",
    "num_nonrel_judged_ret": "retrieved documents judged non-relevant (summed)",
    "unj": "unjudged documents in the top k / k",
    "relstring": "the grades of the top n (default 10) documents as a string",
    "runid": "the run's tag",
    "rbp_rel": "RBP with binary gains: (1 - p) * sum of p**(i - 1) over ranks i of relevant documents",
    # cwl_eval's C/W/L measures (trec/cwl.py): expected utility sum of W(i) * gain_i, gains scaled
    # to [0, 1] by min_rel/max_rel, over cwl_eval's 1000 ranks
    "bpm": "C/W/L Bejeweled Player Model: continue while gain < T and rank < K",
    "inst": "C/W/L INST: C(i) = ((i + T + T_i - 1) / (i + T + T_i))**2, T_i = T - gain so far",
    "insq": "C/W/L INSQ: C(i) = ((i + 2T - 1) / (i + 2T))**2",
    "sdcg": "C/W/L scaled DCG@k: DCG@k of the scaled gains / sum of 1/log2(i + 1) over i <= k",
    "nerr8": "C/W/L NERR (Eq. 8): C(i) = 1 - gain_i for i < k",
    "nerr9": "C/W/L NERR (Eq. 9): C(i) = i / (i + 1) * (1 - gain_i) for i < k",
    "nerr10": "C/W/L NERR (Eq. 10): C(i) = p * (1 - gain_i)",
    "nerr11": "C/W/L NERR (Eq. 11): C(i) = ((i + 2T - 1) / (i + 2T))**2 * (1 - gain_i)",
}
#: cwl_eval's families and the parameters they take besides min_rel and max_rel (``p`` is
#: :attr:`Measure.p`; ``T`` the last of :attr:`Measure.params`).
CWL_FAMILIES = {
    "bpm": ("T",),
    "inst": ("T",),
    "insq": ("T",),
    "sdcg": (),
    "nerr8": (),
    "nerr9": (),
    "nerr10": ("p",),
    "nerr11": ("T",),
}
_CWL_CUTOFF = ("bpm", "sdcg", "nerr8", "nerr9")  # their cutoff is a parameter, and required
_DCG = {"ndcg": ("log2", "exp-log2"), "sdcg": ("log2",)}  # ir_measures' dcg= choices
COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")
#: Families whose value is a string: printed, never averaged (not in ``EvaluationResult.values``).
TEXTS = ("runid", "relstring")

_DEFAULT_CUTOFFS = {
    "P": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "recall": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "map_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "ndcg_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "success": (1, 5, 10),
    "relative_P": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "unj": (5, 10, 20),
    "iprec_at_recall": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "Rprec_mult": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
}
# trec_eval measure name -> family; the ones with cutoffs print as name_k.
_TREC_CUT = {
    **{"P": "P", "recall": "recall", "map_cut": "map", "ndcg_cut": "ndcg", "success": "success"},
    **{"relative_P": "relative_P", "unj": "unj"},
}
# trec_eval measures with one real cutoff per measure, printed as name_%3.2f (iprec_at_recall_0.10)
_TREC_REAL_CUT = ("iprec_at_recall", "Rprec_mult")
# trec_eval measures with a list of real parameters, printed as name_PARAMS, and their defaults
_TREC_REAL_PARAMS = {
    "utility": (1.0, -1.0, 0.0, 0.0),
    "11pt_avg": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "set_F": (1.0,),
    "relstring": (10.0,),
}
# trec_eval measures with custom gains GRADE=GAIN, printed as name_PARAMS
_TREC_GAINS = ("ndcg", "G", "ndcg_rel", "Rndcg")
_TREC_PLAIN = {
    "map": "map",
    "recip_rank": "recip_rank",
    "Rprec": "Rprec",
    "ndcg": "ndcg",
    "num_q": "num_q",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "rbp": "rbp",
    "rbp_resid": "rbp_resid",
    "bpref": "bpref",
    **{name: name for name in ("runid", "gm_map", "gm_bpref", "infAP", "binG", "G", "ndcg_rel", "Rndcg")},
    **{name: name for name in ("set_P", "set_recall", "set_relative_P", "set_map", "num_nonrel_judged_ret")},
}
# trec_eval's default RBP persistence, and ir_measures' (RBP(p=...) spells it out).
_TREC_RBP_P = 0.9
_IR_RBP_P = 0.8
#: trec_eval's measure sets, in the order trec_eval computes and prints them (measures.c).
SETS = {
    "official": (
        *("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref"),
        *("recip_rank", "iprec_at_recall", "P"),
    ),
    "all_trec": (
        *("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref"),
        *("recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref"),
        *("Rprec_mult", "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut"),
        *("map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map"),
        *("set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj"),
    ),
}
# ir_measures name -> (family, whether a cutoff is allowed, whether rel= is allowed)
_IR_MEASURES = {
    "nDCG": ("ndcg", True, False),
    "P": ("P", True, True),
    "R": ("recall", True, False),
    "AP": ("map", True, True),
    "RR": ("recip_rank", True, True),
    "Success": ("success", True, True),
    "Rprec": ("Rprec", False, True),
    "NumQ": ("num_q", False, False),
    "NumRel": ("num_rel", False, False),
    "NumRet": ("num_ret", False, True),
    "NumRelRet": ("num_rel_ret", False, True),
    "RBP": ("rbp", True, True),
    "Bpref": ("bpref", False, True),
    "ERR": ("err", True, False),
    "nERR": ("nerr", True, False),
    "Judged": ("judged", True, False),
    "BPM": ("bpm", True, False),
    "INST": ("inst", False, False),
    "INSQ": ("insq", False, False),
    "SDCG": ("sdcg", True, False),
    "NERR8": ("nerr8", True, False),
    "NERR9": ("nerr9", True, False),
    "NERR10": ("nerr10", False, False),
    "NERR11": ("nerr11", False, False),
    "SetP": ("set_P", False, True),
    "SetRelP": ("set_relative_P", False, True),
    "SetR": ("set_recall", False, True),
    "SetF": ("set_F", False, True),
    "SetAP": ("set_map", False, True),
    "IPrec": ("iprec_at_recall", False, True),
    "infAP": ("infAP", False, True),
}
# ir_measures families with a judged_only= parameter (Sakai's condensed lists): any family scored
# on the ranked batch takes it by a line here (and judged_only=Any() in the provider's entry)
_JUDGED_ONLY = ("P", "recip_rank", "map", "ndcg", "ndcg_burges", "recall", "success", "Rprec")
_JUDGED_ONLY += ("set_P", "set_relative_P", "set_F", "set_map", "iprec_at_recall")
# ranx-style (lowercase) family names
_RANX = {
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "recip_rank": "recip_rank",
    "hit_rate": "success",
    "hits": "success",
    "success": "success",
    "precision": "P",
    "p": "P",
    "recall": "recall",
    "map": "map",
    "map_cut": "map",
    "ap": "map",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "ndcg_burges": "ndcg_burges",
    "r-precision": "Rprec",
    "r_precision": "Rprec",
    "rprec": "Rprec",
}
_RANX_NAME = re.compile(r"^(?P<name>[a-z_-]+?)(?:[@_](?P<k>\d+))?$")
_IR_NAME = re.compile(r"^(?P<name>[A-Za-z]+\d*)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>\d+))?$")
_TREC_PARAMS = re.compile(r"^(?P<name>[A-Za-z0-9_]+?)\.(?P<params>.*)$")
# printed names of cutoff measures: relative_P_10, unj_5, iprec_at_recall_0.10, Rprec_mult_0.20
_TREC_PRINTED = re.compile(r"^(?P<name>relative_P|unj|iprec_at_recall|Rprec_mult)_(?P<params>[0-9.]+)$")
_IR_RECALL = re.compile(r"^IPrec(?:\((?P<params>[^()]*)\))?@(?P<recall>[0-9.]+)$")

MEASURE_HELP = """\
measures (trec_eval, ir_measures or ranx names; no cutoff = the whole ranking):
  trec_eval  P.5,10  recall.100  map  map_cut.10  ndcg  ndcg_cut.10  ndcg.1=0.5,2=3
             recip_rank  success.1,5  Rprec  num_q  num_ret  num_rel  num_rel_ret
             P_10  ndcg_cut_10 ...  (a bare P, recall, map_cut, ndcg_cut, success takes
             trec_eval's default cutoffs);  official, all_trec: trec_eval's sets
             rbp  rbp.p=0.8  rbp_resid  rbp_resid.p=0.8  bpref  runid  gm_map  gm_bpref
             iprec_at_recall.0,.5  11pt_avg  Rprec_mult.0.2,1  relative_P.5  relstring.10
             infAP  utility.1,-1,0,0  binG  G  ndcg_rel  Rndcg (gains as ndcg)  set_P
             set_recall  set_relative_P  set_map  set_F.0.5  num_nonrel_judged_ret  unj.5
  ir_measures  nDCG@10  nDCG  P@5  P(rel=2)@5  R@100  AP  AP@100  RR  RR@10  Success@1
             Rprec  NumQ  NumRel  NumRet  NumRelRet  RBP(p=0.8)  Bpref  ERR@20  nERR@20
             Judged@10  P(judged_only=True)@10 (also R, RR, AP, nDCG, Success, Rprec)
             nDCG(gains={0:0,1:1,2:3})@10  nDCG(dcg='exp-log2')@10  RBP(rel=1,p=0.8)
             cwl_eval's C/W/L measures (max_rel= required, min_rel= 0 by default):
             BPM(T=1.0,max_rel=3)@10  INST(T=1.0,max_rel=3)  INSQ(max_rel=3)
             SDCG(max_rel=3)@10  NERR8(max_rel=3)@10  NERR9(max_rel=3)@10
             NERR10(p=0.9,max_rel=3)  NERR11(T=1.0,max_rel=3)
             trec_eval's set measures: SetP  SetRelP  SetR  SetF(beta=0.5)  SetAP
             IPrec@0.5  infAP
  ranx       mrr@10  ndcg@10  ndcg_burges@10  precision@10  recall@100  map@100
             hit_rate@10  r-precision
NDCG gains are the judged grades whatever -l says (trec_eval's rule); ndcg_burges uses
2**grade - 1. Counts (num_*, Num*) are summed over queries, gm_* geometric means, the
others averaged.
Unjudged documents (absent from the qrels, or graded -1) are non-relevant except for
bpref, rbp_resid, Judged and judged-only measures (-J: every measure judged-only)."""


@dataclass(frozen=True)
class Measure:
    """One measure to compute.

    Attributes:
        name: the name reported for it (``P_5``, ``nDCG@10``, ``mrr@10``...).
        family: a key of :data:`FAMILIES`.
        k: the cutoff, None for the whole ranking.
        rel: the relevance level of this measure (ir_measures' ``rel=``), None for the
            evaluation's level (``-l``).
        gains: custom NDCG gains as ``((grade, gain), ...)`` in the order given (trec_eval's
            ``ndcg.1=0.5,2=3``), None for the grades themselves.
        p: the persistence of ``rbp``, ``rbp_rel``, ``rbp_resid`` and ``nerr10``, None for the
            other families.
        judged_only: computed on the condensed list, without the unjudged documents
            (ir_measures' ``judged_only=True``; ``evaluate(judged_only=True)`` sets it on all).
        params: real parameters of the measures that take them: cwl_eval's families'
            ``(min_rel, max_rel)``, then ``T`` for those with one (see :data:`CWL_FAMILIES`);
            the recall point (``iprec_at_recall``), the multiple of R (``Rprec_mult``), the
            recall points (``11pt_avg``), the four coefficients (``utility``), beta (``set_F``),
            the length (``relstring``); empty for the other families.
    """

    name: str
    family: str
    k: int | None = None
    rel: int | None = None
    gains: tuple[tuple[int, float], ...] | None = None
    p: float | None = None
    judged_only: bool = False
    params: tuple[float, ...] = ()

    @property
    def is_count(self) -> bool:
        """Whether the measure is a count, summed over queries instead of averaged."""
        return self.family in COUNTS

    @property
    def is_text(self) -> bool:
        """Whether the measure's value is a string (``runid``, ``relstring``)."""
        return self.family in TEXTS


def _cutoff(text: str, name: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"measure {name!r}: a cutoff must be a positive integer, got {text!r}")
    return int(text)


def _c_number(text: str, pattern: str) -> str | None:
    """The leading number of ``text`` as C's atol/atof read it (None if there is none)."""
    match = re.match(pattern, text.strip())
    return match[0] if match else None


def _atol(text: str, name: str) -> int:
    """A cutoff as trec_eval reads it (``atol``: ``23.4`` is 23); it must be positive."""
    number = _c_number(text, r"[+-]?\d+")
    if number is None or int(number) < 1:
        raise ValueError(f"measure {name!r}: a cutoff must be a positive integer, got {text!r}")
    return int(number)


def _atof(text: str, name: str) -> float:
    """A real parameter as trec_eval reads it (``atof``: ``.5``, ``1e-1``...)."""
    number = _c_number(text, r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    if number is None:
        raise ValueError(f"measure {name!r}: a parameter must be a number, got {text!r}")
    return float(number)


def _check(measure: Measure) -> Measure:
    if measure.family == "P" and measure.k is None:
        raise ValueError(f"measure {measure.name!r}: precision needs a cutoff, e.g. P@10 or P_10")
    if measure.k is not None and measure.family in ("Rprec", "bpref", "rbp_resid", *COUNTS):
        raise ValueError(f"measure {measure.name!r}: {measure.family} takes no cutoff")
    return measure


def _trec_params(name: str, base: str, params: str) -> list[Measure]:
    """``P.5,10`` and the like, ``ndcg.1=0.5,2=3``: trec_eval's parameter syntax (its name is
    what precedes the first dot; cutoffs are read as C's ``atol``, reals as ``atof``)."""
    if not params:
        raise ValueError(f"measure {name!r}: expected parameters after the dot, got none")
    if base in _TREC_GAINS:
        gains = []
        for pair in params.split(","):
            level, _, gain = pair.partition("=")
            if not re.fullmatch(r"[+-]?\d+", level.strip()):
                raise ValueError(f"measure {name!r}: expected {base}.GRADE=GAIN,..., got {pair!r}")
            try:
                value = float(gain)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):  # trec_eval compares gains through C's (int) conversion
                raise ValueError(f"measure {name!r}: a gain must be a finite number, got {gain!r}")
            gains.append((int(level), value))
        return [Measure(f"{base}_{params}", base, None, None, tuple(gains))]
    if base in ("rbp", "rbp_resid"):
        key, _, value = params.partition("=")
        p = _persistence(value, name) if key.strip() == "p" else None
        if p is None:
            raise ValueError(f"measure {name!r}: expected {base}.p=NUMBER, got {params!r}")
        return [Measure(f"{base}_{params}", base, p=p)]
    if base in _TREC_REAL_CUT:
        values = sorted(_atof(p, name) for p in params.split(","))
        if len(set(values)) < len(values):
            raise ValueError(f"measure {name!r}: duplicate parameters in {params!r}")
        return [Measure(f"{base}_{v:.2f}", base, params=(v,)) for v in values]
    if base in _TREC_REAL_PARAMS:
        values = tuple(_atof(p, name) for p in params.split(","))
        if base == "utility" and len(values) != 4:
            raise ValueError(f"measure {name!r}: utility takes 4 coefficients, got {params!r}")
        return [Measure(f"{base}_{params}", base, params=values)]
    if base not in _TREC_CUT:
        raise ValueError(
            f"measure {name!r}: trec_eval parameters (NAME.PARAMS) are supported for "
            f"{', '.join([*_TREC_CUT, *_TREC_REAL_CUT, *_TREC_REAL_PARAMS, *_TREC_GAINS])}, rbp "
            f"and rbp_resid, got {base!r}"
        )
    cutoffs = sorted({_atol(p, name) for p in params.split(",")})
    return [Measure(f"{base}_{k}", _TREC_CUT[base], k) for k in cutoffs]


def _persistence(text: str, name: str) -> float:
    try:
        p = float(text)
    except ValueError:
        p = math.nan
    if not 0.0 < p < 1.0:
        raise ValueError(f"measure {name!r}: the persistence p must be a number in (0, 1), got {text!r}")
    return p


def _split_params(text: str) -> list[str]:
    """``rel=2, gains={0: 0, 1: 3}`` split at the commas outside braces."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def _gain_map(value: str, name: str) -> tuple[tuple[int, float], ...]:
    """ir_measures' ``gains={0: 0, 1: 1, 2: 3}``: integer grades >= 0 to integer gains >= 0."""
    pairs = []
    body = value[1:-1] if value.startswith("{") and value.endswith("}") else None
    for pair in filter(None, (p.strip() for p in (body or "!").split(","))):
        level, colon, gain = (x.strip() for x in pair.partition(":"))
        if not (colon and re.fullmatch(r"\d+", level) and re.fullmatch(r"\d+", gain)):
            raise ValueError(
                f"measure {name!r}: gains must map grades >= 0 to integer gains >= 0, as in "
                f"gains={{0: 0, 1: 1, 2: 3}}; got {value!r}"
            )
        pairs.append((int(level), float(gain)))
    return tuple(pairs)


def _cwl_param(key: str, value: str, name: str) -> float:
    """A C/W/L parameter: ``T`` a positive number, ``min_rel``/``max_rel`` integers."""
    if key != "T":
        if not re.fullmatch(r"[+-]?\d+", value):
            raise ValueError(f"measure {name!r}: {key} must be an integer, got {value!r}")
        return int(value)
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not number > 0 or math.isinf(number):
        raise ValueError(f"measure {name!r}: T must be a positive number, got {value!r}")
    return number


def _ir_measure(name: str, match: re.Match, recall: float | None = None) -> Measure:
    family, takes_cutoff, takes_rel = _IR_MEASURES[match["name"]]
    rel = 1 if match["name"] == "NumRelRet" else None
    p = {"rbp": _IR_RBP_P, "nerr10": 0.9}.get(family)  # ir_measures' defaults
    judged_only, gains, dcg = False, None, "log2"
    extra = (1.0,) if family == "set_F" else (recall,) if recall is not None else ()  # SetF, IPrec
    cwl: dict[str, float] = {}  # C/W/L parameters, with ir_measures' defaults
    if family in CWL_FAMILIES:
        cwl = {"min_rel": 0, **({"T": 1.0} if "T" in CWL_FAMILIES[family] else {})}
    for param in _split_params(match["params"] or ""):
        key, _, value = param.partition("=")
        key, value = key.strip(), value.strip()
        if key == "rel" and takes_rel and re.fullmatch(r"\d+", value):
            rel = int(value)
        elif key == "dcg" and value.strip("'\"") in _DCG.get(family, ()):
            dcg = value.strip("'\"")
        elif key == "gains" and family == "ndcg":
            gains = _gain_map(value, name)
        elif key == "p" and family in ("rbp", "nerr10"):
            p = _persistence(value, name)
        elif key == "judged_only" and family in _JUDGED_ONLY and value in ("True", "False"):
            judged_only = value == "True"
        elif family in CWL_FAMILIES and key in ("min_rel", "max_rel", *CWL_FAMILIES[family]):
            cwl[key] = _cwl_param(key, value, name)
        elif key == "beta" and family == "set_F":
            extra = (_atof(value, name),)
        elif key == "relative" and family == "set_P" and value in ("True", "False"):
            family = "set_relative_P" if value == "True" else family
        else:
            raise ValueError(
                f"measure {name!r}: parameter {param!r} is not supported (supported: rel=INT for "
                "P, AP, RR, Success, Rprec, NumRet, Bpref, RBP, SetP, SetR, SetF, SetAP, IPrec, infAP; "
                "dcg='log2'/'exp-log2' and gains={GRADE: GAIN, ...} for nDCG; p=NUMBER for RBP, "
                "NERR10; beta=NUMBER for SetF; relative=True for SetP; judged_only=True/False for P, "
                "R, RR, AP, nDCG, Success, Rprec, SetP, SetF, SetAP, IPrec; T=NUMBER, min_rel=INT, "
                "max_rel=INT for BPM, INST, INSQ, SDCG, NERR8-11 (T for BPM, INST, INSQ, NERR11))"
            )
    k = _cutoff(match["k"], name) if match["k"] is not None else None
    if k is not None and not takes_cutoff:
        raise ValueError(f"measure {name!r}: {match['name']} takes no cutoff")
    if family == "num_ret" and rel is not None:  # ir_measures: NumRet(rel=L) counts relevant ones
        family = "num_rel_ret"
    if family == "rbp" and rel is not None:  # binary gains (ir_measures' RBP(rel=L))
        family = "rbp_rel"
    if dcg == "exp-log2" and family == "ndcg":
        if gains is not None:
            raise ValueError(f"measure {name!r}: nDCG takes gains= or dcg='exp-log2', not both")
        family = "ndcg_burges"
    if family in CWL_FAMILIES:
        if "max_rel" not in cwl:
            raise ValueError(f"measure {name!r}: {match['name']} needs max_rel=INT (the largest grade)")
        if not cwl["min_rel"] < cwl["max_rel"]:
            raise ValueError(f"measure {name!r}: min_rel must be less than max_rel, got {cwl}")
        if family in _CWL_CUTOFF and k is None:
            raise ValueError(f"measure {name!r}: {match['name']} needs a cutoff, e.g. {match['name']}@10")
    if family == "iprec_at_recall" and not extra:
        raise ValueError(f"measure {name!r}: IPrec needs a recall point, e.g. IPrec@0.5")
    params = tuple(float(cwl[key]) for key in ("min_rel", "max_rel", "T") if key in cwl) or extra
    return Measure(name, family, k, rel, gains, p, judged_only, params)


def _expand(name: str) -> list[Measure]:
    text = name.strip()
    if text in SETS:
        return [m for member in SETS[text] for m in _expand(member)]
    if text in _DEFAULT_CUTOFFS:
        return _trec_params(name, text, ",".join(map(str, _DEFAULT_CUTOFFS[text])))
    if text in _TREC_REAL_PARAMS:  # trec_eval prints the bare name with its default parameters
        return [Measure(text, text, params=_TREC_REAL_PARAMS[text])]
    if text in _TREC_PLAIN:
        family = _TREC_PLAIN[text]
        return [Measure(text, family, p=_TREC_RBP_P if family in ("rbp", "rbp_resid") else None)]
    match = _TREC_PRINTED.match(text) or _TREC_PARAMS.match(text)
    if match:
        return _trec_params(name, match["name"], match["params"])
    match = _IR_RECALL.match(text)
    if match:
        recall = _atof(match["recall"], name)
        return [_ir_measure(text, _IR_NAME.match(f"IPrec({match['params'] or ''})"), recall)]
    match = _IR_NAME.match(text)
    if (
        match
        and match["name"] in _IR_MEASURES
        and (match["params"] is not None or text[0].isupper() or text.startswith(("nERR", "infAP")))
    ):
        return [_check(_ir_measure(text, match))]
    match = _RANX_NAME.match(text.lower())
    family = _RANX.get(match["name"]) if match else None
    if match is None or family is None:
        raise ValueError(
            f"unknown measure {name!r}; expected a trec_eval name (P_10, P.5,10, ndcg_cut.10, map, "
            "recip_rank, Rprec, num_rel...), an ir_measures name (nDCG@10, P(rel=2)@5, AP, RR@10...) "
            "or a ranx name (mrr@10, ndcg@10, precision@10...)"
        )
    k = _cutoff(match["k"], name) if match["k"] is not None else None
    return [_check(Measure(text, family, k))]


def parse_measures(names: Iterable[str | Measure]) -> list[Measure]:
    """Parses measure names of any of the three syntaxes, expanding parameter lists and sets.

    Args:
        names: measure names (or already parsed :class:`Measure` objects, kept as they are).

    Returns:
        The measures, in the order given; a name given twice (or produced twice by expansion)
        is kept once.

    Raises:
        ValueError: an unknown name, a bad parameter or cutoff, or an empty list.

    Example:
        >>> [m.name for m in parse_measures(["official"])][:5]
        ['runid', 'num_q', 'num_ret', 'num_rel', 'num_rel_ret']
        >>> parse_measures(["ndcg.1=0.5,2=3"])[0].gains
        ((1, 0.5), (2, 3.0))
    """
    if isinstance(names, str):
        raise TypeError(f"names must be a list of measure names, got the string {names!r}")
    measures: dict[str, Measure] = {}
    for name in names:
        if isinstance(name, Measure):
            measures.setdefault(name.name, name)
            continue
        if not isinstance(name, str):
            raise TypeError(f"a measure name must be a str, got {type(name).__name__}: {name!r}")
        for measure in _expand(name):
            measures.setdefault(measure.name, measure)
    if not measures:
        raise ValueError("measures must name at least one measure")
    return list(measures.values())


def parse_measure(name: str) -> Measure:
    """Parses one name that stands for one measure (``P_10``, ``nDCG@10``, ``mrr@10``...).

    Raises:
        ValueError: an unknown name, or one that stands for several measures (``P.5,10``).
    """
    found = parse_measures([name])
    if len(found) != 1:
        raise ValueError(f"measure {name!r} stands for {len(found)} measures; use parse_measures")
    return found[0]
