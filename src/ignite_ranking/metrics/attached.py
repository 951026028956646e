"""How a ranking metric (or group) behaves on an ignite ``Engine``, beside ignite's own ``Metric``.

:class:`EngineMetric` is the common base of :class:`~ignite_ranking.metrics.base.RankingMetric`
and :class:`~ignite_ranking.RankingMetrics`: its ``state_dict()`` also saves where in the epoch
the engine was, so that ``Checkpoint.load_objects`` and ``engine.run`` resume the epoch exactly
(:mod:`~ignite_ranking.metrics.resume`); ``attach`` refuses keys that another ranking metric on
the engine publishes, and an update from ignite's ``RunningAverage`` is refused with what to
use instead (:mod:`~ignite_ranking.metrics.publishing`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import ignite.distributed as idist
from ignite.engine import Engine, Events
from ignite.metrics import Metric
from ignite.metrics.metric import EpochWise, MetricUsage

from .publishing import check_keys, refuse_running_average
from .resume import (
    PER_RANK,
    POSITION,
    end_epoch,
    loaded_position,
    per_rank_state,
    saved_position,
    start_epoch,
)

__all__ = ["EngineMetric"]


class EngineMetric(Metric):
    """An ignite ``Metric`` whose state resumes an engine's epoch exactly (see the module)."""

    # Where in the current epoch of the engine it runs on the metric is: {"batches", "data"}, or
    # None outside an engine run (class defaults: ignite's Metric answers any missing name).
    _engine_position: dict | None = None
    _feed_checked = False

    def attach(self, engine: Engine, name: str, usage: str | MetricUsage = EpochWise.usage_name) -> None:
        check_keys(self, engine, name)
        super().attach(engine, name, usage)

    def started(self, engine: Engine) -> None:
        """Resets the metric, unless a loaded state resumes the engine's epoch (``EPOCH_STARTED``)."""
        self._feed_checked = True
        if engine.last_event_name == Events.EPOCH_STARTED and start_epoch(self, engine):
            return
        super().started(engine)

    def iteration_completed(self, engine: Engine) -> None:
        if not self._feed_checked:
            refuse_running_average(self, engine)
            self._feed_checked = True
        super().iteration_completed(engine)
        if self._engine_position is not None:
            self._engine_position["batches"] += 1

    def completed(self, engine: Engine, name: str) -> None:
        super().completed(engine, name)
        if engine.last_event_name == Events.EPOCH_COMPLETED:  # a state saved from now on is whole
            end_epoch(engine)
            self._engine_position = None

    def _forget_loaded_state(self) -> None:
        """Called by ``reset``: a metric reset by hand after a load resumes no epoch."""
        self.__dict__.pop("_loaded_position", None)

    def state_dict(self) -> OrderedDict:
        """As ignite's (one state per process, all-gathered); during an engine's epoch (until its
        ``EPOCH_COMPLETED``), each also holds the engine's position in it, which a resumed epoch
        checks."""
        state = self._state_dict_per_rank()
        position = saved_position(self)
        if position is not None:
            state[POSITION] = position
        states = idist.all_gather(state) if idist.get_world_size() > 1 else [state]
        return OrderedDict([(PER_RANK, states)])

    def load_state_dict(self, state_dict: Mapping) -> None:
        """As ignite's; a state saved on another number of processes is refused, saying why, and
        one saved inside an engine's epoch resumes it when the engine runs again."""
        state = per_rank_state(type(self).__name__, state_dict)
        position = loaded_position(state)
        self._load_state_dict_per_rank(state)
        self.__dict__["_loaded_position"] = position
