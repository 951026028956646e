"""The shared base of every ranking metric: its lifecycle, from the options to ``compute``.

Each other idea has its module beside it: ``options``, ``batches`` (input forms), ``cutoff_tail``
(cutoffs past the ranked depth), ``per_query``, ``state`` (the saved state) and ``intervals``.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch
from ignite.engine import Engine
from ignite.metrics.metric import EpochWise, MetricUsage, reinit__is_reduced, sync_all_reduce

from ..distributed import guard_sampler, unguard_sampler
from ..kernels import RankedBatch, check_flag, normalize_top_k
from ..kernels.exact_sum import LIMBS, carry_, limb_sums
from ..kernels.forms import FlatRows, Ranking, Retrieved, check_ignore_index, flush
from ..kernels.judged import condense
from ..kernels.ties import AskedCutoffs
from .attached import EngineMetric
from .batches import normalize_judged, split_extras
from .cutoff_tail import cutoff_ks, spread_tail, tail_start, tail_sums
from .intervals import bounds_by_name, t_intervals
from .label_notes import LabelNotes
from .options import (
    OPTION_DEFAULTS,
    RankingOptions,
    checked_settings,
    documented_signature,
    given_options,
    refuse_empty_rows,
)
from .per_query import (
    PerQuery,
    aggregate,
    flat_ids,
    gather_per_query,
    keep_per_query,
    query_keys,
    refuse_repeated_keys,
)
from .readout import means_of, reduced_state
from .refusal import DeferredRefusal, accumulate_or_refuse
from .state import (
    LoadedState,
    assign_state,
    check_limbs,
    check_settings,
    checked_state,
    loaded_sums,
    saved_state,
    settings_of,
)

if TYPE_CHECKING:
    from .options import Unpack

__all__ = ["RankingMetric", "ranking_of"]
_WHOLE_ROW = sys.maxsize // 2  # a depth that makes the kernel rank every item of a row


class RankingMetric(EngineMetric):
    """Base of the ranking metrics: exact per-cutoff sums and an int64 query count.

    A subclass sets ``name``, implements :meth:`score` (or :meth:`score_at`), and declares what
    it reads and which options it offers with the class attributes below. ``judged_only=True``
    scores the condensed ranking without the unjudged items (ranking whole rows to find it).
    The state is a few numbers per cutoff, all-reduced once in :meth:`compute`, and, for the flat
    form, the rows of at most one query held back until the next update (:doc:`/inputs`). The
    sums are fixed-point integers (:mod:`ignite_ranking.kernels.exact_sum`): the result is the
    same to the bit whatever the batch sizes, their order or the number of processes.

    With ``per_query=True`` the metric also keeps each counted query's values and key (memory
    O(queries), see :mod:`ignite_ranking.metrics.per_query`), gathered across processes by
    :meth:`per_query_values`. An ``aggregation`` other than ``"mean"`` keeps them too (the mean
    needs only the sums), and :meth:`compute` aggregates them.

    ``empty_target_action`` (torchmetrics' name) says what happens to the queries that
    :meth:`counted` rejects: ``"skip"`` leaves them out (``ignore_zero_hits=True``), ``"neg"``
    counts them with their value (0, or a ``zero_without_hits = False`` metric's own value;
    ``ignore_zero_hits=False``), ``"pos"`` counts them as 1 on every value, and ``"error"``
    refuses the update that holds one (:meth:`refuse_empty`, before any state changes).
    """

    name = "ranking"  # the values' names: "mrr@10", and the "metric" of settings()
    takes_top_k = True  # False: one value per query and no cutoffs (SingleValueMetric)
    # What the kernel gathers for score() (see the ranking property, kernels.forms.Ranking):
    needs_counts = False  # each row's count R of relevant items (Recall, AP)
    needs_ideal = False  # each row's largest labels, the ideal ranking (IDCG)
    needs_labels = True  # False: reads only the relevance of the ranked items, not their labels
    covers_relevant = False  # R and the relevant items among the top R (R-Precision)
    whole_row = False  # reads every ranked position (depth: the whole row)
    needs_nonrelevant = False  # N, each row's judged non-relevant items (bpref, AUC)
    needs_scores = False  # the ranked scores (AUC, GAUC)
    needs_items = False  # the item ids (catalog measures; not with the flat form)
    needs_levels = False  # the ideal ranking's runs of equal labels (Ranking(runs=True))
    # False: reads no relevance at all (the catalog measures), so that a group does not ask it
    # to share relevance_threshold.
    reads_relevance = True
    # Which queries count under ignore_zero_hits=True (a per_query group's members must agree).
    keeps = "queries with a relevant item"
    # False: the metric pools its queries (no per-query values, aggregation or confidence).
    has_per_query_values = True
    # False: the metric scores a query without relevant items (masked out under "skip").
    zero_without_hits = True
    # Which queries count in the mean (the end of "none of the queries ..."), for the error of
    # a metric that counted none.
    count_rule = "had a label >= relevance_threshold"
    # What a query that :meth:`counted` rejects lacks, for empty_target_action="error".
    empty_rule = "has no label >= relevance_threshold={threshold:g}"
    # What the values do at the cutoffs at or past the ranked depth K (every ranked position
    # within them): None, no promise (scored at each cutoff); "repeat", every such cutoff has the
    # value of the first; "divide", a numerator that stops growing divided by k (P@k = hits / k).
    # Either way such cutoffs cost O(1) per query, not one value each (metrics.cutoff_tail). A
    # metric whose values go on changing past K (Serendipity's PM_k) overrides _tail to start later.
    cutoff_tail: str | None = None
    # Why the metric has no value under ``ties="average"`` (it is then refused), or None.
    without_average: str | None = None
    required_output_keys = ("y_pred", "y")  # as ignite's Metric: the keys of a dict output
    _state_dict_all_req_keys = ("_sum_per_k", "_num_examples")  # what state_dict() saves
    # The arguments that change what the sums mean; ``settings()`` saves them with the state.
    _settings_keys = ("top_k", "ignore_zero_hits", "relevance_threshold", "ties", "ignore_index")
    # The range of every per-query value where the metric's definition bounds it, (low, high),
    # else None (any value below 2**31 in magnitude, or flagged); a loaded state's sums must be
    # what its count of such values can give (see ignite_ranking.metrics.state).
    value_range: tuple[float, float] | None = None

    # The options a class offers (of RankingOptions; anything else is Python's "unexpected keyword
    # argument"), and those its *args stand for, in order, after its own positional arguments.
    options_offered: frozenset[str] = frozenset(OPTION_DEFAULTS)
    positional_options: tuple[str, ...] = (
        "ignore_zero_hits",
        "relevance_threshold",
        "output_transform",
        "device",
        "skip_unrolling",
    )
    # The defaults of a class's own options taken among positional_options (NDCG's gain_function).
    option_defaults: Mapping[str, object] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.__signature__ = documented_signature(cls)

    def __init__(self, top_k: int | list[int], *args, **options: Unpack[RankingOptions]):
        given = given_options(type(self), args, options)
        # Which options the caller set: a group's settings apply to the members that did not set
        # their own (see RankingMetrics).
        self._explicit = frozenset(given)
        option = {**OPTION_DEFAULTS, **given}
        self.top_k = self._cutoffs(top_k)
        self.judged_only = check_flag("judged_only", option["judged_only"])
        self.ignore_index = check_ignore_index(option["ignore_index"])
        self._per_query = check_flag("per_query", option["per_query"])
        # ignore_zero_hits is read only when given, or when empty_target_action is not (its
        # default would otherwise contradict every action but "skip").
        action = option["empty_target_action"]
        empty = {} if action is None else {"empty_target_action": action}
        if action is None or "ignore_zero_hits" in given:
            empty["ignore_zero_hits"] = option["ignore_zero_hits"]
        self._set_settings(
            **empty,
            relevance_threshold=option["relevance_threshold"],
            ties=option["ties"],
            confidence=option["confidence"],
            aggregation=option["aggregation"],
        )
        super().__init__(
            option["output_transform"], device=option["device"], skip_unrolling=option["skip_unrolling"]
        )

    def _cutoffs(self, top_k: object) -> list[int] | None:
        """The checked cutoffs (None for a metric without them)."""
        return normalize_top_k(top_k) if self.takes_top_k else None

    def _set_settings(self, **settings) -> None:
        """Checks and sets ``ignore_zero_hits``, ``empty_target_action``, ``relevance_threshold``,
        ``ties``, ``confidence`` and ``aggregation`` (those given), refusing a combination the
        metric does not define.

        ``ignore_zero_hits`` and ``empty_target_action`` are one setting: given together they
        must agree (True is "skip", False "neg"); either sets both attributes
        (``ignore_zero_hits`` is True for "skip" only).
        """
        self.__dict__.update(checked_settings(self, settings))

    @property
    def depth(self) -> int:
        """How many ranked positions per query the metric reads."""
        if self.whole_row or self.judged_only:
            return _WHOLE_ROW
        return self.top_k[-1] if self.top_k else 1

    @property
    def num_values(self) -> int:
        return len(self.top_k) if self.top_k else 1

    @property
    def value_names(self) -> list[str]:
        """The names of the values, as a group names them: ``"mrr@10"``, or ``"r_precision"``."""
        return [f"{self.name}@{k}" for k in self.top_k] if self.top_k else [self.name]

    def score(self, ranked: RankedBatch) -> torch.Tensor:
        """Per-query values ``(batch, num_values)`` of a ranked batch."""
        return self.score_at(ranked, self.top_k)

    def score_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        """Per-query values ``(batch, len(cutoffs))`` at some of the metric's cutoffs (ascending);
        a metric with a ``cutoff_tail`` implements this instead of :meth:`score`."""
        raise NotImplementedError

    def numerators_at(self, ranked: RankedBatch, cutoffs: Sequence[int]) -> torch.Tensor:
        """``(batch, len(cutoffs))`` float64, for ``cutoff_tail = "divide"``: the numerators whose
        quotients by the cutoffs are :meth:`score_at`'s values, to the bit."""
        raise NotImplementedError

    def check_ranked(self, ranked: RankedBatch) -> None:
        """Raises ``ValueError`` if the metric cannot score ``ranked``; called before any state
        changes (by :meth:`update`, and by a group for all its members first)."""

    @property
    def item_statistics(self) -> tuple[str, int] | None:
        """``(argument, n)`` for a metric given statistics of items ``0 .. n-1`` (such as
        ``item_popularity``): a dense or sparse batch must then have n columns, and a Retrieved's
        ids lie below n (checked by :meth:`update` before any state changes). None without."""
        return None

    def counted(self, ranked: RankedBatch) -> torch.Tensor:
        """``(batch,)`` bool: the rows that count in the mean under ``ignore_zero_hits=True``."""
        return ranked.num_relevant > 0

    def attach(self, engine: Engine, name: str, usage: str | MetricUsage = EpochWise.usage_name) -> None:
        """As :meth:`ignite.metrics.Metric.attach`; also warns (once) if the engine's data loader
        repeats or drops queries (see :class:`~ignite_ranking.distributed.PaddedSamplerWarning`)."""
        super().attach(engine, name, usage)
        guard_sampler(self, engine)

    def detach(self, engine: Engine, usage: str | MetricUsage = EpochWise.usage_name) -> None:
        super().detach(engine, usage)
        unguard_sampler(self, engine)

    @property
    def ranking(self) -> Ranking:
        """What this metric needs of a ranked batch."""
        return ranking_of([self], self.relevance_threshold, self.ties, self.ignore_index)

    @property
    def takes_flat(self) -> bool:
        """Whether updates take the flat form (and so may hold back its last query's rows): not
        for the metrics that read item ids, which flat rows do not name."""
        return not self.needs_items

    @property
    def reads_labels(self) -> bool:
        """Whether the ranked labels are read (gains, or the condensed judged-only list)."""
        return self.needs_labels or self.judged_only

    @reinit__is_reduced
    def reset(self) -> None:
        self._sum_per_k = self._zero_sums()
        self._num_examples = torch.zeros((), dtype=torch.int64, device=self._device)
        self._held: FlatRows | None = None
        self._reset_per_query()
        if "_label_notes" in self.__dict__:  # shared with a group's other members: reset in place
            self._label_notes.reset()
        else:
            self._label_notes = LabelNotes()
        self._refusal = self._refusal.reset() if "_refusal" in self.__dict__ else DeferredRefusal()
        self._forget_loaded_state()

    def _reset_per_query(self) -> None:
        self._query_values: list[torch.Tensor] = []
        self._query_keys: list[torch.Tensor] = []
        self._queries_arrived = 0
        self._user_keys: bool | None = None  # whether the keys are the user's ids (None: no query yet)
        self._gathered: PerQuery | None = None

    @reinit__is_reduced
    def update(self, output: Sequence[torch.Tensor] | Retrieved) -> None:
        """Adds a batch in any input form: ``(y_pred, y)`` (``y`` dense or sparse),
        ``(preds, target, indexes)`` or a :class:`~ignite_ranking.Retrieved`; with
        ``per_query=True``, ``(y_pred, y, {"query_ids": ids})`` too; a dense batch may carry
        ``{"judged": mask}`` there (see :doc:`/metrics/judged`)."""
        output, query_ids, judged = split_extras(output)
        normalized = normalize_judged(
            output,
            self.ranking,
            judged,
            [self],
            held=self._held,
            first_query=self._label_notes.seen,  # for messages naming a bad query
            query_ids=query_ids,
        )
        ids = query_keys(output, query_ids, normalized.query_ids, self._per_query)
        self.check_ranked(normalized.ranked)
        self.refuse_empty(normalized.ranked, flat_ids(output, normalized))
        accumulate_or_refuse([self], normalized.ranked, self.accumulate, normalized.ranked, ids)
        self._held = normalized.held
        self._label_notes.note(output, normalized.ranked, self._notes_owner)

    def check(self) -> None:
        """Raises the error of a batch refused since ``reset`` on the device path (docs/contract.md)."""
        self._refusal.check()

    def close_held(self) -> None:
        """Counts the flat form's held-back query as complete (``compute`` does this first)."""
        if self._held is not None:
            ids = self._held.indexes[:1].cpu() if self._per_query else None
            ranked = flush(self._held, self.ranking)
            self.refuse_empty(ranked, self._held.indexes[:1])
            self.accumulate(ranked, query_ids=ids)
            self._label_notes.note(None, ranked, self._notes_owner)
            self._held = None

    def refuse_empty(self, ranked: RankedBatch, flat_query_ids: torch.Tensor | None) -> None:
        """Under ``empty_target_action="error"``, raises ``ValueError`` for a batch with a query
        that :meth:`counted` rejects, naming it: by its id (``flat_query_ids``, the flat form's
        ``indexes`` of each ranked row), else by its row in the batch. Changes nothing."""
        if self.empty_target_action == "error":
            self.refuse_empty_rows(~self.counted(ranked), flat_query_ids)

    def refuse_empty_rows(self, empty: torch.Tensor, flat_query_ids: torch.Tensor | None) -> None:
        """:meth:`refuse_empty` for a ``(batch,)`` mask of the rejected rows."""
        refuse_empty_rows(self, empty, flat_query_ids)

    @reinit__is_reduced
    def accumulate(self, ranked: RankedBatch, query_ids: torch.Tensor | None = None) -> None:
        """Adds the values of a ranked batch to the sums (no checks: the batch is valid, and
        :meth:`refuse_empty` has passed it)."""
        scored = condense(ranked) if self.judged_only else ranked
        tail = self._tail(scored.depth)
        numerators = None
        if tail is None:
            values = self.score(scored)
        elif self.cutoff_tail == "divide":
            numerators = self.numerators_at(scored, AskedCutoffs(self.top_k[: tail + 1], len(self.top_k)))
            values = numerators / cutoff_ks(self, numerators.device)[: tail + 1]
            numerators = numerators[:, -1]  # at the first cutoff at or past the depth, and beyond
        else:
            values = self.score_at(scored, AskedCutoffs(self.top_k[: tail + 1], len(self.top_k)))
        counted = self.counted(ranked) if self.empty_target_action in ("skip", "pos") else None
        self.add_values(values, counted, query_ids, tail=tail, numerators=numerators)

    def add_values(
        self,
        values: torch.Tensor,
        counted: torch.Tensor | None,
        query_ids: torch.Tensor | None = None,
        *,
        tail: int | None = None,
        numerators: torch.Tensor | None = None,
    ) -> None:
        """Adds ``(batch, num_values)`` per-query values to the sums; ``counted`` (the rows that
        :meth:`counted` accepts) is needed under ``empty_target_action`` "skip" and "pos".

        With ``tail`` (see :meth:`accumulate`), ``values`` hold the cutoffs up to ``top_k[tail]``
        only, the first at or past the ranked depth, which stands for the later ones; under
        ``cutoff_tail = "divide"``, ``numerators`` ``(batch,)`` are its numerators.
        """
        action = self.empty_target_action
        # A query without relevant items scores 0 (the scorers' contract), so under "skip" it
        # adds nothing to the sums and only the count leaves it out: no host synchronization,
        # and no masked copy of the (batch, cutoffs) values, which can be large. Measures that
        # score such a query (Judged@k, the RBP residual) are masked.
        masked = action == "pos" or (action == "skip" and not self.zero_without_hits)
        fill = 1.0 if action == "pos" else 0.0
        if masked:
            values = torch.where(counted[:, None], values, fill)
        if numerators is not None and masked:  # those of the filled queries are left out (tail_sums)
            numerators = torch.where(counted, numerators, 0.0)
        if self._keeps_values:
            kept = (
                values if tail is None else spread_tail(self, values, tail, numerators, counted, fill, masked)
            )
            keep_per_query(self, kept, query_ids, counted if action == "skip" else None)
        if action == "skip":
            self._num_examples += counted.sum().to(self._device)
        else:
            self._num_examples += values.shape[0]
        squares = self.confidence is not None  # the squares too, for the intervals
        parts = [values.to(torch.float64).square()] if squares else []
        if tail is None:
            self._sum_values(torch.cat([values, *parts], dim=1) if squares else values)
            return
        filled = (~counted).sum() if masked and fill else None
        sums = [
            part
            for power, v in enumerate([values, *parts])
            for part in tail_sums(self, limb_sums(v), tail, numerators, filled, power)
        ]
        self._add_to_sums(*sums)

    def _tail(self, depth: int) -> int | None:
        """Where the cutoffs at or past the ranked ``depth`` start (the first of them is scored
        and stands for the rest), or None when fewer than two are (each cutoff is scored)."""
        return tail_start(self, depth)

    @property
    def _sum_rows(self) -> int:
        """Rows of the sums: one per value, and one per value's squares under ``confidence``."""
        return self.num_values * (1 if self.confidence is None else 2)

    @property
    def _notes_owner(self) -> tuple[str, float] | None:
        """Who notes its labels, under which threshold; None for a metric that reads no relevance."""
        return (type(self).__name__, self.relevance_threshold) if self.reads_relevance else None

    def _zero_sums(self) -> torch.Tensor:
        """The empty sums: ``(rows, LIMBS)`` int64 fixed-point limbs."""
        return torch.zeros((self._sum_rows, LIMBS), dtype=torch.int64, device=self._device)

    # A group's update sets a list: members' values wait in it for one pass (add_pending_sums).
    _pending_sums: list | None = None

    def _sum_values(self, values: torch.Tensor) -> None:
        """Adds the exact sums of ``(batch, rows)`` values to the state's rows (or leaves them to
        the group's one pass)."""
        if self._pending_sums is not None:
            self._pending_sums.append((self, values))
        else:
            self._add_to_sums(limb_sums(values, carried=False))  # carried there

    def _add_to_sums(self, *sums: torch.Tensor) -> None:
        """Adds ``sums``, limbs of consecutive rows of the state (expanded views too), in place."""
        state, row = self._sum_per_k, 0
        for part in sums:
            state[row : row + part.shape[0]].add_(part.to(state.device))
            row += part.shape[0]
        carry_(state)

    @property
    def _keeps_values(self) -> bool:
        """Whether the per-query values are kept: for ``per_query`` or another aggregation."""
        return self._per_query or not (isinstance(self.aggregation, str) and self.aggregation == "mean")

    def per_query_values(self) -> PerQuery:
        """Each counted query's values and key, from every process (call it on all of them).

        Needs ``per_query=True``. The rows are the queries that count in the mean (so each
        column's mean is :meth:`compute`'s value), ordered by key when ids were given, else by
        (process rank, arrival).

        Example:
            >>> import torch
            >>> from ignite_ranking import MRR
            >>> metric = MRR([1, 10], per_query=True)
            >>> y_pred = torch.tensor([[0.2, 0.9, 0.4], [0.1, 0.2, 0.3]])
            >>> metric.update((y_pred, torch.tensor([[1, 0, 0], [0, 0, 1]])))
            >>> result = metric.per_query_values()
            >>> result.keys.tolist(), result.values["mrr@10"].tolist()
            ([0, 1], [0.3333333333333333, 1.0])
        """
        if not self._per_query:
            raise ValueError(
                f"{type(self).__name__} keeps per-query values only when created with per_query=True."
            )
        gathered = self._gather()
        if self._user_keys:
            refuse_repeated_keys(gathered.keys)
        return gathered

    def _gather(self) -> PerQuery:
        """The kept per-query values of every process (a collective), gathered once per state."""
        if self._gathered is None:
            keys, values = gather_per_query(
                self._query_values, self._query_keys, self._queries_arrived, self._user_keys, self.num_values,
                self._local,
            )  # fmt: skip
            self._gathered = PerQuery(keys, {name: values[:, i] for i, name in enumerate(self.value_names)})
        return self._gathered

    def compute(self) -> list[float] | float:
        self.close_held()
        if self._keeps_values:
            gathered = self._gather()
            if not (isinstance(self.aggregation, str) and self.aggregation == "mean"):
                return aggregate(self, gathered)  # of every process's counted values
        return means_of(self, self._reduced_state().tolist())

    _reduced_state = reduced_state  # the sums, count and refusal record, reduced: one tensor
    _local = False  # True: compute() reads this process's state alone, with no collective

    def interval(self) -> list[tuple[float, float]] | tuple[float, float]:
        """Student t confidence intervals of the means, ``(low, high)`` per value of :meth:`compute`.

        Needs ``confidence``; a collective under ``ignite.distributed``, like :meth:`compute`.
        The interval is ``mean -/+ t * s / sqrt(n)``, with ``t`` the ``(1 + confidence) / 2``
        quantile of Student's t with n - 1 degrees of freedom and ``s`` the sample standard
        deviation of the n counted per-query values (from their exact sums and sums of squares):
        ``scipy.stats.t.interval`` of the same values. It treats the queries as a sample of a
        larger population; with one query it is ``(nan, nan)``. Needs scipy (the ``compare``
        extra).

        Example:
            >>> import torch
            >>> from ignite_ranking import MRR
            >>> metric = MRR([1, 3], confidence=0.95)
            >>> metric.update((torch.tensor([[0.9, 0.2, 0.5], [0.1, 0.2, 0.7], [0.3, 0.6, 0.1]]),
            ...                torch.tensor([[1, 0, 0], [1, 0, 0], [1, 0, 0]])))
            >>> [round(v, 4) for v in metric.compute()]
            [0.3333, 0.6111]
            >>> [(round(low, 4), round(high, 4)) for low, high in metric.interval()]
            [(-1.1009, 1.7676), (-0.2507, 1.473)]
        """
        if self.confidence is None:
            raise ValueError(
                f"{type(self).__name__} keeps what an interval needs only when created with a confidence "
                "level, such as confidence=0.95."
            )
        self.close_held()
        return self._interval()

    @sync_all_reduce("_sum_per_k", "_num_examples")
    def _interval(self) -> list[tuple[float, float]] | tuple[float, float]:
        return t_intervals(self)

    def completed(self, engine, name: str) -> None:
        """As :meth:`ignite.metrics.Metric.completed`; with ``confidence``, also publishes each
        interval as ``"{name}@{k}_low"`` and ``"{name}@{k}_high"`` (``"{name}_low"`` without cutoffs)."""
        super().completed(engine, name)
        if self.confidence is not None:
            engine.state.metrics.update(bounds_by_name(self.intervals_by_name(name)))

    def intervals_by_name(self, name: str) -> dict[str, tuple[float, float]]:
        """:meth:`interval` keyed as a group names the values (``"{name}@{k}"``, or ``name``)."""
        intervals = self.interval()
        intervals = intervals if self.top_k is not None else [intervals]
        names = [value_name.replace(self.name, name, 1) for value_name in self.value_names]
        return dict(zip(names, intervals, strict=True))

    def settings(self) -> dict:
        """What the state means: the metric's ``name`` and the arguments that change its numbers.

        ``state_dict()`` saves it next to the sums, and ``load_state_dict()`` refuses a state
        whose settings differ from the metric's own.

        Example:
            >>> from ignite_ranking import NDCG
            >>> NDCG(top_k=[10, 5], gain_function="linear_rank").settings()  # doctest: +NORMALIZE_WHITESPACE
            {'metric': 'ndcg', 'top_k': [5, 10], 'ignore_zero_hits': True, 'relevance_threshold': 1.0,
             'ties': 'first', 'ignore_index': None, 'gain_function': 'linear_rank'}
        """
        return settings_of(self)

    def _state_dict_per_rank(self) -> OrderedDict:
        return saved_state(self)

    def _load_state_dict_per_rank(self, state_dict: Mapping) -> None:
        self._assign_state(self._checked_state(state_dict))

    def _checked_state(self, state_dict: Mapping) -> LoadedState:
        """What ``state_dict`` loads, every entry checked first (:mod:`~ignite_ranking.metrics.state`);
        changes nothing, so that a refused state leaves the metric (or a group) as it was."""
        return checked_state(self, state_dict)

    def _assign_state(self, state: LoadedState) -> None:
        """Loads a state that :meth:`_checked_state` returned (nothing here can fail)."""
        assign_state(self, state)

    def _loaded_sums(self, sums: object) -> torch.Tensor:
        """The sums of a saved state as limbs (a copy), refusing a wrong type or shape
        (:func:`~ignite_ranking.metrics.state.loaded_sums`)."""
        return loaded_sums(sums, self._sum_rows)

    def _check_sums(self, sums: torch.Tensor, count: int) -> None:
        """Refuses loaded sums (of :meth:`_loaded_sums`) that ``count`` queries cannot give."""
        check_limbs(sums, count, self.value_range, self.num_values)

    def _check_settings(self, saved: object) -> None:
        check_settings(self.settings(), saved, type(self).__name__)


RankingMetric.__signature__ = documented_signature(RankingMetric)


def ranking_of(
    metrics: Sequence[RankingMetric], relevance_threshold: float, ties: str, ignore_index: int | None
) -> Ranking:
    """The one ranking of a batch that serves every metric of ``metrics`` (a group's members, or
    one metric): as deep as the deepest, with everything any of them reads."""
    return Ranking(
        max(m.depth for m in metrics),
        relevance_threshold=relevance_threshold,
        ties=ties,
        ideal=any(m.needs_ideal for m in metrics),
        cover_relevant=any(m.covers_relevant for m in metrics),
        count=any(m.needs_counts for m in metrics),
        ignore_index=ignore_index,
        keep_indices=any(m.needs_items or m.needs_scores for m in metrics),
        labels=any(m.reads_labels for m in metrics),
        runs=any(m.needs_levels for m in metrics),
        relevance=any(m.reads_relevance for m in metrics),
        scores=any(m.needs_scores for m in metrics),
    )
