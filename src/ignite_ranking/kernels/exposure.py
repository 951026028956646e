"""Catalog-side measures of the top-k lists: item coverage and the Gini index of exposure.

Both read one count per catalog item (how many top-k lists hold it), so their state grows with
the catalog, not with the data: ``len(cutoffs) * num_items`` numbers.

- Coverage@k = items in at least one top k / ``num_items`` (RecBole's ``ItemCoverage``).
- Gini@k (RecBole's ``GiniIndex``): with the counts :math:`c_{(1)} \\le ... \\le c_{(n)}` of the
  n catalog items in ascending order, ``sum_i (2i - n - 1) * c_(i) / (n * sum_i c_(i))``; 0 when
  every item is shown equally often, ``(n - 1) / n`` when one item takes all exposure.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["coverage", "distinct_item_counts", "gini_index", "item_counts"]


def item_counts(indices: torch.Tensor, cutoffs: Sequence[int], num_items: int) -> torch.Tensor:
    """``(len(cutoffs), num_items)`` int64: how many rows hold each item in their top k.

    Args:
        indices: ``(batch, K)`` item ids in rank order, ``-1`` where a row has no item.
        cutoffs: ascending cutoffs (a cutoff past K sees K).
        num_items: the catalog size; ids must be below it.

    Example:
        >>> import torch
        >>> item_counts(torch.tensor([[2, 0, 1], [2, 1, -1]]), [1, 3], 4).tolist()
        [[0, 0, 2, 0], [1, 2, 2, 0]]
    """
    head = distinct_item_counts(indices, cutoffs, num_items)
    return torch.cat([head, head[-1:].expand(len(cutoffs) - head.shape[0], -1)])


def distinct_item_counts(indices: torch.Tensor, cutoffs: Sequence[int], num_items: int) -> torch.Tensor:
    """The rows of :func:`item_counts` for the cutoffs below K and the first at or past it (the
    later cutoffs see the same K items: their rows repeat the last), each counted from the one
    before: O(batch x K + rows x num_items)."""
    if indices.numel() and int(indices.max()) >= num_items:
        raise ValueError(
            f"num_items is the catalog size and must exceed every ranked item id; got num_items="
            f"{num_items} and an item id {int(indices.max())}."
        )
    depth = indices.shape[1]
    counts, running, start = [], torch.zeros(num_items, dtype=torch.int64, device=indices.device), 0
    for k in cutoffs:
        if start >= depth and counts:
            break
        top = indices[:, start:k].reshape(-1)
        running = running + torch.bincount(top[top >= 0], minlength=num_items)
        counts.append(running)
        start = min(k, depth)
    if not counts:
        return torch.zeros(0, num_items, dtype=torch.int64, device=indices.device)
    return torch.stack(counts)


def coverage(counts: torch.Tensor) -> torch.Tensor:
    """``(len(cutoffs),)`` share of the catalog shown at least once, from :func:`item_counts`.

    Example:
        >>> import torch
        >>> coverage(torch.tensor([[0, 0, 2, 0], [1, 2, 2, 0]])).tolist()
        [0.25, 0.75]
    """
    return (counts > 0).sum(dim=1).to(torch.float64) / counts.shape[1]


def gini_index(counts: torch.Tensor) -> torch.Tensor:
    """``(len(cutoffs),)`` Gini index of the counts of :func:`item_counts` (0 with no count).

    Example:
        >>> import torch
        >>> gini_index(torch.tensor([[0, 0, 4, 0], [1, 1, 1, 1]])).tolist()  # (2*4-4-1)*4 / (4*4)
        [0.75, 0.0]
    """
    n = counts.shape[1]
    ordered = counts.to(torch.float64).sort(dim=1).values
    i = torch.arange(1, n + 1, dtype=torch.float64, device=counts.device)
    total = ordered.sum(dim=1)
    weighted = ((2 * i - n - 1) * ordered).sum(dim=1)
    return torch.where(
        total > 0, weighted / (n * torch.where(total > 0, total, 1.0)), torch.zeros_like(total)
    )
