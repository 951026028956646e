"""The ranking kernel: select and order the top items of every row once, exactly.

Order: descending score; equal scores by the tie policy.

- ``"first"`` (the contract's default): lower index first, the order of
  ``torch.argsort(y_pred, descending=True, stable=True)``.
- ``"last"``: higher index first.
- ``"optimistic"`` / ``"pessimistic"``: higher / lower label first, then lower index first.
- ``"average"``: ranked as ``"first"``, then every metric takes its expected value over all
  orders of each tied block (see :mod:`ignite_ranking.kernels.expected`); as no value reads the
  order inside a block, whole rows sorted without keeping the indices leave it as an unstable
  sort gives it.

The kernel sorts whole rows only when the depth is at least a quarter of the row, where that is
the cheaper exact kernel: a few rows at a time, on integer keys of the scores (:func:`order_key`;
with the label folded in for the label policies; on CPU packed with their columns and sorted by
numpy, :func:`~ignite_ranking.kernels.selection.sort_descending`), gathering each chunk's labels
in place and,
under ``"average"``, counting the tied blocks on the sorted rows. Otherwise ``torch.topk`` with
one item more than the cutoff finds the best values; a row whose value after the cutoff equals
the value at the cutoff has a tie across the boundary, and only those rows take an extra pass
that keeps the tied items the policy prefers (:mod:`ignite_ranking.kernels.boundary`: a top-k
over a key, a few rows at a time, never a sort or a list of the tied items). The selected items
are then ordered with stable sorts of ``(batch, k)`` values. The generic kernels
(:mod:`.backend`) list no crossing rows under ``"first"``/``"last"``: a second top-k over a key
of the score's side of the boundary value and the column
(:func:`~ignite_ranking.kernels.boundary.top_k_by_index`) takes every row's items at once, in a
fixed number of launches and no host read.
"""

from __future__ import annotations

import torch

from . import constants
from .backend import host_tuned
from .batch import IdealLevels, RankedBatch, Stacked, ideal_order
from .boundary import boundary_blocks, fill_tied_slots, top_k_by_index, top_k_by_label, whole_row_blocks
from .chunks import rows_of, rows_per_chunk
from .ideal import label_levels, relevant_largest
from .inputs import comparable_labels, count_relevant, refuse_nan
from .selection import sort_descending, top_k_rows
from .ties import SortedTail, TieBlocks, block_slots, sorted_blocks, tie_blocks, whole_last_blocks
from .within_r import relevant_within_r

__all__ = ["TIE_POLICIES", "check_ties", "ideal_last_run", "rank_batch", "top_indices"]

TIE_POLICIES = ("first", "last", "average", "optimistic", "pessimistic")
_BY_LABEL = ("optimistic", "pessimistic")


def check_ties(ties: object) -> str:
    """Returns ``ties`` if it names a tie policy, else raises ``ValueError``."""
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {', '.join(map(repr, TIE_POLICIES))}, got {ties!r}.")
    return ties  # type: ignore[return-value]


def top_indices(
    scores: torch.Tensor, k: int, ties: str = "first", labels: torch.Tensor | None = None
) -> torch.Tensor:
    """Indices of the ``min(k, num_items)`` best items of each row, in ranking order.

    Args:
        scores: ``(batch, num_items)`` floating scores without NaN.
        k: how many items to return per row.
        ties: a tie policy; ``"average"`` orders as ``"first"``.
        labels: ``(batch, num_items)`` labels, needed by ``"optimistic"`` and ``"pessimistic"``.

    Returns:
        ``(batch, min(k, num_items))`` int64 indices.
    """
    if ties in _BY_LABEL and labels is None:
        raise ValueError(f"ties={ties!r} orders tied items by label, so labels are needed.")
    return _select(scores, k, "first" if ties == "average" else ties, labels)[0]


def sorts_whole_rows(k: int, num_items: int) -> bool:
    """Whether ranking ``k`` of ``num_items`` sorts whole rows rather than using ``torch.topk``.

    ``torch.topk`` of a large share of a row costs more than sorting it (about 3x at half of it),
    and the selected items still need ordering, so past a quarter of the row a full stable sort
    is the cheaper exact kernel.
    """
    return 4 * k >= num_items


