"""What differs between the tools that evaluate embedding models, one preset per tool.

Each :class:`Convention` fixes everything that changes the numbers: the order of equal scores,
which judgements are relevant and with what gain, which queries count, MAP@k's denominator,
the default measures and the names of the result's keys. :data:`CONVENTIONS` holds the three
presets :func:`~ignite_ranking.retrieval.evaluate_embeddings` takes:

- ``"trec"``: this library's defaults: equal scores by corpus row (the lower first), graded
  gains ``2**grade - 1``, queries without a relevant document left out, MAP@k over R.
- ``"beir"``: BEIR's ``EvaluateRetrieval.evaluate`` and MTEB's retrieval tasks (pytrec_eval
  underneath): equal scores by document id in descending string order (trec_eval's), linear
  gains, queries judged only non-relevant counted as 0, k = 1, 3, 5, 10, 20, 100, 1000 (MTEB's;
  BEIR's lack 20), keys as MTEB names them: ``ndcg_at_10``, ``map_at_10``, ``recall_at_10``,
  ``precision_at_10``, ``mrr_at_10``, ``hit_rate_at_10`` (the hit rate) and ``accuracy``
  (Recall@1, under that name too).
- ``"sentence-transformers"``: its ``InformationRetrievalEvaluator``: equal scores by document
  id ascending, every listed document relevant (grade 1, whatever its grade), queries without
  one left out, MAP@k over ``min(k, R)``, keys such as ``cosine_ndcg@10``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONVENTIONS", "FAMILIES", "Convention", "parse_measures"]

FAMILIES = ("accuracy", "precision", "recall", "mrr", "ndcg", "map")
"""The measure families, named ``family@k`` (accuracy is the hit rate, a relevant one in the top k)."""


@dataclass(frozen=True)
class Convention:
    """The settings of one preset.

    Attributes:
        name: the preset's name.
        tie_order: ``"row"`` (equal scores by corpus row, the lower first), ``"id_ascending"``
            or ``"id_descending"`` (by document id; ids compared as ``str``, or as ints when
            every id is an int and ``str_ids`` is False).
        str_ids: compare ids as ``str`` (trec_eval's byte order) for the tie order.
        binary: every judged document is relevant with grade 1.
        count_zero_hits: queries with judgements but no relevant document count as 0.
        gain_function: NDCG's gain, ``"exp_rank"`` or ``"linear_rank"``.
        map_denominator: ``MAP(denominator=...)``.
        measures: the default measures, ``family@k``.
        key: the result's key of a measure: ``key.format(family=..., k=..., similarity=...)``
            after the family is renamed by ``names``.
        names: family -> name in the keys.
        aliases: ``(key, measure)``: with the default measures, ``measure``'s value also under
            ``key`` (MTEB's ``accuracy``, its Recall@1).
    """

    name: str
    tie_order: str
    str_ids: bool
    binary: bool
    count_zero_hits: bool
    gain_function: str
    map_denominator: str
    measures: tuple[str, ...]
    key: str
    names: tuple[tuple[str, str], ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()

    def key_of(self, family: str, k: int, similarity: str) -> str:
        return self.key.format(family=dict(self.names).get(family, family), k=k, similarity=similarity)

    def with_aliases(self, values: dict[str, float], similarity: str) -> dict[str, float]:
        """``values`` (keyed by :meth:`key_of`) with each alias's key added."""
        out = dict(values)
        for key, measure in self.aliases:
            ((family, k),) = parse_measures([measure])
            out[key] = values[self.key_of(family, k, similarity)]
        return out


def _at(families: tuple[str, ...], ks: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(f"{family}@{k}" for family in families for k in ks)


CONVENTIONS = {
    "trec": Convention(
        name="trec",
        tie_order="row",
        str_ids=False,
        binary=False,
        count_zero_hits=False,
        gain_function="exp_rank",
        map_denominator="relevant",
        measures=("mrr@10", "ndcg@10", "map@100", "recall@100", "precision@10"),
        key="{family}@{k}",
    ),
    "beir": Convention(
        name="beir",
        tie_order="id_descending",
        str_ids=True,
        binary=False,
        count_zero_hits=True,
        gain_function="linear_rank",
        map_denominator="relevant",
        measures=_at(("ndcg", "map", "recall", "precision", "mrr", "accuracy"), (1, 3, 5, 10, 20, 100, 1000)),
        key="{family}_at_{k}",
        names=(("accuracy", "hit_rate"),),
        aliases=(("accuracy", "recall@1"),),
    ),
    "sentence-transformers": Convention(
        name="sentence-transformers",
        tie_order="id_ascending",
        str_ids=False,
        binary=True,
        count_zero_hits=False,
        gain_function="linear_rank",
        map_denominator="min_k_relevant",
        measures=(
            *_at(("accuracy", "precision", "recall"), (1, 3, 5, 10)),
            "ndcg@10",
            "mrr@10",
            "map@100",
        ),
        key="{similarity}_{family}@{k}",
    ),
}
"""The presets by name."""


def parse_measures(measures: object) -> list[tuple[str, int]]:
    """``[(family, k), ...]`` of names such as ``"ndcg@10"``; a ValueError naming a bad one."""
    if isinstance(measures, str) or not isinstance(measures, (list, tuple)) or not measures:
        raise ValueError(f"measures must be a non-empty list of names such as 'ndcg@10', got {measures!r}")
    parsed = []
    for measure in measures:
        family, _, k = str(measure).partition("@")
        if family not in FAMILIES or not (k.isascii() and k.isdigit()) or int(k) < 1:
            raise ValueError(
                f"unknown measure {measure!r}: use family@k with k >= 1 and a family among "
                f"{', '.join(FAMILIES)}"
            )
        parsed.append((family, int(k)))
    return parsed
