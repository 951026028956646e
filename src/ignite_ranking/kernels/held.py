"""The flat form's held-back query in a saved state.

A stream of flat updates holds back its last query, which the next update may continue;
``state_dict`` saves those rows and ``load_state_dict`` refuses rows that no update holds back.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import torch

from .forms import FlatRows
from .inputs import _F64, _FLOAT_DTYPES, _LABEL_DTYPES

__all__ = ["HELD_KEYS", "held_from_state", "held_to_state"]


# The flat form's held-back query in a state_dict (empty tensors when none is held).
HELD_KEYS = ("_held_preds", "_held_target", "_held_indexes")


def held_to_state(held: FlatRows | None) -> OrderedDict:
    """The held-back rows as state_dict entries (copies)."""
    rows = (
        held.astuple()
        if held is not None
        else (torch.zeros(0, dtype=_F64),) * 2 + (torch.zeros(0, dtype=torch.int64),)
    )
    return OrderedDict((key, value.clone()) for key, value in zip(HELD_KEYS, rows, strict=True))


def held_from_state(state_dict: Mapping) -> FlatRows | None:
    """The held-back rows of a state_dict (copies; None if it holds none, as in states saved
    before them), refusing rows that no update holds back: the flat form's rows of one query."""
    present = [key for key in HELD_KEYS if key in state_dict]
    if not present:
        return None
    if len(present) < len(HELD_KEYS):
        raise ValueError(f"state_dict holds {present} of the held-back rows {list(HELD_KEYS)}, not all.")
    rows = [state_dict[key] for key in HELD_KEYS]
    for key, row in zip(HELD_KEYS, rows, strict=True):
        if not isinstance(row, torch.Tensor):
            raise TypeError(f"state_dict[{key!r}] must be a tensor, got {type(row).__name__}.")
    if len({tuple(r.shape) for r in rows}) != 1 or rows[0].ndim != 1 or len({r.device for r in rows}) != 1:
        raise ValueError(
            f"state_dict holds held-back rows {HELD_KEYS} of shapes {[tuple(r.shape) for r in rows]} on "
            f"devices {[str(r.device) for r in rows]}; expected 1-D tensors of one length on one device."
        )
    preds, target, indexes = rows
    if preds.numel() == 0:
        return None
    integral = not (indexes.is_floating_point() or indexes.is_complex()) and indexes.dtype != torch.bool
    if preds.dtype not in _FLOAT_DTYPES or target.dtype not in _LABEL_DTYPES or not integral:
        raise ValueError(
            f"state_dict's held-back rows {HELD_KEYS} must be floating scores, real labels and integer "
            f"query ids, got {preds.dtype}, {target.dtype} and {indexes.dtype}."
        )
    if bool(torch.isnan(preds).any()) or (target.is_floating_point() and bool(torch.isnan(target).any())):
        raise ValueError("state_dict's held-back rows ('_held_preds', '_held_target') must not hold NaN.")
    if bool((indexes != indexes[0]).any()):
        raise ValueError(
            f"state_dict['_held_indexes'] must name one query (an update holds back the rows of its "
            f"last query only), got ids {indexes.unique()[:5].tolist()}."
        )
    return FlatRows(preds.detach().clone(), target.detach().clone(), indexes.detach().to(torch.int64).clone())
