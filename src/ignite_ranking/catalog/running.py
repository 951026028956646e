"""The running top items of every query while a catalog is scored chunk by chunk.

Both selection methods of :func:`~ignite_ranking.catalog.top_k` merge their candidates into one
:class:`RunningTop`; the result is the same as ranking the full score rows under the tie rule.
"""

from __future__ import annotations

import math

import torch

from . import order_keys

__all__ = ["NAN_MESSAGE", "RunningTop"]

NAN_MESSAGE = "the item scores contain NaN; scores may be +-inf but not NaN."


class RunningTop:
    """The running ``(batch, depth)`` top items; padding is id -1, score -inf.

    Under ``ties="first"`` chunks come in increasing id order, under ``"last"`` in decreasing
    order; either way every item already held beats a newcomer with an equal score. Merges by
    packed keys leave the held items in any order (``ordered`` is False); :meth:`padded`
    returns them best first.
    """

    def __init__(self, batch: int, depth: int, ties: str, device: torch.device):
        self.batch, self.depth, self.ties, self.device = batch, depth, ties, device
        self.scores: torch.Tensor | None = None
        self.ids = torch.full((batch, depth), -1, dtype=torch.int64, device=device)
        self.all_full = depth == 0  # a host-side flag, kept only by the "filter" method
        self.nan = torch.zeros((), dtype=torch.bool, device=device)
        self.ordered = True
        self._kth: torch.Tensor | None = None

    def start(self, dtype: torch.dtype, num_items: int) -> None:
        self.num_items, self.keyed = num_items, order_keys.fits(dtype, num_items)
        self.scores = torch.full((self.batch, self.depth), -math.inf, dtype=dtype, device=self.device)

    def full(self) -> torch.Tensor:
        """``(batch,)``: whether a row holds ``depth`` items."""
        return self.ids[:, -1] >= 0 if self.ordered else (self.ids >= 0).all(1)

    def kth(self) -> torch.Tensor:
        """Each row's k-th score; ``+inf`` where the row holds fewer than k items."""
        if self._kth is None:
            last = self.scores[:, -1] if self.ordered else self.scores.amin(1)
            self._kth = torch.where(self.full(), last, torch.full_like(last, math.inf))
        return self._kth

    def merge(self, scores: torch.Tensor, ids: torch.Tensor, valid: torch.Tensor, plain: bool) -> None:
        """Keeps the best ``depth`` of the held items and ``(batch, m)`` newcomers.

        Scores that pack with their ids into one key (:mod:`.order_keys`) are chosen by an
        unsorted ``topk`` of the keys, whatever the newcomers' order. Otherwise newcomers come
        after the held items and in tie order among themselves, so a stable descending sort
        puts equal scores in the policy's order. Padding slots score ``-inf``; ``plain`` says
        that every held slot is an item and no newcomer item scores ``-inf``, so no padding
        ties with an item ahead of it and the sort by score alone is enough. Otherwise a
        second stable sort moves the items ahead of the padding.
        """
        all_scores = torch.cat([self.scores, scores], dim=1)
        all_ids = torch.cat([self.ids, ids], dim=1)
        if self.keyed:
            all_valid = torch.cat([self.ids >= 0, valid], dim=1)
            keys = order_keys.pack(all_scores, all_ids, all_valid, self.ties)
            order = keys.topk(self.depth, dim=1, sorted=False).indices
            self.ordered = False
        else:
            order = all_scores.argsort(dim=1, descending=True, stable=True)
            if not plain:
                all_valid = torch.cat([self.ids >= 0, valid], dim=1).gather(1, order).to(torch.uint8)
                order = order.gather(1, all_valid.argsort(dim=1, descending=True, stable=True))
            order = order[:, : self.depth]
        self.scores = all_scores.gather(1, order)
        self.ids = all_ids.gather(1, order)
        self._kth = None

    def _put_in_order(self) -> None:
        """Sorts the held items best first (after keyed merges left them in any order)."""
        if self.ordered:
            return
        keys = order_keys.pack(self.scores, self.ids, self.ids >= 0, self.ties)
        order = keys.topk(self.depth, dim=1).indices
        self.scores, self.ids = self.scores.gather(1, order), self.ids.gather(1, order)
        self.ordered = True

    def check_finished(self) -> None:
        if self.nan.any():
            raise ValueError(NAN_MESSAGE)

    def padded(self, k: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        if self.scores is None:
            self.start(dtype, num_items=0)
        self._put_in_order()
        extra = k - self.depth
        if not extra:
            return self.scores, self.ids
        pad_scores = torch.full((self.batch, extra), -math.inf, dtype=self.scores.dtype, device=self.device)
        pad_ids = torch.full((self.batch, extra), -1, dtype=torch.int64, device=self.device)
        return torch.cat([self.scores, pad_scores], 1), torch.cat([self.ids, pad_ids], 1)
