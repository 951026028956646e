"""An Ignite metric that evaluates an embedding model during training, as evaluate_embeddings does.

:class:`EmbeddingRetrieval` keeps the query embeddings of the batches the evaluator sees; at
``compute`` it encodes the corpus once (each process its own shard, from a corpus DataLoader and
the user's encode function) and ranks the whole corpus for the queries
with :func:`~ignite_ranking.retrieval.evaluate_embeddings` (sharded over the processes under
``ignite.distributed``): the same numbers as the functional form on the same embeddings.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping

import ignite.distributed as idist
import torch
import torch.distributed as dist
from ignite.exceptions import NotComputableError

from ..metrics.attached import EngineMetric
from ..metrics.state import check_settings
from .embeddings import evaluate_embeddings

__all__ = ["EmbeddingRetrieval"]


class EmbeddingRetrieval(EngineMetric):
    """Retrieval measures of the query embeddings an evaluator produces, over a whole corpus.

    Args:
        corpus: a re-iterable (a DataLoader, a list; not a generator) of ``(inputs, ids)``
            batches: this process's shard of the corpus (under ``ignite.distributed``, the
            shards in rank order are the corpus; give each process a different part), read
            once per evaluation, at ``compute``.
        encode: ``encode(inputs) -> (batch, d)`` corpus embeddings (run under ``torch.no_grad``).
        qrels: as :func:`~ignite_ranking.retrieval.evaluate_embeddings` takes them.
        output_transform: the engine's output to ``(query_embeddings, query_ids)``, one id
            (str or int) per row.
        **options: ``measures``, ``similarity``, ``convention``, ``ignore_identical_ids``,
            ``batch_size``, ``chunk_size``... passed to ``evaluate_embeddings`` (checked here;
            the ids and the group come from the batches and ``ignite.distributed``).

    ``compute()`` returns ``{key: mean}``; attached, each key becomes an ``engine.state.metrics``
    entry (Ignite's rule for a dict result). With ``per_query=True`` it returns
    ``evaluate_embeddings``' pair ``(means, per-query values)``, which Ignite stores whole under
    the metric's name. ``compute()`` before any query batch raises ``NotComputableError``; a
    refused batch keeps nothing; ``state_dict()`` holds the query embeddings and ids seen so far
    (on the CPU) and the options, and ``load_state_dict()`` refuses a state saved under others.
    As the ranking metrics, a state saved during an evaluator's epoch resumes it exactly
    (``Checkpoint.load_objects`` of the metric and the evaluator, data read through an
    :class:`~ignite_ranking.distributed.EvaluationSampler`; see :doc:`/distributed`).

    Example:
        >>> import torch
        >>> from ignite_ranking.retrieval import EmbeddingRetrieval
        >>> corpus = [(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), ["x", "y"])]
        >>> metric = EmbeddingRetrieval(corpus, lambda inputs: inputs, {"a": {"y": 1}}, measures=["mrr@10"])
        >>> metric.update((torch.tensor([[0.2, 0.9]]), ["a"]))
        >>> metric.compute()
        {'mrr@10': 1.0}
    """

    def __init__(
        self,
        corpus: Iterable,
        encode: Callable[[object], torch.Tensor],
        qrels: object,
        output_transform: Callable = lambda x: x,
        device: str | torch.device = "cpu",
        **options,
    ):
        if isinstance(corpus, Iterator):
            raise TypeError(
                f"corpus must be read again at every evaluation, and a {type(corpus).__name__} is read "
                "once: give a DataLoader or a list of (inputs, ids) batches."
            )
        set_here = sorted(set(options) & _SET_HERE)
        unknown = sorted(set(options) - _OPTIONS - _SET_HERE)
        if set_here or unknown:
            raise TypeError(
                f"EmbeddingRetrieval got {set_here or unknown}: "
                + (
                    "the ids come with the batches (query ids from output_transform, corpus ids from the "
                    "corpus loader) and the group from ignite.distributed"
                    if set_here
                    else f"evaluate_embeddings takes {sorted(_OPTIONS)}"
                )
            )
        self._corpus_loader, self._encode, self._qrels, self._options = corpus, encode, qrels, options
        super().__init__(output_transform=output_transform, device=device)

    # What EngineMetric reads of a ranking metric: one result (a dict) under the metric's name.
    top_k = None
    confidence = None

    def reset(self) -> None:
        self._queries: list[torch.Tensor] = []
        self._query_ids: list = []
        self._forget_loaded_state()

    def update(self, output) -> None:
        """Keeps a batch of query embeddings and their ids; a refused batch keeps nothing."""
        embeddings, ids = output
        _check_queries(embeddings, self._queries[0] if self._queries else None)
        ids = _batch_ids(ids, embeddings, "query")
        self._queries.append(embeddings.detach())
        self._query_ids.extend(ids)

    def settings(self) -> dict:
        """The options that change the numbers (a callable similarity by its name), saved with
        the state: ``load_state_dict()`` refuses a state saved under other options."""
        named = lambda value: getattr(value, "__name__", repr(value)) if callable(value) else value  # noqa: E731
        return {
            "metric": "embedding_retrieval",
            **{key: named(self._options[key]) for key in sorted(self._options)},
        }

    def _state_dict_per_rank(self) -> OrderedDict:
        queries = torch.cat(self._queries) if self._queries else torch.zeros(0, 0)
        return OrderedDict(queries=queries.cpu(), query_ids=list(self._query_ids), settings=self.settings())

    def _load_state_dict_per_rank(self, state_dict: Mapping) -> None:
        """Loads :meth:`state_dict`'s queries and ids, every entry checked before any is kept."""
        entries = sorted(state_dict) if isinstance(state_dict, Mapping) else None
        if entries != ["queries", "query_ids", "settings"]:
            raise ValueError(
                "state_dict must be an EmbeddingRetrieval.state_dict(): its entries are queries, "
                f"query_ids and settings, got {entries if entries is not None else state_dict!r}."
            )
        check_settings(self.settings(), state_dict["settings"], type(self).__name__)
        queries = state_dict["queries"]
        _check_queries(queries, None)
        ids = _batch_ids(state_dict["query_ids"], queries, "saved query")
        self._queries = [queries.to(self._device)] if ids else []
        self._query_ids = ids

    def _encoded_corpus(self, queries: torch.Tensor) -> tuple[torch.Tensor, list]:
        """This process's corpus shard, encoded now, and its ids."""
        embeddings, ids = [], []
        with torch.no_grad():
            for inputs, batch_ids in self._corpus_loader:
                embeddings.append(self._encode(inputs).detach())
                ids.extend(_batch_ids(batch_ids, embeddings[-1], "corpus"))
        if embeddings:
            return torch.cat(embeddings), ids
        if idist.get_world_size() == 1:
            raise ValueError("the corpus loader yielded no batch: there is no document to rank.")
        return queries.new_zeros(0, queries.shape[-1]), ids  # an empty shard

    def compute(self) -> dict[str, float]:
        queries = torch.cat(self._queries) if self._queries else torch.zeros(0, 0)
        query_ids, group = self._query_ids, None
        if idist.get_world_size() > 1:  # every process ranks every query, over its corpus shard
            gathered: list = [None] * idist.get_world_size()
            dist.all_gather_object(gathered, (queries.cpu(), query_ids))
            queries = torch.cat([part[0] for part in gathered if len(part[1])] or [queries])
            query_ids = [i for part in gathered for i in part[1]]
            group = dist.group.WORLD
        if not query_ids:
            raise NotComputableError(
                "EmbeddingRetrieval must have at least one query batch before compute()."
            )
        corpus, corpus_ids = self._encoded_corpus(queries)
        return evaluate_embeddings(
            queries.to(corpus.device, corpus.dtype), corpus, self._qrels, query_ids=query_ids,
            corpus_ids=corpus_ids, group=group, **self._options,
        )  # fmt: skip