def _by_sort(k: int, num_items: int) -> bool:
    return not 0 < k < num_items or sorts_whole_rows(k, num_items)


def _select(scores, k, ties, labels):
    """``top_indices``, the rows whose k-th value ties with an item below the cutoff, and the
    ``(batch, k)`` best values in descending order (None and None when whole rows are sorted).

    ``ties="average"`` leaves the tied slots at the cutoff as ``torch.topk`` filled them: the
    expected values read only the block statistics there, not which items hold the slots.
    """
    num_items = scores.shape[1]
    if _by_sort(k, num_items):
        return _select_by_sort(scores, min(max(k, 0), num_items), ties, labels), None, None
    if ties in ("first", "last") and not host_tuned(scores):  # static shapes: no crossing rows
        values, indices = top_k_by_index(scores, k, ties == "last")
        return indices, None, values
    if ties in _BY_LABEL and not host_tuned(scores):
        values, indices = top_k_by_label(scores, k, ties, labels)
        return indices, None, values
    values, indices = top_k_rows(scores, k + 1)
    crossing = values[:, k] == values[:, k - 1]  # the generic kernels ("average" only): a mask
    crossing = crossing.nonzero().squeeze(1) if host_tuned(scores) else crossing
    values, indices = values[:, :k], indices[:, :k]
    if crossing.numel() and ties != "average":
        indices = fill_tied_slots(scores, values, indices, crossing, ties, labels)
    return _in_rank_order(indices, values, ties, labels, num_items), crossing, values


def _select_by_sort(scores, k, ties, labels):
    """``top_indices`` by stable sorts of whole rows, a few rows at a time."""
    batch = scores.shape[0]
    indices = torch.empty(batch, k, dtype=torch.int64, device=scores.device)
    for rows in rows_of(scores) if k else ():
        order = _sorted_rows(scores[rows], ties, None if labels is None else labels[rows])
        indices[rows] = order[:, :k]
    return indices


def _rank_by_sort(scores, labels, threshold, k, ties, keep_indices, keep_labels):
    """Ranked labels (if kept) and relevance (``(batch, k)`` float64; under ``"average"`` the
    relevant share), the indices if kept, and under ``"average"`` the tied blocks, by stable sorts
    of whole rows a few rows at a time.

    Every gather reads one chunk of rows and writes its results in place, and under
    ``"average"`` each block is whole in the sorted rows, so its statistics are counted there (no
    pass over the tied items afterwards).
    """
    batch, num_items = scores.shape
    device = scores.device
    relevant = torch.empty(batch, k, dtype=torch.float64, device=device)
    ranked_labels = torch.empty_like(relevant) if keep_labels else None
    indices = torch.empty(batch, k, dtype=torch.int64, device=device) if keep_indices else None

    def gather(rows, order):
        kept = None if ranked_labels is None else ranked_labels[rows]
        _gather_ranked(labels[rows], order, threshold, kept, relevant[rows])

    if ties != "average":
        for rows in rows_of(scores) if k else ():
            order = _sorted_rows(scores[rows], ties, labels[rows])[:, :k]
            gather(rows, order)
            if indices is not None:
                indices[rows] = order
        return ranked_labels, relevant, indices, None
    blocks = TieBlocks(
        block_id=torch.empty(batch, k, dtype=torch.int64, device=device),
        block_size=torch.empty_like(relevant),
        block_relevant=torch.empty_like(relevant),
        ranked_labels=ranked_labels,
        ranked_relevant=torch.empty(batch, k, dtype=torch.bool, device=device),
        tail=None,  # type: ignore[arg-type]  # set below
    )
    tails, written = [], []
    ends = None  # the generic kernels: each row's k-th score, and whether its block goes on
    if not host_tuned(scores) and 0 < k < num_items:  # below rank k (for whole_row_blocks)
        ends = (scores.new_empty(batch), torch.empty(batch, dtype=torch.bool, device=device))
    for rows in rows_of(scores) if k else ():
        # Expected values read each tied block whole, never the order inside it: only kept
        # indices need the "first" order (a stable torch.sort costs about 1.25x an unstable one).
        values, order = sort_descending(order_key(scores[rows]), stable=keep_indices)
        gather(rows, order[:, :k])
        if indices is not None:
            indices[rows] = order[:, :k]
        torch.gt(relevant[rows], 0.0, out=blocks.ranked_relevant[rows])
        outputs = (blocks.block_id[rows], blocks.block_size[rows], blocks.block_relevant[rows])
        tail = sorted_blocks(values, order, k, relevant[rows], labels[rows], threshold, outputs)
        if tail is None:  # the generic kernels
            if ends is not None:
                torch.gather(scores[rows], 1, order[:, k - 1 : k], out=ends[0][rows, None])
                torch.eq(values[:, k], values[:, k - 1], out=ends[1][rows])
            continue
        tail.rows += rows.start
        tails.append(tail)
        written.append((rows, block_slots(blocks.block_id[rows])))
    blocks.tail = SortedTail.concat(tails, device)
    if ends is not None:
        blocks.tail = whole_row_blocks(scores, labels, threshold, *ends)
        whole_last_blocks(blocks.block_id, blocks.block_size, blocks.block_relevant, blocks.tail)
    slots = block_slots(blocks.block_id)
    blocks.block_size, blocks.block_relevant = blocks.block_size[:, :slots], blocks.block_relevant[:, :slots]
    for rows, chunk_slots in written:  # slots no row of the chunk uses: 0, as TieBlocks says
        blocks.block_size[rows, chunk_slots:] = 0.0
        blocks.block_relevant[rows, chunk_slots:] = 0.0
    # The relevant share at each rank, written over the 1.0/0.0 relevance (now in ranked_relevant).
    return ranked_labels, blocks.read_back(blocks.block_relevant, out=relevant), indices, blocks


