"""Exact resume of an evaluation interrupted in the middle of an epoch.

Ignite's ``Engine``, once its state is loaded (``iteration``, ``epoch_length``), resumes the
epoch at that iteration but reads its data from the first batch again, and a metric's
``started`` handler resets it at the epoch's start. A ranking metric attached to an engine
therefore saves, beside its sums, where in the epoch the engine was (``_engine_position``: the
batches it counted and what the data loader was) and, at the start of a resumed epoch, keeps
its loaded state and positions the loader's
:class:`~ignite_ranking.distributed.EvaluationSampler` after the indices already counted,
refusing a resume that cannot be exact (other data, batch size, sampler or world size) with
what differs. See :doc:`/distributed` ("Resuming").
"""

from __future__ import annotations

import copy
import numbers
import sys
import warnings
from collections.abc import Mapping

import ignite.distributed as idist
from ignite.engine import Engine
from torch.utils.data import BatchSampler

from ..distributed import EvaluationSampler

__all__ = [
    "NOTHING_LOADED",
    "PER_RANK",
    "POSITION",
    "batches_done",
    "describe",
    "end_epoch",
    "loaded_position",
    "per_rank_state",
    "saved_position",
    "start_epoch",
]

# The key of a saved per-process state that holds the engine position (absent outside a run).
POSITION = "_engine_position"
# What a metric holds as its loaded position when no state was loaded since its last epoch.
NOTHING_LOADED = "nothing loaded"
# Ignite's key of the per-process states in Metric.state_dict().
PER_RANK = "__metric_state_per_rank"
_RECIPE = (
    "DataLoader(dataset, batch_size=..., sampler=EvaluationSampler(dataset)) (from "
    "ignite_ranking.distributed; it works on one process too)"
)


def describe(data: object) -> dict:
    """What a resume must find again of the engine's data: the sampler, sizes and ranks."""
    sampler = getattr(data, "sampler", None)
    batches = getattr(data, "batch_sampler", None)
    whole = type(batches) is BatchSampler and batches.sampler is sampler
    if isinstance(sampler, EvaluationSampler) and whole:
        return {
            "sampler": "EvaluationSampler",
            "dataset_size": int(sampler.total_size),
            "num_replicas": int(sampler.num_replicas),
            "rank": int(sampler.rank),
            "batch_size": int(batches.batch_size),
            "drop_last": bool(batches.drop_last),
        }
    kind = type(sampler).__name__ if sampler is not None else type(data).__name__
    try:
        size = len(data)  # type: ignore[arg-type]
    except TypeError:
        size = None
    return {"sampler": kind, "length": size}


def _length(data: object) -> int:
    """The number of batches in ``data``'s epoch (the largest int if it has no ``len()``)."""
    try:
        return len(data)  # type: ignore[arg-type]
    except TypeError:
        return sys.maxsize


def _skippable(data: object) -> EvaluationSampler | None:
    """The EvaluationSampler that the engine's data draws from in whole batches, or None."""
    described = describe(data)
    if described["sampler"] == "EvaluationSampler" and not described["drop_last"]:
        return data.sampler  # type: ignore[attr-defined]
    return None


def batches_done(engine: Engine) -> int:
    """How many batches of the current epoch the engine has run (at its ``EPOCH_STARTED``)."""
    state = engine.state
    if not state.epoch_length or not state.iteration:
        return 0
    return int(state.iteration - (state.epoch - 1) * state.epoch_length)


