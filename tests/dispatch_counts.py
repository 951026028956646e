"""What a block of code would ask of an accelerator, counted on CPU.

:func:`counting` counts, while its block runs, the aten operators dispatched (a
``TorchDispatchMode``), the launching ones among them (those that write tensor data: not views,
metadata or bare allocations) and the host synchronizations: the operators whose result a device
must hand to the host before the next one can be queued (``_local_scalar_dense`` behind
``.item()``, ``bool()``, ``int()``; ``nonzero``; a boolean index; ``unique``; ``bincount``;
``repeat_interleave`` without ``output_size``, ...), and the Python-level reads that a CPU tensor
serves without any operator (``.tolist()``, ``.numpy()``, ``.cpu()``, ``.to("cpu")`` with the
string: a ``torch.device`` there is the metric's state device, taken to be the inputs') or uploads
(``torch.tensor``/``torch.as_tensor`` of Python data, ``torch.from_numpy``). Run the code under
``IGNITE_RANKING_KERNELS=generic`` to count the device path.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["Counts", "counting"]

aten = torch.ops.aten

# Operators that write no tensor data (besides views, which ``OpOverload.is_view`` names).
_NOT_LAUNCHING = {
    "empty",
    "empty_strided",
    "empty_like",
    "new_empty",
    "new_empty_strided",
    "_unsafe_view",
    "_reshape_alias",
    "lift_fresh",
    "size",
    "stride",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "sym_storage_offset",
    "is_contiguous",
    "is_same_size",
    "is_nonzero",
    "_local_scalar_dense",
    "resize_",
    "set_",
}

# Operators whose output shape (or value) the host must read before going on.
_SYNCING = {
    "_local_scalar_dense",
    "nonzero",
    "nonzero_numpy",
    "argwhere",
    "masked_select",
    "_unique",
    "_unique2",
    "unique_dim",
    "unique_consecutive",
    "unique_dim_consecutive",
    "bincount",
    "equal",
    "allclose",
    "histc",
}

_BOOL = (torch.bool, torch.uint8)


def _is_sync(func, args, kwargs) -> bool:
    name = func._schema.name.split("::")[-1]
    if name in _SYNCING:
        return True
    if name == "repeat_interleave":
        return kwargs.get("output_size") is None and (len(args) < 4 or args[3] is None)
    if name in ("index", "index_put", "index_put_", "_index_put_impl_"):
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        return any(isinstance(i, torch.Tensor) and i.dtype in _BOOL for i in indices)
    return False


@dataclass
class Counts:
    """What a block asked: operators, launching operators, host synchronizations (by name)."""

    ops: int = 0
    launches: int = 0
    sync_ops: collections.Counter = field(default_factory=collections.Counter)
    reads: collections.Counter = field(default_factory=collections.Counter)
    uploads: collections.Counter = field(default_factory=collections.Counter)
    launched: collections.Counter = field(default_factory=collections.Counter)
    _inside_read: int = 0

    @property
    def syncs(self) -> int:
        """Synchronizations: syncing operators outside a Python-level read, and those reads
        and uploads (one each, however many operators they run)."""
        return sum(self.sync_ops.values()) + sum(self.reads.values()) + sum(self.uploads.values())

    @property
    def transfers(self) -> int:
        """Device-to-host transfers: the Python-level reads and the syncing operators."""
        return sum(self.sync_ops.values()) + sum(self.reads.values())

    def summary(self) -> str:
        return (
            f"{self.ops} ops, {self.launches} launching, {self.syncs} syncs "
            f"{dict(self.sync_ops) | dict(self.reads) | dict(self.uploads)}"
        )


class _Mode(TorchDispatchMode):
    def __init__(self, counts: Counts) -> None:
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        counts = self.counts
        counts.ops += 1
        name = func._schema.name.split("::")[-1]
        if not func.is_view and name not in _NOT_LAUNCHING:
            counts.launches += 1
            counts.launched[name] += 1
        if not counts._inside_read and _is_sync(func, args, kwargs):
            counts.sync_ops[name] += 1
        return func(*args, **kwargs)


def _to_host(args, kwargs) -> bool:
    """Whether ``Tensor.to(*args, **kwargs)`` names the host as ``"cpu"``, a string: a
    ``torch.device`` argument is the state's device, the inputs' own on an accelerator."""
    targets = [*args[:1], kwargs.get("device")]
    return any(isinstance(t, str) and t.startswith("cpu") for t in targets)


@contextlib.contextmanager
def _python_hooks(counts: Counts) -> Iterator[None]:
    saved = {}

    def read(name, original, when=lambda args, kwargs: True):
        def hooked(*args, **kwargs):
            if counts._inside_read or not when(args[1:], kwargs):
                return original(*args, **kwargs)
            counts.reads[name] += 1
            counts._inside_read += 1
            try:
                return original(*args, **kwargs)
            finally:
                counts._inside_read -= 1

        return hooked

    def upload(name, original):
        def hooked(data, *args, **kwargs):
            if not counts._inside_read and not isinstance(data, torch.Tensor):
                counts.uploads[name] += 1
            return original(data, *args, **kwargs)

        return hooked

    for name in ("item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__"):
        saved[(torch.Tensor, name)] = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, read(name, getattr(torch.Tensor, name)))
    saved[(torch.Tensor, "to")] = torch.Tensor.to
    torch.Tensor.to = read("to(cpu)", torch.Tensor.to, _to_host)
    for name in ("tensor", "as_tensor", "from_numpy"):
        saved[(torch, name)] = getattr(torch, name)
        setattr(torch, name, upload(name, getattr(torch, name)))
    try:
        yield
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)


@contextlib.contextmanager
def counting() -> Iterator[Counts]:
    """Counts what the block dispatches and reads back (module docstring)."""
    counts = Counts()
    with _python_hooks(counts), _Mode(counts):
        yield counts