def _gather_ranked(labels, order, threshold, ranked_labels, relevant):
    """Writes the labels at ``order`` (as float64; unless ``ranked_labels`` is None) and their
    relevance (1.0/0.0) in place."""
    native = labels.gather(1, order)
    if ranked_labels is not None:
        ranked_labels.copy_(native)
    torch.ge(native, threshold, out=relevant)


def _sorted_rows(scores, ties, labels):
    """Every item of each row in ranking order: one stable sort (two by label)."""
    key = order_key(scores)
    if ties == "last":
        flipped = sort_descending(key.flip(1))[1]
        return scores.shape[1] - 1 - flipped
    if ties in _BY_LABEL:
        combined = _with_labels(key, labels, ties == "optimistic")
        if combined is not None:
            return sort_descending(combined)[1]
        by_label = labels.argsort(dim=1, descending=ties == "optimistic", stable=True)
        by_score = sort_descending(key.gather(1, by_label))[1]
        return by_label.gather(1, by_score)
    return sort_descending(key)[1]


def _with_labels(key: torch.Tensor, labels: torch.Tensor, higher_first: bool) -> torch.Tensor | None:
    """One integer key ordering by ``key``, then by label (higher first if ``higher_first``), or
    None where the two do not fit in 63 bits (a key wider than 32 bits, or labels that are not
    integers spanning less than 2**31) or where the labels' range would be read on the host
    (the generic kernels): then two sorts order the rows.

    The label's rank goes in the lowest bits. Where every key already has them 0 (scores of a few
    significant bits, see :func:`order_key`) it is added to the key in place of them, and the key
    keeps its width: an int32 key sorts faster than int64.
    """
    if key.dtype == torch.int64 or labels.is_floating_point() or labels.numel() == 0 or not host_tuned(key):
        return None
    low, high = (int(value) for value in torch.aminmax(labels))
    if high - low >= 2**31:
        return None
    shift = max(1, (high - low).bit_length())
    if shift < torch.iinfo(key.dtype).bits and not bool(key.bitwise_and((1 << shift) - 1).any()):
        combined = key.clone()
    else:
        combined = key.to(torch.int64) << shift
    labels = labels.to(torch.int64)
    rank = labels - low if higher_first else high - labels  # < 2**shift, so it fits the key
    return combined.add_(rank.to(combined.dtype))


_KEY_DTYPES = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}