def per_rank_state(owner: str, state_dict: object) -> dict:
    """This process's entry of ``state_dict`` (a copy), refusing another number of processes."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}.")
    if set(state_dict) != {PER_RANK} or not isinstance(state_dict[PER_RANK], (list, tuple)):
        raise ValueError(
            f"state_dict must be what {owner}.state_dict() returns, a mapping of {PER_RANK!r} to a list of "
            f"per-process states; got the keys {list(state_dict)}."
        )
    states, world = state_dict[PER_RANK], idist.get_world_size()
    if len(states) != world:
        raise ValueError(
            f"{owner}: state_dict holds the states of {len(states)} process(es) and this run has {world}. "
            "Each process's state holds the sums of the queries it read, and the queries left would "
            f"be shared out differently, so the resume could not be exact: resume on {len(states)} "
            "process(es), or start the evaluation over with fresh metrics and engine."
        )
    state = states[idist.get_rank()]
    if not isinstance(state, Mapping):
        raise TypeError(f"state_dict[{PER_RANK!r}] must hold mappings, got {type(state).__name__}.")
    return dict(state)


def loaded_position(state: dict) -> dict | None:
    """Pops the engine position of a per-process state, checked (None if it was saved without)."""
    position = state.pop(POSITION, None)
    if position is None:
        return None
    batches = position.get("batches") if isinstance(position, Mapping) else None
    data = position.get("data") if isinstance(position, Mapping) else None
    counted = isinstance(batches, numbers.Integral) and not isinstance(batches, bool) and batches >= 0
    if not counted or not isinstance(data, Mapping):
        raise ValueError(
            f"state_dict[{POSITION!r}] must map 'batches' to a count and 'data' to what the data loader "
            f"was, as state_dict() saves it; got {position!r}."
        )
    return {"batches": int(batches), "data": dict(data)}


def _differences(saved: Mapping, here: Mapping) -> list[str]:
    return [
        f"{key} (saved {saved.get(key)!r}, here {here.get(key)!r})"
        for key in dict.fromkeys([*saved, *here])
        if saved.get(key) != here.get(key)
    ]


def start_epoch(metric, engine: Engine) -> bool:
    """At ``EPOCH_STARTED``: True if ``metric`` keeps its loaded state (a resumed epoch), after
    positioning the data; False if it is to reset (a fresh epoch). Raises when a resume cannot
    be exact."""
    owner = type(metric).__name__
    loaded = metric.__dict__.pop("_loaded_position", NOTHING_LOADED)
    data = engine.state.dataloader
    described, sampler, done = describe(data), _skippable(data), batches_done(engine)
    if done == 0:
        if sampler is not None:
            sampler.resume_after(0)
            if engine.state.epoch_length and engine.state.epoch_length > len(data):  # type: ignore[arg-type]
                _own_epoch(engine, len(data), 0)  # type: ignore[arg-type]
        if isinstance(loaded, dict) and 0 < loaded["batches"] < _length(data):  # a whole epoch: done
            warnings.warn(
                f"{owner}: the state loaded into it (after {loaded['batches']} batches) is reset, since the "
                "engine starts its epoch from the first batch; to resume, load the engine's state too "
                "(Checkpoint.load_objects({'metric': metric, 'evaluator': evaluator}, checkpoint)).",
                UserWarning,
                stacklevel=3,
            )
        metric._engine_position = {"batches": 0, "data": described}
        return False
    if loaded is NOTHING_LOADED:
        warnings.warn(
            f"{owner}: the engine resumes its epoch after {done} batches, and no state was loaded into this "
            "metric (or it was reset since), so it counts only the batches from there on; load its state "
            "from the same checkpoint as the engine's for the result of the whole epoch.",
            UserWarning,
            stacklevel=3,
        )
        metric._engine_position = {"batches": done, "data": described}
        return False
    if loaded is None:
        raise ValueError(
            f"{owner}: the engine resumes its epoch after {done} batches, but the loaded state records no "
            "position in it (it was saved outside an engine run, or by an older version), so the batches "
            "it counted are not known; resume from a checkpoint taken during the engine's run."
        )
    differ = _differences(loaded["data"], described)
    if differ:
        raise ValueError(
            f"{owner}: the checkpoint was saved over other data than this run reads, so the queries left "
            f"are not those it had not counted; differing: {', '.join(differ)}. Resume with the same data "
            "set, sampler, batch size and number of processes."
        )
    if sampler is None:
        raise ValueError(
            f"{owner}: the engine resumes its epoch after {done} batches but reads its data "
            f"({described['sampler']}) from the first batch again, so those would count twice. Give the "
            f"engine {_RECIPE}, which skips the indices already counted."
        )
    if loaded["batches"] != done:
        parted = (
            " On several processes whose shares have unequal batch counts, the processes' iterations "
            "part after the first epoch and every process loads rank 0's engine state: run such an "
            "evaluator one epoch per run."
            if engine.state.epoch > 1 and idist.get_world_size() > 1
            else ""
        )
        raise ValueError(
            f"{owner}: the loaded state counts {loaded['batches']} batches of the epoch and the engine "
            f"{done}; save both at the same event, after the metric's update (attach the metric before "
            f"adding the Checkpoint handler to the same event).{parted}"
        )
    sampler.resume_after(min(done * described["batch_size"], len(sampler)))
    if engine.state.epoch_length != len(data):  # type: ignore[arg-type]
        _own_epoch(engine, len(data), done)  # type: ignore[arg-type]
    metric._engine_position = {"batches": done, "data": described}
    return True


def _own_epoch(engine: Engine, length: int, done: int) -> None:
    """This rank's epoch length and iteration count in place of rank 0's, which every process
    loads from its checkpoint: ignite would read this rank's data again to make up rank 0's
    count, and starts its count in the epoch at ``iteration % epoch_length``."""
    engine.state.epoch_length = length
    engine.state.iteration = (engine.state.epoch - 1) * length + done


def end_epoch(engine: Engine) -> None:
    """At ``EPOCH_COMPLETED``: the data's sampler yields all its indices again."""
    sampler = _skippable(engine.state.dataloader)
    if sampler is not None:
        sampler.resume_after(0)


def saved_position(metric) -> dict | None:
    """A copy of the engine position to save with the state (None outside an engine's run)."""
    position = metric._engine_position
    return None if position is None else copy.deepcopy(position)
