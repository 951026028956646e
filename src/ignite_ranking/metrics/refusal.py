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

from ..kernels.inputs import NAN_MESSAGES
from .devices import warn_of_host_state

__all__ = ["DeferredRefusal", "accumulate_or_refuse", "refusal_error", "refuse_now"]


class DeferredRefusal:
    """The device-side record of the first refused update since ``reset`` (module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> DeferredRefusal:
        self.updates = 0  # updates since reset
        self.record: torch.Tensor | None = None  # int64 (3,): code (0: none), update, row
        return self

    def note(self, codes: torch.Tensor) -> torch.Tensor:
        """Records an update's ``(batch,)`` NaN codes; a 0-dim bool: whether it is accepted."""
        self.updates += 1
        code = codes.amax()
        row = (codes == code).to(torch.uint8).argmax()  # the first row of the refusal's kind
        update = torch.full((), self.updates, dtype=torch.int64, device=codes.device)
        found = torch.stack((code.to(torch.int64), update, row))
        refused = code > 0
        if self.record is None:
            self.record = torch.where(refused, found, 0)
        else:
            self.record = torch.where(refused & (self.record[0] == 0), found, self.record)
        return ~refused

    def taken_back(self, metrics: Sequence, codes: torch.Tensor, accumulate: Callable[[], None]) -> None:
        """Runs ``accumulate`` (which adds a batch to ``metrics``' sums and counts), then takes
        its additions back on the device if ``codes`` refuse the batch."""
        accept = self.note(codes)
        if len(metrics) > 1 and len({m._sum_per_k.device for m in metrics}) == 1:
            _taken_back_together(metrics, accept, accumulate)
            return
        saved = [(m._sum_per_k.clone(), m._num_examples.clone()) for m in metrics]
        accumulate()
        for metric, (sums, count) in zip(metrics, saved, strict=True):
            keep = accept.to(sums.device)
            metric._sum_per_k = torch.where(keep, metric._sum_per_k, sums)
            metric._num_examples = torch.where(keep, metric._num_examples, count)

    def read(self) -> torch.Tensor:
        """The record (zeros when none), to be read on the host with the sums."""
        return torch.zeros(3, dtype=torch.int64) if self.record is None else self.record

    def check(self) -> None:
        """Raises the recorded refusal, if any (one transfer)."""
        error = refusal_error(self.read().tolist())
        if error is not None:
            raise error


def _taken_back_together(metrics: Sequence, accept: torch.Tensor, accumulate: Callable[[], None]) -> None:
    """``taken_back`` for a group's members on one device, in a fixed number of launches: their
    sums and counts saved and restored side by side; each member's state becomes its rows
    (views) of the result."""
    sums = [m._sum_per_k for m in metrics]
    saved_sums, saved_counts = torch.cat(sums), torch.stack([m._num_examples for m in metrics])
    accumulate()
    keep = accept.to(saved_sums.device)
    kept_sums = torch.where(keep, torch.cat([m._sum_per_k for m in metrics]), saved_sums)
    kept_counts = torch.where(keep, torch.stack([m._num_examples for m in metrics]), saved_counts)
    rows = kept_sums.split([part.shape[0] for part in sums])
    for metric, part, count in zip(metrics, rows, kept_counts.unbind(), strict=True):
        metric._sum_per_k, metric._num_examples = part, count


def refusal_error(record: Sequence[int]) -> ValueError | None:
    """The ``ValueError`` of a record read on the host (code, update, row), or None."""
    code, update, row = record
    if code == 0:
        return None
    return ValueError(
        f"{NAN_MESSAGES[code]} Found in update {update} since reset, row {row} of that batch: the "
        "update added nothing (on this device the check runs without a synchronization, so it is "
        "reported here; see docs/contract.md)."
    )


def refuse_now(codes: torch.Tensor) -> None:
    """Raises at once (one synchronization) if ``codes`` refuse the batch."""
    code = int(codes.amax()) if codes.numel() else 0
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