def order_key(scores: torch.Tensor) -> torch.Tensor:
    """Integers of the scores' width in the order of ``scores``, equal exactly where they are.

    A stable sort compares integers faster than floats (on CPU about 1.3x for float32). The
    IEEE bits of a float order the non-negative values as integers; negating the magnitude of
    the negative ones orders those too, below them, and makes ``-0.0`` equal ``0.0``. A score
    of few significant bits (such as a multiple of 0.25) keys an integer whose lowest bits are
    0, which :func:`_with_labels` uses. NaN is not a score here.

    Example:
        >>> scores = torch.tensor([-1.5, 0.0, -0.0, float("inf"), -float("inf"), 2.0])
        >>> order_key(scores).argsort(stable=True).tolist()
        [4, 0, 1, 2, 5, 3]
    """
    dtype = _KEY_DTYPES.get(scores.dtype)
    if dtype is None:
        return scores
    bits = scores.view(dtype)
    info = torch.iinfo(dtype)
    sign = bits >> (info.bits - 1)  # -1 for a negative score, else 0
    # Two's complement: (m ^ -1) - (-1) == -m.
    return bits.bitwise_and(info.max).bitwise_xor_(sign).sub_(sign)


def _in_rank_order(indices, values, ties, labels, num_items):
    """Orders each row's ``indices`` (of scores ``values``) by descending score, equal scores by
    the tie policy.

    ``torch.topk`` returns ``values`` in descending order, so a row whose values are all distinct
    is in ranking order already; only runs of equal values (ties, and the slots
    :func:`~ignite_ranking.kernels.boundary.fill_tied_slots` filled) are reordered. Under
    ``"first"``/``"last"``, where few items are tied, the items of the runs are listed and sorted
    at once by run and index (:func:`_runs_by_index`); otherwise the rows with a run are sorted:
    under ``"first"``/``"last"`` once, on a key of the run of equal values and the index; under a
    label policy by index, then label, then score, each sort stable. The generic kernels sort
    every row so (a row without a run keeps its order): nothing is listed. ``indices`` may be
    written.
    """
    same = values[:, 1:] == values[:, :-1] if host_tuned(indices) else None
    if host_tuned(indices) and ties not in _BY_LABEL:
        ordered = _runs_by_index(indices, same, ties == "last", num_items)
        if ordered is not None:
            return ordered
    tied = same.any(dim=1).nonzero().squeeze(1) if host_tuned(indices) else None
    if tied is not None and tied.numel() == 0:
        return indices
    every = tied is None or tied.numel() == indices.shape[0]
    part, part_values = (indices, values) if every else (indices[tied], values[tied])
    if ties not in _BY_LABEL:  # one sort: by run of equal values (in topk's order), then by index
        runs = torch.zeros_like(part)
        runs[:, 1:] = (part_values[:, 1:] != part_values[:, :-1]).cumsum(dim=1)
        key = runs * num_items + (part if ties != "last" else -part)  # unique in a row
        part = part.gather(1, key.argsort(dim=1))
        return part if every else indices.index_copy(0, tied, part)
    part, by_index = part.sort(dim=1)
    part_values = part_values.gather(1, by_index)
    ranked_labels = labels.gather(1, part) if every else labels[tied[:, None], part]
    by_label = ranked_labels.argsort(dim=1, descending=ties == "optimistic", stable=True)
    part, part_values = part.gather(1, by_label), part_values.gather(1, by_label)
    part = part.gather(1, part_values.argsort(dim=1, descending=True, stable=True))
    return part if every else indices.index_copy(0, tied, part)


def _runs_by_index(indices, same, last, num_items):
    """``indices`` with each run of equal values in ascending index order (descending if
    ``last``), written in place, when at most an eighth of the items are in such a run; else None.

    ``same``: ``(batch, k - 1)``, where the value at each rank equals the one after it. The items
    of the runs, listed in row order, are sorted in one go by a key of their run's number and
    their index: a sort of the tied items, not of every tied row.
    """
    batch, k = indices.shape
    follows = torch.nn.functional.pad(same, (1, 0))  # equal to the value before
    rows, ranks = (follows | torch.nn.functional.pad(same, (0, 1))).nonzero(as_tuple=True)
    if 8 * rows.numel() > batch * k:
        return None
    if rows.numel() == 0:
        return indices
    run = (~follows[rows, ranks]).cumsum(dim=0)  # a run starts where the value changes
    items = indices[rows, ranks]
    key = run * num_items + (num_items - 1 - items if last else items)
    position = key.sort().values.remainder_(num_items)
    indices[rows, ranks] = num_items - 1 - position if last else position
    return indices


