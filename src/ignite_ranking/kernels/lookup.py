"""The labels of listed ``(row, item)`` pairs among a batch's judged ``(row, item, label)``
entries: a sorted join, in static shapes (nothing read on the host). A leaf: it imports nothing
of the library's, so that both the forms (``Retrieved`` ids) and the candidate ranker (the top
items of scores with sparse labels) may call it."""

from __future__ import annotations

import torch

__all__ = ["judged_labels"]


def judged_labels(
    rows: torch.Tensor,
    items: torch.Tensor,
    judged_rows: torch.Tensor,
    judged_items: torch.Tensor,
    labels: torch.Tensor,
    span: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 labels of the pairs ``(rows, items)`` (one shape; 0 where not judged) and where
    they were judged, given the int64 judged pairs and their float64 ``labels``; ``span`` is
    above every item id, so that ``row * span + item`` keys the pairs."""
    if judged_rows.numel() == 0:
        return torch.zeros(rows.shape, dtype=torch.float64, device=rows.device), torch.zeros_like(
            rows, dtype=torch.bool
        )
    keys, order = (judged_rows * span + judged_items).sort()
    wanted = rows * span + items
    at = torch.searchsorted(keys, wanted).clamp(max=keys.numel() - 1)
    found = keys[at] == wanted
    return torch.where(found, labels[order][at], 0.0), found
