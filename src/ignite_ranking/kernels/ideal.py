"""Each row's ideal ranking (its labels in descending order of gain) without ranking the labels.

NDCG's ideal DCG, nERR's ideal ERR and expected exposure's target read the ideal ranking to the
depth K. A top-k over the labels always finds it; two cheaper forms cover the common labels:

- :func:`relevant_largest`, for rows with few relevant items (a positive threshold): the
  relevant labels are listed from the runs of items that hold one, and the ideal ranking is them
  in descending order, then gain 0. Where every relevant label is 1 (binary labels under the
  default threshold), no label is listed: the ideal ranking is R ones, held as
  :class:`~ignite_ranking.kernels.batch.IdealLevels` of the relevant counts.
- :func:`label_levels`, for a deep K and labels of a few values: a histogram of each row, the
  ideal ranking as runs of equal labels.
"""

from __future__ import annotations

import math

import torch

from .backend import host_tuned
from .batch import IdealLevels
from .chunks import rows_of

__all__ = ["label_levels", "relevant_largest"]

# The sparse path lists at most this share of the ideal positions, and finds them in runs of
# this many items of a row.
_SPARSE_SHARE = 4
_RUN = 64
_PROBE_ROWS = 8  # rows read first to give up early on rows of many relevant items


def relevant_largest(
    labels: torch.Tensor, threshold: float | int, width: int
) -> tuple[torch.Tensor | IdealLevels, torch.Tensor, torch.Tensor] | None:
    """Each row's ideal ranking to ``width`` when few items are relevant, its relevant count
    (float64) and its largest label (NaN where it holds one, for
    :func:`~ignite_ranking.kernels.inputs.refuse_nan`).

    The ideal ranking comes as ``(batch, width)`` labels (the row's relevant labels in descending
    order, then 0, a label of gain 0), or, where every relevant label of the batch is 1, as
    :class:`~ignite_ranking.kernels.batch.IdealLevels`: a run of ones as long as the relevant
    count (``single`` 1.0), then the rest at label 0.

    Under a positive threshold only relevant items have a gain, so the ideal ranking is their
    labels in descending order, whatever the labels of the others. The largest label of each run
    of ``_RUN`` items of a row (one reduction) shows the runs that hold a relevant item, and only
    those are read item by item: when the rows hold at most ``width / _SPARSE_SHARE`` relevant
    items on average this costs a fraction of a top-k over the labels. Under the threshold 1 a
    largest label of 1 shows that every relevant label is 1; the runs are then only counted.
    Otherwise, and off the CPU (where the top-k is fast and listing needs a synchronization),
    None: the kernel takes the top-k.
    """
    batch, num_items = labels.shape
    if not threshold > 0 or width == 0 or batch == 0 or not host_tuned(labels) or labels.stride(1) != 1:
        return None
    limit = batch * width // _SPARSE_SHARE
    runs = num_items // _RUN
    whole = runs * _RUN
    # (batch rows of the chunk, labels): the runs that hold a relevant item, and the columns after
    # the last whole run.
    chunks, maxima = [], []
    if runs:  # one reduction over the whole batch: its output is 1/_RUN of the labels
        blocks = labels.as_strided((batch, runs, _RUN), (labels.stride(0), _RUN, 1))
        probe = min(batch, _PROBE_ROWS)  # a few rows first: with many relevant items, no full pass
        run_max = torch.empty((batch, runs), dtype=labels.dtype, device=labels.device)
        torch.amax(blocks[:probe], dim=2, out=run_max[:probe])
        if int((run_max[:probe] >= threshold).sum()) * batch > limit * probe:
            return None
        torch.amax(blocks[probe:], dim=2, out=run_max[probe:])
        maxima.append(run_max.amax(dim=1))
        run_rows, run_index = (run_max >= threshold).nonzero(as_tuple=True)
        if run_rows.numel() > limit:
            return None
        chunks.append((run_rows, _runs_of(labels, run_rows, run_index)))
    if whole < num_items:
        maxima.append(labels[:, whole:].amax(dim=1))
        chunks.append((None, labels[:, whole:]))
    largest = maxima[0] if len(maxima) == 1 else torch.maximum(*maxima)
    if threshold == 1 and bool(largest.amax() == 1):
        counts = _counted(chunks, threshold, batch)
        return _ones(counts, num_items), counts, largest
    rows, values = [], []
    for chunk_rows, chunk in chunks:
        at, column = (chunk >= threshold).nonzero(as_tuple=True)
        rows.append(at if chunk_rows is None else chunk_rows[at])
        values.append(chunk[at, column])
    rows, values = torch.cat(rows), torch.cat(values)
    if rows.numel() > limit:
        return None
    by_value = values.argsort(descending=True, stable=True)
    order = by_value[rows[by_value].argsort(stable=True)]  # by row, then by descending label
    rows, values = rows[order], values[order]
    counts = torch.bincount(rows, minlength=batch)
    position = torch.arange(rows.numel(), device=rows.device) - (counts.cumsum(0) - counts)[rows]
    kept = position < width
    best = torch.zeros(batch, width, dtype=labels.dtype, device=labels.device)
    best[rows[kept], position[kept]] = values[kept]
    return best, counts.to(torch.float64), largest


