"""Measure names: trec_eval's, ir_measures' and ranx's, parsed into :class:`Measure` objects.

Three syntaxes are accepted, in every list of measure names of the library (the command line's
``-m``, :func:`~ignite_ranking.trec.evaluate`, the ir_measures provider):

- trec_eval: ``P_10``, ``ndcg_cut_10``, ``recip_rank``, ``map``, ``Rprec``, ``num_rel_ret``...;
  with trec_eval's parameter syntax ``P.5,10,20`` (one measure per cutoff, named ``P_5``,
  ``P_10``, ``P_20`` as trec_eval prints them), ``ndcg.1=0.5,2=3`` (custom NDCG gains per
  relevance level, see trec_eval's ``m_ndcg.c``); a bare ``P``, ``recall``, ``map_cut``,
  ``ndcg_cut`` or ``success`` takes trec_eval's default cutoffs; ``official`` and ``all_trec``
  name trec_eval's sets (the measures of them that are supported, see :data:`SETS`).
- ir_measures (https://ir-measur.es): ``nDCG@10``, ``nDCG``, ``P@5``, ``P(rel=2)@5``,
  ``R@100``, ``AP``, ``AP@100``, ``RR``, ``RR@10``, ``Success@1``, ``Rprec``, ``NumQ``,
  ``NumRel``, ``NumRet``, ``NumRelRet``, ``nDCG(gains={0: 0, 1: 1, 2: 3})@10``,
  ``nDCG(dcg='exp-log2')``, ``RBP(rel=1, p=0.8)``, cwl_eval's ``BPM(T=1.0, max_rel=3)@10``,
  ``INST(max_rel=3)``, ``SDCG(max_rel=3)@10``, ``NERR10(p=0.9, max_rel=3)``... (case-sensitive,
  as ir_measures writes them).
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
COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret")

_DEFAULT_CUTOFFS = {
    "P": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "recall": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "map_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "ndcg_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "success": (1, 5, 10),
}
# trec_eval measure name -> family; the ones with cutoffs print as name_k.
_TREC_CUT = {"P": "P", "recall": "recall", "map_cut": "map", "ndcg_cut": "ndcg", "success": "success"}
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
}
# trec_eval's default RBP persistence, and ir_measures' (RBP(p=...) spells it out).
_TREC_RBP_P = 0.9
_IR_RBP_P = 0.8
#: trec_eval's measure sets, restricted to the supported measures, and what they leave out.
SETS = {
    "official": (
        ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P"),
        ("runid", "gm_map", "iprec_at_recall"),
    ),
    "all_trec": (
        (
            *("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P"),
            *("recall", "ndcg", "success", "map_cut", "ndcg_cut", "rbp", "rbp_resid"),
        ),
        (
            *("runid", "gm_map", "iprec_at_recall", "relstring", "unj"),
            *("infAP", "gm_bpref", "utility", "11pt_avg", "relative_P", "Rprec_mult", "ndcg_rel"),
            *("Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F"),
            "num_nonrel_judged_ret",
        ),
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
}
# ir_measures families with a judged_only= parameter (Sakai's condensed lists): any family scored
# on the ranked batch takes it by a line here (and judged_only=Any() in the provider's entry)
_JUDGED_ONLY = ("P", "recip_rank", "map", "ndcg", "ndcg_burges", "recall", "success", "Rprec")
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
_TREC_PARAMS = re.compile(r"^(?P<name>[A-Za-z_]+)\.(?P<params>.+)$")

MEASURE_HELP = """\
measures (trec_eval, ir_measures or ranx names; no cutoff = the whole ranking):
  trec_eval  P.5,10  recall.100  map  map_cut.10  ndcg  ndcg_cut.10  ndcg.1=0.5,2=3
             recip_rank  success.1,5  Rprec  num_q  num_ret  num_rel  num_rel_ret
             P_10  ndcg_cut_10 ...  (a bare P, recall, map_cut, ndcg_cut, success takes
             trec_eval's default cutoffs);  official, all_trec: trec_eval's sets, the
             measures of them that are supported
             rbp  rbp.p=0.8  rbp_resid  rbp_resid.p=0.8  bpref
  ir_measures  nDCG@10  nDCG  P@5  P(rel=2)@5  R@100  AP  AP@100  RR  RR@10  Success@1
             Rprec  NumQ  NumRel  NumRet  NumRelRet  RBP(p=0.8)  Bpref  ERR@20  nERR@20
             Judged@10  P(judged_only=True)@10 (also R, RR, AP, nDCG, Success, Rprec)
             nDCG(gains={0:0,1:1,2:3})@10  nDCG(dcg='exp-log2')@10  RBP(rel=1,p=0.8)
             cwl_eval's C/W/L measures (max_rel= required, min_rel= 0 by default):
             BPM(T=1.0,max_rel=3)@10  INST(T=1.0,max_rel=3)  INSQ(max_rel=3)
             SDCG(max_rel=3)@10  NERR8(max_rel=3)@10  NERR9(max_rel=3)@10
             NERR10(p=0.9,max_rel=3)  NERR11(T=1.0,max_rel=3)
  ranx       mrr@10  ndcg@10  ndcg_burges@10  precision@10  recall@100  map@100
             hit_rate@10  r-precision
NDCG gains are the judged grades whatever -l says (trec_eval's rule); ndcg_burges uses
2**grade - 1. Counts (num_*, Num*) are summed over queries, the others averaged.
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
            empty for the other families.
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


def _cutoff(text: str, name: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"measure {name!r}: a cutoff must be a positive integer, got {text!r}")
    return int(text)


def _check(measure: Measure) -> Measure:
    if measure.family == "P" and measure.k is None:
        raise ValueError(f"measure {measure.name!r}: precision needs a cutoff, e.g. P@10 or P_10")
    if measure.k is not None and measure.family in ("Rprec", "bpref", "rbp_resid", *COUNTS):
        raise ValueError(f"measure {measure.name!r}: {measure.family} takes no cutoff")
    return measure


def _trec_params(name: str, base: str, params: str) -> list[Measure]:
    """``P.5,10`` and the like, ``ndcg.1=0.5,2=3``: trec_eval's parameter syntax."""
    if base == "ndcg":
        gains = []
        for pair in params.split(","):
            level, _, gain = pair.partition("=")
            if not re.fullmatch(r"[+-]?\d+", level.strip()):
                raise ValueError(f"measure {name!r}: expected ndcg.GRADE=GAIN,..., got {pair!r}")
            try:
                gains.append((int(level), float(gain)))
            except ValueError:
                raise ValueError(f"measure {name!r}: a gain must be a number, got {gain!r}") from None
        return [Measure(f"ndcg_{params}", "ndcg", None, None, tuple(gains))]
    if base in ("rbp", "rbp_resid"):
        key, _, value = params.partition("=")
        p = _persistence(value, name) if key.strip() == "p" else None
        if p is None:
            raise ValueError(f"measure {name!r}: expected {base}.p=NUMBER, got {params!r}")
        return [Measure(f"{base}_{params}", base, p=p)]
    if base not in _TREC_CUT:
        raise ValueError(
            f"measure {name!r}: trec_eval parameters (NAME.PARAMS) are supported for "
            f"{', '.join(_TREC_CUT)}, ndcg, rbp and rbp_resid, got {base!r}"
        )
    cutoffs = sorted({_cutoff(p.strip(), name) for p in params.split(",")})
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


def _ir_measure(name: str, match: re.Match) -> Measure:
    family, takes_cutoff, takes_rel = _IR_MEASURES[match["name"]]
    rel = 1 if match["name"] == "NumRelRet" else None
    p = {"rbp": _IR_RBP_P, "nerr10": 0.9}.get(family)  # ir_measures' defaults
    judged_only, gains, dcg = False, None, "log2"
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
        else:
            raise ValueError(
                f"measure {name!r}: parameter {param!r} is not supported (supported: rel=INT for "
                "P, AP, RR, Success, Rprec, NumRet, Bpref, RBP; dcg='log2'/'exp-log2' and "
                "gains={GRADE: GAIN, ...} for nDCG; p=NUMBER for RBP, NERR10; judged_only=True/False "
                "for P, R, RR, AP, nDCG, Success, Rprec; T=NUMBER, min_rel=INT, max_rel=INT for "
                "BPM, INST, INSQ, SDCG, NERR8-11 (T for BPM, INST, INSQ, NERR11))"
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
    params = tuple(float(cwl[key]) for key in ("min_rel", "max_rel", "T") if key in cwl)
    return Measure(name, family, k, rel, gains, p, judged_only, params)


def _expand(name: str) -> list[Measure]:
    text = name.strip()
    if text in SETS:
        return [m for member in SETS[text][0] for m in _expand(member)]
    if text in _DEFAULT_CUTOFFS:
        return _trec_params(name, text, ",".join(map(str, _DEFAULT_CUTOFFS[text])))
    if text in _TREC_PLAIN:
        family = _TREC_PLAIN[text]
        return [Measure(text, family, p=_TREC_RBP_P if family in ("rbp", "rbp_resid") else None)]
    match = _TREC_PARAMS.match(text)
    if match:
        return _trec_params(name, match["name"], match["params"])
    match = _IR_NAME.match(text)
    if (
        match
        and match["name"] in _IR_MEASURES
        and (match["params"] is not None or text[0].isupper() or text.startswith("nERR"))
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
        ['num_q', 'num_ret', 'num_rel', 'num_rel_ret', 'map']
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
