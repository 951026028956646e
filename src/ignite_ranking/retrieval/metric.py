"""An Ignite metric that evaluates an embedding model during training, as evaluate_embeddings does.

:class:`EmbeddingRetrieval` encodes the corpus once per evaluation (at ``reset``, each process
its own shard, from a corpus DataLoader and the user's encode function), keeps the query
embeddings of the batches the evaluator sees, and at ``compute`` ranks the whole corpus for them
with :func:`~ignite_ranking.retrieval.evaluate_embeddings` (sharded over the processes under
``ignite.distributed``): the same numbers as the functional form on the same embeddings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import ignite.distributed as idist
import torch
import torch.distributed as dist
from ignite.metrics import Metric

from .embeddings import evaluate_embeddings

__all__ = ["EmbeddingRetrieval"]


class EmbeddingRetrieval(Metric):
    """Retrieval measures of the query embeddings an evaluator produces, over a whole corpus.

    Args:
        corpus: an iterable (a DataLoader) of ``(inputs, ids)`` batches: this process's shard
            of the corpus (under ``ignite.distributed``, the shards in rank order are the
            corpus; give each process a different part), read once per evaluation.
        encode: ``encode(inputs) -> (batch, d)`` corpus embeddings (run under ``torch.no_grad``).
        qrels: as :func:`~ignite_ranking.retrieval.evaluate_embeddings` takes them.
        output_transform: the engine's output to ``(query_embeddings, query_ids)``.
        **options: ``measures``, ``similarity``, ``convention``, ``ignore_identical_ids``,
            ``batch_size``, ``chunk_size``... passed to ``evaluate_embeddings``.

    ``compute()`` returns ``{key: mean}``; attached, each key becomes an ``engine.state.metrics``
    entry (Ignite's rule for a dict result).

    Example:
        >>> import torch
        >>> from ignite_ranking.retrieval import EmbeddingRetrieval
        >>> corpus = [(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), ["x", "y"])]
        >>> metric = EmbeddingRetrieval(corpus, lambda inputs: inputs, {"a": {"y": 1}}, measures=["mrr@10"])
        >>> metric.reset()
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
        self._corpus_loader, self._encode, self._qrels, self._options = corpus, encode, qrels, options
        super().__init__(output_transform=output_transform, device=device)

    def reset(self) -> None:
        embeddings, ids = [], []
        with torch.no_grad():
            for inputs, batch_ids in self._corpus_loader:
                embeddings.append(self._encode(inputs).detach())
                ids.extend(batch_ids.tolist() if isinstance(batch_ids, torch.Tensor) else batch_ids)
        self._corpus = torch.cat(embeddings) if embeddings else torch.zeros(0, 0)
        self._corpus_ids = ids
        self._queries: list[torch.Tensor] = []
        self._query_ids: list = []

    def update(self, output) -> None:
        embeddings, ids = output
        self._queries.append(embeddings.detach())
        self._query_ids.extend(ids.tolist() if isinstance(ids, torch.Tensor) else ids)

    def compute(self) -> dict[str, float]:
        width = self._corpus.shape[1]
        queries = torch.cat(self._queries) if self._queries else self._corpus.new_zeros(0, width)
        query_ids, group = self._query_ids, None
        if idist.get_world_size() > 1:  # every process ranks every query, over its corpus shard
            gathered: list = [None] * idist.get_world_size()
            dist.all_gather_object(gathered, (queries.cpu(), query_ids))
            queries = torch.cat([part[0] for part in gathered]).to(self._corpus.device)
            query_ids = [i for part in gathered for i in part[1]]
            group = dist.group.WORLD
        return evaluate_embeddings(
            queries.to(self._corpus.dtype), self._corpus, self._qrels, query_ids=query_ids,
            corpus_ids=self._corpus_ids, group=group, **self._options,
        )  # fmt: skip