# What the metric passes to evaluate_embeddings itself, and what the user may.
_SET_HERE = frozenset({"query_embeddings", "corpus_embeddings", "query_ids", "corpus_ids", "group"})
_OPTIONS = frozenset(inspect.signature(evaluate_embeddings).parameters) - _SET_HERE - {"qrels"}


def _check_queries(embeddings: object, first: torch.Tensor | None) -> None:
    """Refuses query embeddings that are not a 2-D floating tensor like the first batch's."""
    if (
        not isinstance(embeddings, torch.Tensor)
        or embeddings.dim() != 2
        or not embeddings.is_floating_point()
    ):
        got = (
            f"a {embeddings.dtype} tensor of shape {tuple(embeddings.shape)}"
            if isinstance(embeddings, torch.Tensor)
            else type(embeddings).__name__
        )
        raise ValueError(f"query embeddings must be a (batch, d) floating tensor, got {got}.")
    if first is not None and (embeddings.shape[1], embeddings.dtype) != (first.shape[1], first.dtype):
        raise ValueError(
            f"query embeddings of d={embeddings.shape[1]} {embeddings.dtype} after batches of "
            f"d={first.shape[1]} {first.dtype}: every batch must have one d and dtype."
        )


def _batch_ids(ids: object, embeddings: torch.Tensor, name: str) -> list:
    """One batch's ids as a list, one per embedding row, or a clear error."""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TypeError(f"a {name} batch's ids must be a list or tensor of ids, one per row, got {ids!r}.")
    ids = list(ids)
    if len(ids) != embeddings.shape[0]:
        raise ValueError(
            f"a {name} batch has {embeddings.shape[0]} embeddings and {len(ids)} ids: give one id per row "
            "(else the ids after it would be paired with the wrong rows)."
        )
    return ids
