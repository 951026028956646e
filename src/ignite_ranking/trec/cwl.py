"""cwl_eval's C/W/L measures (BPM, INST, INSQ, SDCG, NERR8-11), vectorized over queries.

In the C/W/L framework (Moffat et al.) a user model is a continuation probability ``C(i)``: the
chance that a user who examined rank i goes on to rank i + 1. It gives each rank a weight

    W(i) = prod(C(j) for j < i) / sum over ranks r of prod(C(j) for j < r)

(the share of attention rank i gets) and the measure is the expected utility per document,
``sum of W(i) * gain_i``. These follow cwl_eval (Azzopardi et al.), as ir_measures calls it:

- gains: a judged grade g (negative grades count as 0) becomes
  ``(clip(g, min_rel, max_rel) - min_rel) / (max_rel - min_rel)``, in [0, 1]; a document absent
  from the qrels gains 0 (cwl_eval's lower bound).
- depth: the ranking is cwl_eval's 1000 ranks: the run's first 1000 documents, padded with
  zero-gain ranks when shorter. ``W`` is normalized over those 1000 ranks, so that measures whose
  ``C`` stays positive (INST, INSQ, NERR10, NERR11) read ranks past the run.
- C(i), rank i from 1, cumulative gain ``G(i) = gain_1 + ... + gain_i``:

  ========  =====================================================================
  BPM@K     1 if G(i) < T and i < K, else 0 (Zhang et al.'s static Bejeweled Player)
  INST      ``((i + T + T_i - 1) / (i + T + T_i))**2`` with ``T_i = T - G(i)``
  INSQ      ``((i + 2T - 1) / (i + 2T))**2``
  SDCG@k    ``log2(i + 1) / log2(i + 2)`` for i < k, else 0 (DCG@k / the DCG@k of all-1 gains)
  NERR8@k   ``1 - gain_i`` for i < k, else 0
  NERR9@k   ``i / (i + 1) * (1 - gain_i)`` for i < k, else 0
  NERR10    ``p * (1 - gain_i)``
  NERR11    ``((i + 2T - 1) / (i + 2T))**2 * (1 - gain_i)``
  ========  =====================================================================

Example:
    >>> gains = torch.nn.functional.pad(torch.tensor([[1.0, 0.0, 0.5]]), (0, DEPTH - 3))
    >>> round(float(expected_utility(continuation("insq", gains, None, None, 1.0), gains)[0]), 6)
    0.436767
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..kernels import RankedBatch
from .judgements import UNJUDGED

__all__ = ["DEPTH", "continuation", "cwl_values", "expected_utility", "scaled_gains"]

#: cwl_eval's ranking depth (its ``max_n``): the ranks every C/W/L measure reads.
DEPTH = 1000


def scaled_gains(labels: torch.Tensor, min_rel: int, max_rel: int) -> torch.Tensor:
    """``(n, DEPTH)`` gains in [0, 1] of ranked trec labels (grades, or negative markers)."""
    judged = (labels >= 0) | (labels == UNJUDGED)  # a negative grade is judged with grade 0
    grades = labels.clamp(min=0.0).clamp(min=min_rel, max=max_rel)
    gains = torch.where(judged, (grades - min_rel) / (max_rel - min_rel), 0.0)[:, :DEPTH]
    return torch.nn.functional.pad(gains, (0, DEPTH - gains.shape[1]))


def continuation(family: str, gains: torch.Tensor, k: int | None, p: float | None, T: float) -> torch.Tensor:
    """``(n, ranks)`` C(i) of a C/W/L family on gains; ``k`` for BPM, SDCG, NERR8, NERR9."""
    rank = torch.arange(1, gains.shape[1] + 1, dtype=torch.float64)
    before_k = rank < (k if k is not None else 0)
    insq = ((rank + 2.0 * T - 1.0) / (rank + 2.0 * T)) ** 2
    if family == "bpm":
        return ((gains.cumsum(dim=1) < T) & before_k).to(torch.float64)
    if family == "inst":
        remaining = T - gains.cumsum(dim=1)
        return ((rank + T + remaining - 1.0) / (rank + T + remaining)) ** 2
    if family == "insq":
        return insq.expand_as(gains)
    if family == "sdcg":
        return torch.where(before_k, torch.log(rank + 1.0) / torch.log(rank + 2.0), 0.0).expand_as(gains)
    if family == "nerr8":
        return torch.where(before_k, 1.0 - gains, 0.0)
    if family == "nerr9":
        return torch.where(before_k, rank / (rank + 1.0) * (1.0 - gains), 0.0)
    if family == "nerr10":
        assert p is not None
        return p * (1.0 - gains)
    if family == "nerr11":
        return insq * (1.0 - gains)
    raise ValueError(f"unknown C/W/L family {family!r}")  # pragma: no cover - parse_measures refuses it


def expected_utility(c: torch.Tensor, gains: torch.Tensor) -> torch.Tensor:
    """``(n,)`` sum of W(i) * gain_i, W from the continuation probabilities ``c`` (``(n, ranks)``)."""
    reach = torch.nn.functional.pad(c[:, :-1].cumprod(dim=1), (1, 0), value=1.0)
    return (reach * gains).sum(dim=1) / reach.sum(dim=1)


def cwl_values(
    ranked: RankedBatch, family: str, cutoffs: Sequence[int], p: float | None, params: Sequence[float]
) -> torch.Tensor:
    """``(n, len(cutoffs))`` values of a C/W/L family on a ranked trec batch; the cutoffs are the
    families' k (BPM's K), ignored by those without one; ``params``: ``(min_rel, max_rel)``, then
    ``T`` for the families with one."""
    gains = scaled_gains(ranked.labels, int(params[0]), int(params[1]))
    T = float(params[2]) if len(params) > 2 else 1.0
    columns = [expected_utility(continuation(family, gains, k, p, T), gains) for k in cutoffs]
    return torch.stack(columns, dim=1)