def rank_batch(
    y_pred: torch.Tensor,
    y: torch.Tensor,
    depth: int,
    *,
    relevance_threshold: float = 1.0,
    ties: str = "first",
    ideal: bool = False,
    cover_relevant: bool = False,
    count: bool = True,
    keep_indices: bool = False,
    labels: bool = True,
    last_run: bool = False,
    relevance: bool = True,
) -> RankedBatch:
    """Ranks a checked batch once and gathers what every scorer needs.

    NaN scores or labels are refused here (:func:`~ignite_ranking.kernels.inputs.refuse_nan`),
    read off passes the kernel makes anyway where it can: the best score of each row from the
    top-k, the labels' row maxima from the relevant counts or the ideal labels. The generic
    kernels (:mod:`.backend`) raise nothing: the rows' NaN codes go in ``RankedBatch.refused``
    for the caller to refuse without a synchronization.

    Args:
        y_pred: ``(batch, num_items)`` scores, already checked by
            :func:`~ignite_ranking.kernels.inputs.check_inputs` (NaN aside).
        y: ``(batch, num_items)`` labels.
        depth: the largest cutoff asked for; K is ``min(depth, num_items)``.
        relevance_threshold: an item is relevant iff its label is ``>=`` this.
        ties: the tie policy.
        ideal: also gather each row's K largest labels (for IDCG).
        cover_relevant: count each row's relevant items and those among its top R
            (``RankedBatch.relevant_within_r``, for R-Precision), by selection: K stays ``depth``.
        count: count each row's relevant items (recall, AP and R-Precision divide by it). If
            False, ``num_relevant`` only tells whether a row has one (1.0) or not (0.0), which is
            all the other scorers and ``ignore_zero_hits`` need, at a fraction of the cost.
        keep_indices: keep the ranked items' columns as ``RankedBatch.indices`` (AUC's scores,
            the catalog measures); otherwise they are dropped as soon as possible.
        labels: gather the ranked labels (``RankedBatch.labels``; None if False): gains and the
            judged flags read them, the other scorers read relevance only.
        last_run: with ``ideal``, also count the whole run of the ideal ranking's last held
            label (``RankedBatch.ideal_last_run``, see :func:`ideal_last_run`).
        relevance: if False (and neither ``ideal``, ``count`` nor ``cover_relevant``), the
            scorers read no relevant count: ``num_relevant`` is 0 and no pass over ``y`` counts
            it (the catalog measures).
    """
    keep_labels = labels
    defer = not host_tuned(y_pred)
    labels, threshold = comparable_labels(y, relevance_threshold)
    num_relevant = count_relevant(y, relevance_threshold, whole=defer) if cover_relevant else None
    depth = min(depth, y.shape[1])
    best = levels = labels_seen = stacked = None
    if ideal:
        levels, reached = label_levels(labels, threshold, sorts_whole_rows(depth, y.shape[1]))
        if levels is None:
            # One label more than the depth shows which rows have relevant items beyond it.
            width = min(depth + 1, y.shape[1])
            sparse = relevant_largest(labels, threshold, width)
            if sparse is None:
                stacked = _beside_ranked(labels, threshold, depth, width, ties) if defer else None
                best = top_k_rows(labels, width)[0] if stacked is None else stacked[1]
                labels_seen = best[:, 0] if width else None  # a NaN is the largest to topk
            else:
                best, reached, labels_seen = sparse
                if isinstance(best, IdealLevels):
                    levels, best = best, None
        if reached is not None and num_relevant is None:
            num_relevant = reached if count else (reached > 0).to(torch.float64)
    # Whether each row has a relevant item, read off its ideal relevance once ranked.
    off_ideal = num_relevant is None and stacked is not None and not count
    if num_relevant is None and not relevance:
        num_relevant = torch.zeros(y.shape[0], dtype=torch.float64, device=y.device)
    if num_relevant is None and not off_ideal:
        num_relevant, row_max = _relevant_per_row(
            y, labels, threshold, relevance_threshold, depth, best, count
        )
        labels_seen = row_max if labels_seen is None else labels_seen
    if ties in _BY_LABEL and labels is None:
        raise ValueError(f"ties={ties!r} orders tied items by label, so labels are needed.")

    refused = []  # the generic kernels' NaN codes, refused later by the metric

    def check_nan(scores_seen):
        codes = refuse_nan(y_pred, y, scores_seen=scores_seen, labels_seen=labels_seen, defer=defer)
        refused.append(codes)

    if _by_sort(depth, y.shape[1]):
        check_nan(None)
        ranked_labels, relevant, indices, blocks = _rank_by_sort(
            y_pred, labels, threshold, depth, ties, keep_indices, keep_labels
        )
    else:
        ranked_labels, relevant, indices, blocks = _rank_by_top_k(
            y_pred, labels, threshold, depth, ties, keep_indices, keep_labels, check_nan, stacked
        )
    if stacked is not None:  # (2, batch, K) both: the ranked labels, then the ideal ones
        stacked = Stacked(ranked_labels, relevant, finite=not labels.is_floating_point())
        ranked_labels, relevant, ideal_labels, ideal_relevant = stacked.slabs
        num_relevant = ideal_relevant[:, 0] if off_ideal else num_relevant
    batch = RankedBatch(
        labels=ranked_labels if keep_labels or stacked is None else None,
        relevant=relevant,
        num_relevant=num_relevant,
        indices=indices,
        blocks=blocks,
        stacked=stacked,
    )
    if cover_relevant:
        batch.relevant_within_r = relevant_within_r(y_pred, labels, threshold, num_relevant, ties)
    if stacked is not None:
        batch.ideal_labels, batch.ideal_relevant = ideal_labels, ideal_relevant
    elif best is not None:
        batch.ideal_labels, batch.ideal_relevant = ideal_order(labels, threshold, best[:, :depth])
    batch.ideal_levels = levels
    batch.catalog = constants.scalar(float(y.shape[1]), torch.float64, y.device).expand(y.shape[0])
    batch.refused = refused[0] if refused else None
    if last_run and ideal:
        batch.ideal_last_run = ideal_last_run(batch, labels)
    return batch


