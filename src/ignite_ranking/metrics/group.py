"""RankingMetrics: several ranking metrics fed by one ranking per batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from ignite.engine import Engine
from ignite.metrics import MetricGroup
from ignite.metrics.metric import EpochWise, MetricUsage

from ..distributed import guard_sampler, unguard_sampler
from ..kernels import check_flag
from ..kernels.exact_sum import carry_, limb_sums
from ..kernels.forms import (
    FlatRows,
    Ranking,
    Retrieved,
    check_ignore_index,
    flush,
)
from ..kernels.held import held_from_state, held_to_state
from .attached import EngineMetric
from .base import RankingMetric, ranking_of
from .batches import normalize_judged, split_extras
from .diversity import SubtopicMetric
from .intervals import bounds_by_name
from .label_notes import LabelNotes
from .options import check_empty_target_action, resolve_empty_target_action
from .per_query import PerQuery, flat_ids, query_keys
from .publishing import check_result_mode
from .readout import means_of
from .refusal import DeferredRefusal, accumulate_or_refuse
from .state import LoadedState, check_tensors

__all__ = ["RankingMetrics"]


class RankingMetrics(EngineMetric, MetricGroup):
    """A group of ranking metrics that ranks each batch once for all of its members.

    Attached to an engine, it publishes one scalar per member and cutoff in
    ``engine.state.metrics`` under ``"{member}@{k}"`` (``"{member}"`` for
    :class:`~ignite_ranking.RPrecision`), ready for Ignite's loggers, and the whole dict under the
    name it was attached with. Results equal those of the members used alone; the group's
    ``output_transform`` is the one applied (the members' own are not). All members must share
    ``relevance_threshold``, ``ties`` and ``ignore_index``, since they share one ranking: set them
    once on the group, and every member that did not set its own takes them. It takes
    every input form (:doc:`/inputs`); for the flat form the group, not its members, holds back
    the last query of each update.

    Args:
        metrics: a mapping of names to metrics; members may also be given as keyword arguments.
        output_transform: turns the engine's output into ``(y_pred, y)``.
        ignore_index: items (flat rows) whose label equals it are left out; members must have
            it or None. By default, the members' shared ``ignore_index``.
        skip_unrolling: as in :class:`ignite.metrics.Metric`.
        per_query: keep every member's per-query values (memory O(queries)) for
            :meth:`per_query_values`; members must then keep the same queries: all with
            ``ignore_zero_hits=True`` (``empty_target_action="skip"``) or none, and not relevance
            and list measures (Novelty, ...) together. An update may carry query ids as
            ``(y_pred, y, {"query_ids": ids})``.
        relevance_threshold, ties, ignore_zero_hits, empty_target_action, confidence: settings
            for every member that did not set its own (None: the members' own).
            ``ignore_zero_hits`` and ``empty_target_action`` are one setting (True is "skip",
            False "neg"): give one, or two that agree; a member that set either keeps its own
            only if it is the same action. A member that set another value itself is refused,
            naming it; members to which a setting does not apply (Coverage and GiniIndex count
            every list; they and GAUC pool their queries, so they have no interval) keep theirs.
        metrics_result_mode: what an engine's ``state.metrics`` gets, as ignite's ``Metric`` takes
            it: ``"both"`` (ignite's default) each scalar under its own name and the dict under
            the name the group is attached with; ``"flatten"`` the scalars only, each once, for
            loggers given ``metric_names="all"``; ``"named"`` the dict only (its intervals in
            it), which loggers log as ``"{name}/mrr@10"``: a prefix that keeps two groups on one
            engine apart. Two ranking metrics attached to one engine that would publish the
            same key are refused at attach.

    With ``confidence`` (say 0.95), :meth:`interval` gives every member's Student t interval, and
    an engine's ``state.metrics`` also gets ``"{member}@{k}_low"`` and ``"{member}@{k}_high"``.

    Example:
        >>> import torch
        >>> from ignite_ranking import MRR, NDCG, RankingMetrics, Recall
        >>> group = RankingMetrics(mrr=MRR([1, 10]), ndcg=NDCG([10]), recall=Recall([10, 50]))
        >>> group.update((torch.tensor([[0.2, 0.9, 0.4]]), torch.tensor([[1, 0, 0]])))
        >>> {name: round(value, 4) for name, value in group.compute().items()}
        {'mrr@1': 0.0, 'mrr@10': 0.3333, 'ndcg@10': 0.5, 'recall@10': 1.0, 'recall@50': 1.0}
    """

    def __init__(
        self,
        metrics: Mapping[str, RankingMetric] | None = None,
        *,
        output_transform: Callable = lambda x: x,
        skip_unrolling: bool = False,
        per_query: bool = False,
        ignore_index: int | None = None,
        relevance_threshold: float | None = None,
        ties: str | None = None,
        ignore_zero_hits: bool | None = None,
        confidence: float | None = None,
        empty_target_action: str | None = None,
        metrics_result_mode: str = "both",
        **members: RankingMetric,
    ):
        merged = _members(metrics, members)
        _apply_group_settings(
            merged,
            relevance_threshold=relevance_threshold,
            ties=ties,
            empty_target_action=_group_action(ignore_zero_hits, empty_target_action),
            confidence=confidence,
        )
        self._ranking = _shared_ranking(merged, ignore_index)
        self._held: FlatRows | None = None
        self._per_query = check_flag("per_query", per_query)
        if self._per_query:
            _check_per_query(merged)
            for metric in merged.values():
                metric._per_query = True
        # One set of notes for the group: it warns once, and each member's error reads it.
        self._label_notes = LabelNotes()
        self._refusal = DeferredRefusal()
        for metric in merged.values():
            metric._label_notes = self._label_notes
            metric._refusal = self._refusal
        super().__init__(merged, output_transform=output_transform, skip_unrolling=skip_unrolling)
        self._metrics_result_mode = check_result_mode(metrics_result_mode)

    def reset(self) -> None:
        self._held = None
        self._forget_loaded_state()
        super().reset()

    @property
    def _notes_owner(self) -> tuple[str, float] | None:
        """The group notes its labels when a member reads relevance (see LabelNotes.note)."""
        return ("RankingMetrics", self._ranking.relevance_threshold) if self._ranking.relevance else None

    def attach(self, engine: Engine, name: str, usage: str | MetricUsage = EpochWise.usage_name) -> None:
        """As :meth:`ignite.metrics.Metric.attach`; also warns once for the group (not per member)
        if the engine's data loader repeats or drops queries
        (see :class:`~ignite_ranking.distributed.PaddedSamplerWarning`)."""
        super().attach(engine, name, usage)
        guard_sampler(self, engine)

    def detach(self, engine: Engine, usage: str | MetricUsage = EpochWise.usage_name) -> None:
        super().detach(engine, usage)
        unguard_sampler(self, engine)

    def update(self, output: Sequence[torch.Tensor] | Retrieved) -> None:
        members = list(self.metrics.values())
        output, query_ids, judged = split_extras(output)
        normalized = normalize_judged(
            output,
            self._ranking,
            judged,
            members,
            held=self._held,
            first_query=self._label_notes.seen,  # for messages naming a bad query
            query_ids=query_ids,
        )
        ids = query_keys(output, query_ids, normalized.query_ids, self._per_query)
        for metric in members:  # every member checks the batch before any of them counts it
            metric.check_ranked(normalized.ranked)
        names = flat_ids(output, normalized)
        for metric in members:  # every member's refusal before any member's state changes
            metric.refuse_empty(normalized.ranked, names)
        accumulate_or_refuse(members, normalized.ranked, self._accumulate, normalized.ranked, ids)
        self._held = normalized.held
        self._label_notes.note(output, normalized.ranked, self._notes_owner)

    def per_query_values(self) -> PerQuery:
        """Every member's per-query values under the names of :meth:`compute`, one key column.

        Needs ``per_query=True``; call it on every process under ``ignite.distributed``. Pass
        two groups' results to :func:`ignite_ranking.compare.compare` to compare two models.

        Example:
            >>> import torch
            >>> from ignite_ranking import MRR, NDCG, RankingMetrics
            >>> group = RankingMetrics(mrr=MRR([10]), ndcg=NDCG([10]), per_query=True)
            >>> y_pred = torch.tensor([[0.2, 0.9, 0.4], [0.1, 0.2, 0.3]])
            >>> group.update((y_pred, torch.tensor([[1, 0, 0], [0, 0, 1]]), {"query_ids": [7, 3]}))
            >>> result = group.per_query_values()
            >>> result.keys.tolist(), result.values["mrr@10"].tolist()
            ([3, 7], [1.0, 0.3333333333333333])
        """
        if not self._per_query:
            raise ValueError("RankingMetrics keeps per-query values only when created with per_query=True.")
        keys, values = None, {}
        for name, metric in self.metrics.items():
            member = metric.per_query_values()
            keys = member.keys if keys is None else keys
            # The member's name in place of the metric's own: "mrr@10" -> "{name}@10".
            labels = [name + own[len(metric.name) :] for own in member.values]
            values.update(zip(labels, member.values.values(), strict=True))
        return PerQuery(keys, values)

    def interval(self) -> dict[str, tuple[float, float]]:
        """Each member's Student t intervals (see :meth:`ignite_ranking.MRR.interval`), under the
        names of :meth:`compute`, for the members with a ``confidence`` (all of them when the
        group was given one).

        Example:
            >>> import torch
            >>> from ignite_ranking import MRR, NDCG, RankingMetrics
            >>> group = RankingMetrics(mrr=MRR([3]), ndcg=NDCG([3]), confidence=0.9)
            >>> y = torch.tensor([[1, 0, 0], [1, 0, 0]])
            >>> group.update((torch.tensor([[0.2, 0.9, 0.4], [0.3, 0.2, 0.1]]), y))
            >>> {name: tuple(round(v, 3) for v in bounds) for name, bounds in group.interval().items()}
            {'mrr@3': (-1.438, 2.771), 'ndcg@3': (-0.828, 2.328)}
        """
        self._flush_held()
        intervals = {}
        for name, metric in self.metrics.items():
            if metric.confidence is not None:
                intervals.update(metric.intervals_by_name(name))
        return intervals

    def completed(self, engine, name: str) -> None:
        """As ignite's; with members' ``confidence``, also publishes ``"{member}@{k}_low"``/``_high``."""
        super().completed(engine, name)
        bounds = bounds_by_name(self.interval())
        named = self._metrics_result_mode == "named"
        (engine.state.metrics[name] if named else engine.state.metrics).update(bounds)

    def _accumulate(self, ranked, ids) -> None:
        """Every member adds the ranked batch; their values are summed in one pass."""
        members, pending = list(self.metrics.values()), []
        for metric in members:
            metric._pending_sums = pending
        try:
            for metric in members:
                metric.accumulate(ranked, query_ids=ids)
        finally:
            for metric in members:
                metric._pending_sums = None
        add_pending_sums(pending)

    def _flush_held(self) -> None:
        if self._held is not None:
            ranked = flush(self._held, self._ranking)
            ids = self._held.indexes[:1].cpu() if self._per_query else None
            for metric in self.metrics.values():
                metric.refuse_empty(ranked, self._held.indexes[:1])
            self._accumulate(ranked, ids)
            self._label_notes.note(None, ranked, self._notes_owner)
            self._held = None

    def check(self) -> None:
        """Raises the ``ValueError`` of a batch refused since ``reset`` on the device path, if
        any (see :meth:`ignite_ranking.MRR.check`)."""
        self._refusal.check()

    def compute(self) -> dict[str, float]:
        self._flush_held()
        results: dict[str, float] = {}
        means = _plain_means(self.metrics.values())
        for name, metric in self.metrics.items():
            value = means[id(metric)] if id(metric) in means else metric.compute()
            if isinstance(value, Mapping):  # several values per cutoff (ExpectedExposure)
                results.update({name + own[len(metric.name) :]: v for own, v in value.items()})
            elif metric.top_k is None:
                results[name] = value
            else:
                results.update({f"{name}@{k}": v for k, v in zip(metric.top_k, value, strict=True)})
        return results

    def _state_dict_per_rank(self):
        state = super()._state_dict_per_rank()
        state.update(held_to_state(self._held))
        return state

    def _load_state_dict_per_rank(self, state_dict: Mapping) -> None:
        # Every member's state and the held rows are checked before any member is loaded.
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"state_dict must be a mapping, got {type(state_dict).__name__}.")
        saved = state_dict.get("metrics")
        if not isinstance(saved, Mapping):
            raise ValueError(
                "state_dict['metrics'] must map each member's name to its state, as "
                f"RankingMetrics.state_dict() saves it; got {type(saved).__name__}."
            )
        if set(saved) != set(self.metrics):
            raise ValueError(
                f"state_dict['metrics'] holds the states of members {list(saved)}; this group's "
                f"members are {list(self.metrics)}. Load it into a group of the same members."
            )
        checked = {}
        for name, metric in self.metrics.items():
            try:
                checked[name] = metric._checked_state(saved[name])
            except (TypeError, ValueError) as error:
                raise type(error)(f"metric {name!r}: {error}") from None
        if self._per_query:
            _check_same_queries(checked)
        check_tensors(state_dict)
        held = held_from_state(state_dict)
        readers = [name for name, metric in self.metrics.items() if not metric.takes_flat]
        if held is not None and readers:
            raise ValueError(
                f"state_dict holds held-back rows of the flat form, which this group does not take "
                f"(its members {readers} read item ids); it is not a saved state of this group."
            )
        for name, metric in self.metrics.items():
            metric._assign_state(checked[name])
        self._held = held


def _members(metrics: Mapping[str, RankingMetric] | None, members: Mapping[str, RankingMetric]) -> dict:
    """The group's members by name, from ``metrics`` and the keyword arguments, each checked."""
    if metrics is not None and not isinstance(metrics, Mapping):
        # dict() of a list of metrics would never end: an ignite Metric iterates by __getitem__
        raise TypeError(
            "metrics must be a mapping of names to metrics, e.g. {'mrr': MRR([10])}, or keyword "
            f"arguments, got {type(metrics).__name__}"
        )
    merged = dict(metrics or {})
    for name in members:
        if name in merged:
            raise ValueError(f"metric name {name!r} is given twice.")
    merged.update(members)
    if not merged:
        raise ValueError("RankingMetrics needs at least one metric.")
    for name, metric in merged.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"metric names must be non-empty strings, got {name!r}.")
        if not isinstance(metric, RankingMetric):
            raise TypeError(
                f"metric {name!r} must be an ignite_ranking metric (MRR, NDCG, ...), got {type(metric)}."
            )
        if isinstance(metric, SubtopicMetric):
            raise TypeError(
                f"metric {name!r} ({type(metric).__name__}) reads subtopic labels, which the group's "
                "other members do not take: update it on its own."
            )
    if len({id(m) for m in merged.values()}) != len(merged):
        raise ValueError("each metric instance may appear in the group once.")
    return merged


def _group_action(ignore_zero_hits: bool | None, empty_target_action: str | None) -> str | None:
    """The group's ``empty_target_action`` from the two names of that one setting (None: neither)."""
    if ignore_zero_hits is None and empty_target_action is None:
        return None
    if ignore_zero_hits is not None:
        ignore_zero_hits = check_flag("ignore_zero_hits", ignore_zero_hits)
    return resolve_empty_target_action(ignore_zero_hits, check_empty_target_action(empty_target_action))


def _shared_ranking(members: Mapping[str, RankingMetric], ignore_index: object) -> Ranking:
    """The one ranking of the members, refusing members that cannot share it: another
    ``relevance_threshold`` (among those that read relevance), ``ties`` or ``ignore_index``
    (the group's, checked here, or else the members' one)."""
    # Members that read no relevance (Coverage, Novelty, ...) take any group's threshold.
    readers = [m for m in members.values() if m.reads_relevance] or list(members.values())
    thresholds, tie_policies = {m.relevance_threshold for m in readers}, {m.ties for m in members.values()}
    if len(thresholds) > 1 or len(tie_policies) > 1:
        raise ValueError(
            "members of one RankingMetrics must share relevance_threshold and ties, got "
            f"relevance_threshold {sorted(thresholds)} and ties {sorted(tie_policies)}; set them "
            "once on the group, or use separate groups for different settings."
        )
    ignore_index = check_ignore_index(ignore_index)
    indices = {m.ignore_index for m in members.values()}
    if ignore_index is None and len(indices) > 1:
        raise ValueError(
            f"members of one RankingMetrics must share ignore_index, got {indices}; or give the "
            "group's ignore_index."
        )
    if ignore_index is None:
        ignore_index = indices.pop()
    elif indices - {None, ignore_index}:
        raise ValueError(
            f"members of one RankingMetrics must have the group's ignore_index ({ignore_index}) "
            f"or None, got {sorted(indices - {None})}."
        )
    return ranking_of(list(members.values()), thresholds.pop(), tie_policies.pop(), ignore_index)


def _check_same_queries(checked: Mapping[str, LoadedState]) -> None:
    """Refuses loaded states whose members keep different queries (or in another order), which
    no update of a ``per_query`` group makes: ``per_query_values`` pairs the members row by row."""
    (first, state), *others = checked.items()
    for name, other in others:
        a, b = state.per_query, other.per_query  # every member of a per_query group keeps them
        if not (torch.equal(a.keys, b.keys) and (a.arrived, a.user_keys) == (b.arrived, b.user_keys)):
            raise ValueError(
                f"metric {name!r} keeps other queries than metric {first!r} (keys, count or kind); "
                "the members of a per_query group keep the same queries: it is not a saved state "
                "of this group."
            )


def _check_per_query(members: Mapping[str, RankingMetric]) -> None:
    """Refuses members that cannot give per-query values side by side: pooled ones, or members
    that keep different queries."""
    pooled = [name for name, m in members.items() if not m.has_per_query_values]
    if pooled:
        raise ValueError(
            f"per_query=True needs members with a value per query; {pooled} pool their "
            "queries (GAUC, Coverage, GiniIndex, ShannonEntropy): put them in a group "
            "without per_query."
        )
    kept = {name: m.keeps if m.ignore_zero_hits else "every query" for name, m in members.items()}
    if len(set(kept.values())) > 1:
        raise ValueError(
            "members of a per_query RankingMetrics must keep the same queries (share "
            f"ignore_zero_hits and what a query needs to count), got {kept}; use one group for "
            "the relevance measures and another for the list measures (Novelty, ...)."
        )


def _apply_group_settings(members: Mapping[str, RankingMetric], **settings: object) -> None:
    """Gives each member the group's settings (those not None) unless it set its own.

    A member that set a setting itself keeps it if equal and is refused if not; a setting that
    does not apply to a member (not among what its state means) leaves it alone.
    """
    given = {key: value for key, value in settings.items() if value is not None}
    for key, value in given.items():
        for name, metric in members.items():
            if not _applies(metric, key):
                continue
            if _sets(metric, key) and getattr(metric, key) != value:
                unset = _SAME.get(key, key)
                raise ValueError(
                    f"metric {name!r} sets {key}={getattr(metric, key)!r} and the group {key}={value!r}; "
                    f"leave {unset} unset on the member to take the group's, or give both the same value."
                )
    for name, metric in members.items():
        own = {key: value for key, value in given.items() if _applies(metric, key) and not _sets(metric, key)}
        if own:
            try:
                metric._set_settings(**own)
            except (TypeError, ValueError) as error:
                raise type(error)(f"metric {name!r}: {error}") from None
            metric.reset()  # the state's shape may change (confidence keeps squares)


# The empty_target_action of a member is set by its ignore_zero_hits too (True: 'skip', False: 'neg').
_SAME = {"empty_target_action": "ignore_zero_hits and empty_target_action"}


def _sets(metric: RankingMetric, key: str) -> bool:
    """Whether the member was given ``key`` itself (not left to its default)."""
    if key == "empty_target_action":
        return bool({"empty_target_action", "ignore_zero_hits"} & metric._explicit)
    return key in metric._explicit


def _applies(metric: RankingMetric, key: str) -> bool:
    if key == "confidence":
        return metric.has_per_query_values
    if key == "relevance_threshold" and not metric.reads_relevance:
        return False
    if key == "empty_target_action":
        key = "ignore_zero_hits"
    return key in metric._settings_keys


def _plain_means(members) -> dict:
    """The means of the members that :meth:`RankingMetric.compute` computes from their sums
    alone, each member's reduced state read to the host in one transfer for all of them."""
    plain = [m for m in members if type(m).compute is RankingMetric.compute and not m._keeps_values]
    if not plain:
        return {}
    states = [m._reduced_state() for m in plain]
    read = torch.cat([s.to(states[0].device) for s in states]).tolist()
    means, start = {}, 0
    for metric, state in zip(plain, states, strict=True):
        means[id(metric)] = means_of(metric, read[start : start + state.numel()])
        start += state.numel()
    return means


def add_pending_sums(pending: list[tuple[RankingMetric, torch.Tensor]]) -> None:
    """Adds each ``(metric, values)``'s exact sums to the metric's state, in one
    :func:`~ignite_ranking.kernels.exact_sum.limb_sums` pass over the values side by side where
    they share rows and device (each column is summed on its own, so the limbs are the same)."""
    if not pending:
        return
    first = pending[0][1]
    if any(v.shape[0] != first.shape[0] or v.device != first.device for _, v in pending):
        for metric, values in pending:
            metric._add_to_sums(limb_sums(values, carried=False))
        return
    sums = limb_sums(torch.cat([v.to(torch.float64) for _, v in pending], dim=1), carried=False)
    widths = [values.shape[1] for _, values in pending]
    states = [metric._sum_per_k[:width] for (metric, _), width in zip(pending, widths, strict=True)]
    if any(state.device != sums.device for state in states):
        for (metric, _), part in zip(pending, sums.split(widths), strict=True):
            metric._add_to_sums(part)
        return
    # Every member's rows added and carried at once (carrying works row by row: the same limbs).
    totals = carry_(torch.cat(states) + sums)
    for state, total in zip(states, totals.split(widths), strict=True):
        state.copy_(total)
