"""Exact top-k over a whole item catalog.

:func:`top_k` ranks every item of a catalog for every query, one chunk of items at a time,
without ever holding the ``(batch, num_items)`` score matrix (:mod:`.chunked`).
:func:`sharded_top_k` does the same for a catalog split across the processes of a
``torch.distributed`` group, one shard of items on each, with one all-gather of every
process's ``(batch, k)`` candidates (:mod:`.sharded`). Both give the same result, bit for bit.

Example:
    >>> import torch
    >>> from ignite_ranking import catalog
    >>> users, items = torch.eye(2), torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    >>> catalog.top_k(users, items, k=2, exclude=torch.tensor([[1], [-1]]))[1]
    tensor([[0, 2],
            [2, 0]])
"""

from .chunked import BLOCK_BYTES as _BLOCK_BYTES
from .chunked import top_k
from .sharded import sharded_top_k

BLOCK_BYTES = _BLOCK_BYTES  # bound here with its docstring, for the API page
"""Default size of one chunk's score block (``batch x chunk_size`` scores), 16 MiB."""

__all__ = ["BLOCK_BYTES", "sharded_top_k", "top_k"]