def ideal_last_run(batch: RankedBatch, labels: torch.Tensor) -> torch.Tensor:
    """``(batch,)`` float64: the items of each row whose label is that of the last held position
    of its ideal ranking (position ``K``), where that position holds a relevant item; else 0.

    The ideal ranking holds the ``K`` largest labels, so a run of equal labels that reaches
    position ``K`` may go on below it; expected exposure's target shares exposure among all the
    items of a run. From the label runs when the kernel counted them, else by counting that
    label in the rows whose ``K``-th ideal item is relevant (a few rows at a time). For
    thresholds above 0, where the ideal order is the label order.
    """
    rows_total, depth = batch.relevant.shape
    out = torch.zeros(rows_total, dtype=torch.float64, device=batch.relevant.device)
    if depth == 0:
        return out
    levels = batch.ideal_levels
    if levels is not None:
        at = (levels.counts.cumsum(dim=1) < depth).sum(dim=1, keepdim=True)
        at = at.clamp(max=levels.counts.shape[1] - 1)
        run = levels.counts.gather(1, at)[:, 0]
        return torch.where(levels.relevant[at[:, 0]], run, out)
    ideal_labels, ideal_relevant = batch.ideal()
    last = ideal_labels[:, -1]
    rows = (ideal_relevant[:, -1] > 0).nonzero().squeeze(1)
    step = rows_per_chunk(labels.shape[1])
    for start in range(0, rows.numel(), step):
        chunk = rows[start : start + step]
        same = labels.index_select(0, chunk).to(torch.float64) == last[chunk, None]
        out[chunk] = same.sum(dim=1).to(torch.float64)
    return out


