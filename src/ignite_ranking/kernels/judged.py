"""Measures that tell judged from unjudged items, over one :class:`~.batch.RankedBatch`.

An item is unjudged when the judgements say nothing of it (absent from TREC qrels or sparse
labels, a qrels grade of -1, or masked out of a dense batch); unjudged items are never
relevant. ``RankedBatch.judged`` holds the flag per ranked position (None: all judged) and
``RankedBatch.retrieved`` how many positions hold a real item (None: all K).

- Judged@k = judged items in the top k / min(k, retrieved) (ir_measures' ``Judged@k``).
- bpref (Buckley & Voorhees, SIGIR 2004, as trec_eval's ``m_bpref.c``): with R relevant and
  N judged non-relevant items, and n_r the judged non-relevant items ranked above relevant
  item r, ``bpref = 1/R * sum over retrieved relevant r of (1 - min(n_r, R) / min(N, R))``
  (a term is 1 when n_r = 0). Unjudged items are skipped.
- :func:`condense`: Sakai's (SIGIR 2007) condensed list, the ranking with its unjudged items
  removed (trec_eval ``-J``, ir_measures ``judged_only=True``); every other scorer then gives
  its judged-only variant, without ranking again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from .batch import RankedBatch
from .inputs import comparable_labels, equal_to

__all__ = [
    "bpref",
    "condense",
    "judged_at_k",
    "judged_flags",
    "mark_judgements",
    "mask_unjudged",
    "retrieved_counts",
]


def mask_unjudged(y: torch.Tensor, judged: torch.Tensor | None) -> torch.Tensor:
    """The labels to rank when some items are unjudged: float64, ``-inf`` where not judged.

    Dense inputs are fully judged unless a mask says otherwise; with one, the unjudged items
    take a label no threshold reaches, so they are never relevant and gain nothing, and
    :func:`mark_judgements` finds them again at their ranks without another ranking pass.

    Args:
        y: ``(batch, num_items)`` labels, already checked.
        judged: ``(batch, num_items)`` bool, True where the item is judged; None: all are.

    Raises:
        TypeError: ``judged`` is not a bool tensor.
        ValueError: its shape differs from ``y``'s, or a judged label is ``-inf``.
    """
    if judged is None:
        return y
    if not isinstance(judged, torch.Tensor) or judged.dtype != torch.bool:
        shown = judged.dtype if isinstance(judged, torch.Tensor) else type(judged).__name__
        raise TypeError(f"judged must be a bool tensor (True = judged), got {shown}.")
    if judged.shape != y.shape:
        raise ValueError(
            f"judged must have the shape of y, {tuple(y.shape)}, one flag per item; "
            f"got {tuple(judged.shape)}."
        )
    labels = y.to(torch.float64)
    judged = judged.to(labels.device)
    if bool((judged & (labels == -torch.inf)).any()):
        raise ValueError("y must not hold -inf labels for judged items when a judged mask is given.")
    return torch.where(judged, labels, torch.full_like(labels, -torch.inf))


def mark_judgements(
    ranked: RankedBatch,
    y: torch.Tensor,
    judged: torch.Tensor | None,
    relevance_threshold: float,
    count_nonrelevant: bool = False,
    ignore_index: int | None = None,
) -> RankedBatch:
    """``ranked`` (of :func:`mask_unjudged`'s labels) with its judged flags (and N), in place.

    ``judged`` flags the ranks whose label is not ``-inf``; without a mask every item is judged
    and ``judged`` stays None. ``count_nonrelevant`` also counts N, each row's judged items
    below ``relevance_threshold`` (bpref's divisor; one pass over the labels), leaving out
    items labelled ``ignore_index``.
    """
    if judged is not None:
        ranked.judged = (ranked.labels > -torch.inf).to(torch.float64)
    if count_nonrelevant:
        labels, threshold = comparable_labels(y, relevance_threshold)
        below = ~(labels >= threshold)  # the exact test that decides relevance
        if judged is not None:
            below &= judged.to(y.device)
        if ignore_index is not None:
            below &= ~equal_to(y, ignore_index)
        ranked.num_nonrelevant = below.sum(dim=1).to(torch.float64)
    return ranked


def retrieved_counts(ranked: RankedBatch) -> torch.Tensor:
    """``(batch,)`` float64 number of ranked positions holding a real item."""
    if ranked.retrieved is not None:
        return ranked.retrieved.to(torch.float64)
    return torch.full(
        (ranked.relevant.shape[0],), float(ranked.depth), dtype=torch.float64, device=ranked.relevant.device
    )


def judged_flags(ranked: RankedBatch) -> torch.Tensor:
    """``(batch, K)`` bool: the item at that rank is real and judged."""
    positions = torch.arange(ranked.depth, device=ranked.relevant.device)
    real = positions[None, :] < retrieved_counts(ranked)[:, None]
    if ranked.judged is None:
        return real
    return real & (ranked.judged > 0)


def refuse_blocks(ranked: RankedBatch, what: str) -> None:
    """Refuses a batch ranked under ``ties="average"`` for a measure that reads one order."""
    if ranked.blocks is not None:
        raise ValueError(f"{what} is not defined under ties='average'; got a batch ranked with it.")


def judged_at_k(ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
    """Judged items in the top k divided by ``min(k, retrieved)``: ``(batch, len(cutoffs))``.

    A row without any retrieved item scores 0.

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> ranked = RankedBatch(
        ...     labels=torch.tensor([[1.0, 0.0, 0.0, 1.0]]), relevant=torch.tensor([[1.0, 0, 0, 1]]),
        ...     num_relevant=torch.tensor([2.0]), judged=torch.tensor([[1.0, 0, 1, 1]]))
        >>> judged_at_k(ranked, [2, 4, 10]).tolist()  # 1/2, 3/4, 3/min(10, 4)
        [[0.5, 0.75, 0.75]]
    """
    refuse_blocks(ranked, "Judged@k")
    flags = judged_flags(ranked).to(torch.float64)
    cumulative = torch.nn.functional.pad(flags.cumsum(dim=1), (1, 0))
    columns = torch.tensor([min(k, ranked.depth) for k in cutoffs], device=flags.device)
    ks = torch.tensor(cutoffs, dtype=torch.float64, device=flags.device)
    shown = torch.minimum(ks[None, :], retrieved_counts(ranked)[:, None])
    safe = torch.where(shown > 0, shown, torch.ones_like(shown))
    return torch.where(shown > 0, cumulative[:, columns] / safe, torch.zeros_like(shown))


def bpref(ranked: RankedBatch) -> torch.Tensor:
    """trec_eval's bpref of every row over the whole ranked depth: ``(batch, 1)``.

    Needs ``num_nonrelevant`` (N, judged non-relevant items of the row) and a batch ranked deep
    enough to hold every retrieved item (a relevant item below the depth counts as not found).

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch
        >>> # ranks: relevant, non-relevant, unjudged, relevant; R = 2 (+1 not retrieved), N = 2
        >>> ranked = RankedBatch(
        ...     labels=torch.tensor([[1.0, 0.0, 0.0, 1.0]]), relevant=torch.tensor([[1.0, 0, 0, 1]]),
        ...     num_relevant=torch.tensor([3.0]), judged=torch.tensor([[1.0, 1, 0, 1]]),
        ...     num_nonrelevant=torch.tensor([2.0]))
        >>> bpref(ranked).tolist()  # (1 + (1 - min(1, 3) / min(2, 3))) / 3
        [[0.5]]
    """
    refuse_blocks(ranked, "bpref")
    if ranked.num_nonrelevant is None:
        raise ValueError("bpref needs num_nonrelevant, the judged non-relevant items of each row")
    judged = judged_flags(ranked)
    relevant = (ranked.relevant > 0) & judged
    nonrelevant = (judged & ~relevant).to(torch.float64)
    above = nonrelevant.cumsum(dim=1) - nonrelevant  # judged non-relevant ranked above each rank
    r = ranked.num_relevant[:, None]
    n = ranked.num_nonrelevant[:, None].to(torch.float64)
    denominator = torch.minimum(n, r)
    safe = torch.where(denominator > 0, denominator, torch.ones_like(denominator))
    term = torch.where(above > 0, 1.0 - torch.minimum(above, r) / safe, torch.ones_like(above))
    # Added rank by rank (a sequential cumulative sum), as trec_eval adds its terms: a pairwise
    # sum can differ in the last bit, and a printed value at a half then rounds the other way.
    terms = torch.where(relevant, term, torch.zeros_like(term))
    total = terms.cumsum(dim=1)[:, -1:] if terms.shape[1] else terms.new_zeros(terms.shape[0], 1)
    return torch.where(r > 0, total / torch.where(r > 0, r, torch.ones_like(r)), torch.zeros_like(total))


def condense(ranked: RankedBatch) -> RankedBatch:
    """The batch with each row's unjudged items removed and the judged ones moved up in order.

    The freed positions at the end of a row hold nothing (``retrieved`` is the judged count);
    R, N and the ideal order are unchanged, so precision, RR, AP and NDCG of the result are
    their judged-only variants (trec_eval ``-J``, ir_measures ``judged_only=True``). The
    cutoffs must not exceed the depth ranked: a condensed row is exact only as deep as the
    batch was ranked (rank every item, or all the retrieved ones, for exact values at any k).

    Example:
        >>> import torch
        >>> from ignite_ranking.kernels import RankedBatch, scoring
        >>> ranked = RankedBatch(
        ...     labels=torch.tensor([[0.0, 0.0, 1.0]]), relevant=torch.tensor([[0.0, 0, 1]]),
        ...     num_relevant=torch.tensor([1.0]), judged=torch.tensor([[1.0, 0, 1]]))
        >>> scoring.reciprocal_rank(condense(ranked), [3]).tolist()  # the unjudged rank 2 is gone
        [[0.5]]
    """
    refuse_blocks(ranked, "a judged-only (condensed) list")
    judged = judged_flags(ranked)
    order = (~judged).to(torch.uint8).argsort(dim=1, stable=True)
    kept = judged.gather(1, order)
    labels = ranked.labels.gather(1, order)
    relevant = torch.where(kept, ranked.relevant.gather(1, order), torch.zeros_like(labels))
    return replace(
        ranked,
        labels=labels,
        relevant=relevant,
        judged=kept.to(torch.float64),
        retrieved=judged.sum(dim=1).to(torch.float64),
        relevant_within_r=None,  # counted over every item, judged or not
        _gain_cache={},
    )