def _runs_of(labels: torch.Tensor, rows: torch.Tensor, runs: torch.Tensor) -> torch.Tensor:
    """``(n, _RUN)``: the labels of run ``runs[i]`` of row ``rows[i]``, copied whole from a view
    of every window of ``_RUN`` consecutive labels (a copy of contiguous rows, not item by item)."""
    batch, num_items = labels.shape
    windows = (batch - 1) * labels.stride(0) + num_items - _RUN + 1
    flat = labels.as_strided((windows, _RUN), (1, 1))
    return flat.index_select(0, rows * labels.stride(0) + runs * _RUN)


def _counted(chunks, threshold, batch: int) -> torch.Tensor:
    """``(batch,)`` float64: the relevant items of each row, counted in ``chunks``."""
    counts = torch.zeros(batch, dtype=torch.float64, device=chunks[0][1].device)
    for chunk_rows, chunk in chunks:
        # Compared into a floating tensor: a sum of a boolean one casts it to int64 first.
        flags = torch.ge(chunk, threshold, out=torch.empty(chunk.shape, device=chunk.device))
        found = flags.sum(dim=1).to(torch.float64)  # float32 counts of _RUN items: exact
        if chunk_rows is None:
            counts += found
        else:
            counts.index_add_(0, chunk_rows, found)
    return counts


def _ones(counts: torch.Tensor, num_items: int) -> IdealLevels:
    """The ideal ranking of rows of ``counts`` relevant items, each of label 1: R ones, then 0."""
    device = counts.device
    return IdealLevels(
        labels=torch.tensor([1.0, 0.0], dtype=torch.float64, device=device),
        relevant=torch.tensor([True, False], device=device),
        counts=torch.stack([counts, num_items - counts], dim=1),
        single=1.0,
    )


# Deep enough to sort whole rows, labels on a grid of at most this many values are counted by
# value instead of ranked (a histogram of each row).
_MAX_LEVELS = 65


def label_levels(
    labels: torch.Tensor, threshold: float | int, deep: bool
) -> tuple[IdealLevels | None, torch.Tensor | None]:
    """Each row's ideal ranking as runs of equal labels, and its relevant items (float64).

    For a ``deep`` ranking (one that sorts whole rows) of labels of a few values, the ideal
    ranking needs no selection: it is a run of each value, as long as the count of that value in
    the row. Labels on a grid (the integers, or multiples of 1/2, 1/4, ... for floating labels)
    from the lowest label to the highest are counted by one histogram a few rows at a time.
    Otherwise ``(None, None)``: the kernel takes the row's largest labels by ``torch.topk``.
    """
    batch, num_items = labels.shape
    if not deep or labels.numel() == 0:
        return None, None
    grid = _label_grid(labels)
    if grid is None:
        return None, None
    first, scale, levels = grid
    dtype = torch.float32 if num_items <= 2**24 else torch.float64  # exact counts
    counts = torch.empty(batch, levels, dtype=dtype, device=labels.device)
    for rows in rows_of(labels):
        chunk = labels[rows]
        if chunk.is_floating_point():
            steps = chunk * scale  # a power of two: exact
            if bool(torch.frac(steps).any()):
                return None, None  # a label off the grid
            index = steps.to(torch.int64)
        else:
            index = chunk.to(torch.int64)  # the labels themselves if int64: never written
        index = index - first if first else index
        ones = torch.ones(1, dtype=dtype, device=labels.device).expand_as(index)
        counts[rows] = counts[rows].zero_().scatter_add_(1, index, ones)
    values = (first + torch.arange(levels, dtype=torch.float64, device=labels.device)) / scale
    counts = counts.to(torch.float64)
    relevant = counts[:, values >= threshold].sum(dim=1)
    return IdealLevels.of(values, counts, threshold), relevant


def _label_grid(labels: torch.Tensor) -> tuple[int, float, int] | None:
    """``(first, scale, levels)``: the grid of values ``(first + j) / scale``, ``j < levels``,
    from the lowest label to the highest, that a sample of the labels lies on (``scale`` 1 for
    integer labels, else the least of 1, 2, 4, 8, 16; every label is checked as it is
    counted); None where it would hold more than ``_MAX_LEVELS`` values."""
    low, high = (value.item() for value in torch.aminmax(labels))
    if not labels.is_floating_point():
        return (int(low), 1.0, int(high) - int(low) + 1) if high - low < _MAX_LEVELS else None
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    flat = labels.reshape(-1)
    sample = torch.unique(flat[:: max(1, flat.numel() // 2**16)]).to(torch.float64)
    for scale in (1.0, 2.0, 4.0, 8.0, 16.0):
        levels = (high - low) * scale + 1
        if levels > _MAX_LEVELS:
            return None
        if (low * scale).is_integer() and not bool(torch.frac(sample * scale).any()):
            return int(low * scale), scale, int(levels)
    return None