def _rank_by_top_k(scores, labels, threshold, k, ties, keep_indices, keep_labels, check_nan, stacked=None):
    """``_rank_by_sort``'s results by ``torch.topk`` (:func:`_select`); ``check_nan(best)``
    refuses NaN given each row's best score, right after the selection. With ``stacked`` (from
    :func:`_beside_ranked`) the labels and relevance are ``(2, batch, k)``: the ranked items',
    then the ideal ranking's."""
    indices, crossing, values = _select(scores, k, ties, labels)
    check_nan(values[:, 0])
    boundary = values[:, -1]
    # One (batch, K) temporary at a time: relevance is tested in the labels' own dtype, and the
    # indices are dropped as soon as nothing needs them (deep rankings make these large).
    if stacked is None:
        native = labels.gather(1, indices)
    else:
        native = stacked[:, :, :k]
        torch.gather(labels, 1, indices, out=native[0])
    relevant = _at_least(native, threshold, torch.bool if ties == "average" else torch.float64)
    ranked_labels = native.to(torch.float64) if keep_labels or stacked is not None else None
    del native
    kept = indices if keep_indices else None
    if ties != "average":
        return ranked_labels, relevant, kept, None
    tail = (boundary_blocks if host_tuned(scores) else whole_row_blocks)(
        scores, labels, threshold, boundary, crossing
    )
    blocks = tie_blocks(scores, indices, ranked_labels, relevant, tail)
    return ranked_labels, blocks.read_back(blocks.block_relevant), kept, blocks


def _beside_ranked(labels, threshold, k, width, ties):
    """Under a threshold ``>= 0`` (where the label order is the ideal one) and a policy without
    tied blocks, ranked by top-k: a ``(2, batch, width)`` buffer of the labels' dtype whose slab
    1 holds each row's ``width`` largest labels, descending, and whose slab 0 takes the ``k``
    ranked ones (:func:`_rank_by_top_k`), so that both are read in one pass each. Else None."""
    batch, num_items = labels.shape
    if threshold < 0 or ties == "average" or _by_sort(k, num_items) or batch == 0:
        return None
    stacked = torch.empty((2, batch, width), dtype=labels.dtype, device=labels.device)
    columns = torch.empty((batch, width), dtype=torch.int64, device=labels.device)
    torch.topk(labels, width, dim=1, out=(stacked[1], columns))
    return stacked


def _at_least(values: torch.Tensor, threshold: float | int, dtype: torch.dtype) -> torch.Tensor:
    """``values >= threshold`` as ``dtype`` (1.0/0.0 for a float), written at once (one pass)."""
    return torch.ge(values, threshold, out=torch.empty(values.shape, dtype=dtype, device=values.device))


def _relevant_per_row(y, labels, threshold, relevance_threshold, depth, best, count):
    """``num_relevant`` of :func:`rank_batch`, as cheaply as what is already known allows, and
    the labels' row maxima where they were taken (else None).

    With the row's largest labels at hand (``best``, ``depth + 1`` of them unless the row is
    shorter), the count is read off them for every row whose relevant items they all show, and
    only the other rows are counted in full.
    """
    if best is not None and not count and best.shape[1]:  # the largest label tells
        return _at_least(best[:, 0], threshold, torch.float64), None
    if best is not None:
        flags = best >= threshold
        counts = flags.sum(dim=1).to(torch.float64)
        if not count:
            return (counts > 0).to(torch.float64), None
        if best.shape[1] > depth and not host_tuned(y):  # every row counted: no list of rows
            return count_relevant(y, relevance_threshold, whole=True), None
        if best.shape[1] > depth:
            beyond = flags[:, depth].nonzero().squeeze(1)
            if 2 * beyond.numel() > y.shape[0]:
                return count_relevant(y, relevance_threshold), None
            step = rows_per_chunk(y.shape[1])
            for start in range(0, beyond.numel(), step):
                rows = beyond[start : start + step]
                counts[rows] = count_relevant(y.index_select(0, rows), relevance_threshold)
        return counts, None
    if count:
        return count_relevant(y, relevance_threshold, whole=not host_tuned(y)), None
    if y.shape[1]:
        row_max = labels.amax(dim=1)
        return _at_least(row_max, threshold, torch.float64), row_max
    return torch.zeros(y.shape[0], dtype=torch.float64, device=y.device), None
