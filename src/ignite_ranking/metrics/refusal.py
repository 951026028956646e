"""Refusal of bad input without a host synchronization (the generic kernels' path).

On the host-tuned path a batch with NaN scores or labels is refused at once: ``update`` raises and
the state is unchanged. The generic kernels (:mod:`~ignite_ranking.kernels.backend`, every
accelerator) read nothing on the host: the ranking kernel leaves each row's NaN code
(:func:`~ignite_ranking.kernels.inputs.nan_rows`) on the device, the update runs, and its
additions to the state are taken back with ``torch.where`` when a code is set. The first such
update is recorded on the device (its code, its count since ``reset`` and its first bad row);
the next ``compute()`` or ``check()`` raises the ``ValueError`` the host-tuned path would have
raised, naming them. A group shares one record among its members.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..kernels import constants
from ..kernels.inputs import NAN_MESSAGES, nan_code
from .devices import warn_of_host_state

__all__ = ["DeferredRefusal", "accumulate_or_refuse", "refusal_error", "refuse_now"]


class DeferredRefusal:
    """The device-side record of the first refused update since ``reset`` (module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> DeferredRefusal:
        self.updates = 0  # updates since reset
        self.record: torch.Tensor | None = None  # int64 0-dim: _ROWS or less, or the first refusal's key
        self.flat: tuple[torch.Tensor, list] | None = None  # the states' flat tensor, their views
        return self

    def note(self, codes: torch.Tensor) -> torch.Tensor:
        """Records an update's ``(batch,)`` NaN codes; a 0-dim bool: whether it is refused.

        A fixed number of launches: each row's key (its code, then its row counted down from
        ``_ROWS``) and their maximum, the largest code's first row; a refused update's key goes
        above its priority (earlier updates higher) and the record keeps the largest (an update
        refusing nothing leaves ``_ROWS``, its first row's, which reads as none). Flags of one
        code (bool) carry the priority in their weight: their key is the record's at once."""
        self.updates += 1
        down = constants.arange(_ROWS, _ROWS - codes.shape[0], -1, torch.int64, codes.device)
        priority = (_UPDATES - min(self.updates, _UPDATES - 1)) << _KEY_BITS
        flags = codes.dtype == torch.bool
        weight = (nan_code(codes) << _ROW_BITS) + (priority if flags else 0)
        key = torch.add(down, codes, alpha=weight).amax()  # above _ROWS: refused
        refused = key > _ROWS
        found = key if flags else torch.add(key, refused, alpha=priority)
        self.record = found if self.record is None else torch.maximum(self.record, found)
        return refused

    def taken_back(self, metrics: Sequence, codes: torch.Tensor, accumulate: Callable[[], None]) -> None:
        """Runs ``accumulate`` (which adds a batch to ``metrics``' sums and counts), then takes
        its additions back on the device if ``codes`` refuse the batch."""
        refused = self.note(codes)
        if len({(t.device, t.dtype) for m in metrics for t in (m._sum_per_k, m._num_examples)}) == 1:
            self._taken_back_together(metrics, refused, accumulate)
            return
        saved = [(m._sum_per_k.clone(), m._num_examples.clone()) for m in metrics]
        accumulate()
        for metric, (sums, count) in zip(metrics, saved, strict=True):
            back = refused.to(sums.device)
            metric._sum_per_k = torch.where(back, sums, metric._sum_per_k)
            metric._num_examples = torch.where(back, count, metric._num_examples)

    def _taken_back_together(
        self, metrics: Sequence, refused: torch.Tensor, accumulate: Callable[[], None]
    ) -> None:
        """``taken_back`` for metrics (one, or a group's members) whose states share a device and
        a dtype: every sum and count saved in one flat copy and restored from it in one
        ``torch.where``; each metric's state becomes its views of the result. While the states
        are still those views (and ``accumulate`` adds to them in place), the flat tensor is
        saved by a clone and restored in place: two launches, else three."""
        flat = self._flat_of(metrics)
        saved = _flat_state(metrics) if flat is None else flat.clone()
        accumulate()
        back = refused.to(saved.device)
        if flat is not None and self._flat_of(metrics) is flat:
            torch.where(back, saved, flat, out=flat)
            return
        kept = torch.where(back, saved, _flat_state(metrics))
        views, at = [], 0
        for metric in metrics:
            size = metric._sum_per_k.numel()
            metric._sum_per_k = kept[at : at + size].view(metric._sum_per_k.shape)
            metric._num_examples = kept[at + size]
            views.append((metric, metric._sum_per_k, metric._num_examples))
            at += size + 1
        self.flat = (kept, views)

    def _flat_of(self, metrics: Sequence) -> torch.Tensor | None:
        """The flat tensor of the last :meth:`_taken_back_together` if ``metrics``' states are
        still its views, else None."""
        if self.flat is None:
            return None
        flat, views = self.flat
        same = len(views) == len(metrics) and all(
            m is held and m._sum_per_k is sums and m._num_examples is count
            for m, (held, sums, count) in zip(metrics, views, strict=False)
        )
        return flat if same else None

    def read(self) -> torch.Tensor:
        """The record, ``(1,)`` int64 (0: none), to be read on the host with the sums."""
        return torch.zeros(1, dtype=torch.int64) if self.record is None else self.record.reshape(1)

    def check(self) -> None:
        """Raises the recorded refusal, if any (one transfer)."""
        error = refusal_error(self.read().item())
        if error is not None:
            raise error


def _flat_state(metrics: Sequence) -> torch.Tensor:
    """Every metric's sums, flattened, each followed by its count: one copy."""
    return torch.cat(
        [part for m in metrics for part in (m._sum_per_k.reshape(-1), m._num_examples.reshape(1))]
    )


# A record's key: the update's priority (``_UPDATES`` less its count since reset, so that the
# first refusal is the largest), then the code, then ``_ROWS`` less the row.
_ROW_BITS = 31
_ROWS = (1 << _ROW_BITS) - 1
_KEY_BITS = _ROW_BITS + 2  # codes 1 and 2
_UPDATES = 1 << (62 - _KEY_BITS)  # updates counted since reset: 2**29 - 1 at most


def refusal_error(record: int) -> ValueError | None:
    """The ``ValueError`` of a record read on the host (:meth:`DeferredRefusal.note`), or None."""
    if record <= _ROWS:  # nothing refused (0: nothing noted)
        return None
    update = _UPDATES - (record >> _KEY_BITS)
    key = record & ((1 << _KEY_BITS) - 1)
    code, row = key >> _ROW_BITS, _ROWS - (key & _ROWS)
    return ValueError(
        f"{NAN_MESSAGES[code]} Found in update {update} since reset, row {row} of that batch: the "
        "update added nothing (on this device the check runs without a synchronization, so it is "
        "reported here; see docs/contract.md)."
    )


def refuse_now(codes: torch.Tensor) -> None:
    """Raises at once (one synchronization) if ``codes`` refuse the batch."""
    code = int(codes.amax()) * nan_code(codes) if codes.numel() else 0
    if code:
        raise ValueError(NAN_MESSAGES[code])


def accumulate_or_refuse(metrics: Sequence, ranked, accumulate: Callable, *args) -> None:
    """Runs ``accumulate(*args)`` for ``metrics`` (one metric, or a group's members, which share
    one record), refusing a batch whose rows the generic kernels found NaN in (``ranked.refused``):
    later, on the device, or at once where per-query values are kept (they cannot be taken back)."""
    warn_of_host_state(metrics, ranked.relevant)
    codes = ranked.refused
    if codes is not None and any(metric._keeps_values for metric in metrics):
        refuse_now(codes)
    if codes is None or any(metric._keeps_values for metric in metrics):
        accumulate(*args)
    else:
        metrics[0]._refusal.taken_back(metrics, codes, lambda: accumulate(*args))
