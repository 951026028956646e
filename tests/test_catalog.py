"""catalog.top_k equals ranking the dense score matrix with the excluded columns dropped.

The reference ranks each full row with a stable descending argsort (``"first"``; ``"last"`` on
the reversed columns), after removing the row's excluded items, and pads with ``(-inf, -1)``.
Scores are small integers, so every dtype holds them exactly, the chunked products equal the
dense one bit for bit, and ties fall everywhere: across chunk boundaries and at the k-th place.
Both selection methods run on the CPU: ``"filter"`` (the CPU's) and ``"topk"`` (the one CUDA
uses, which reads nothing back to the host); the CUDA device itself was not available here.
"""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import pytest
import torch

from ignite_ranking import catalog
from ignite_ranking.catalog import chunked

METHODS = ["filter", "topk"]
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.fixture(params=METHODS)
def method(request, monkeypatch):
    monkeypatch.setattr(chunked, "_method_for", lambda device: request.param)
    return request.param


def reference(scores: torch.Tensor, k: int, excluded: torch.Tensor, ties: str):
    """Dense top k: rank every row, drop excluded columns, pad with (-inf, -1)."""
    batch, num_items = scores.shape
    out_scores = torch.full((batch, k), -math.inf, dtype=scores.dtype)
    out_ids = torch.full((batch, k), -1, dtype=torch.int64)
    for row in range(batch):
        ids = torch.arange(num_items)
        if ties == "last":
            ids = ids.flip(0)
        ids = ids[scores[row, ids].argsort(descending=True, stable=True)]
        ids = ids[~excluded[row, ids]][:k]
        out_ids[row, : ids.numel()] = ids
        out_scores[row, : ids.numel()] = scores[row, ids]
    return out_scores, out_ids


def excluded_ids(rng: random.Random, batch: int, num_items: int, m: int):
    """A ``(batch, m)`` id tensor with repeats and -1 anywhere, and its dense mask."""
    drawn = [[rng.randrange(-1, num_items) for _ in range(m)] for _ in range(batch)]
    ids = torch.tensor(drawn, dtype=torch.int64).reshape(batch, m)
    mask = torch.zeros(batch, num_items, dtype=torch.bool)
    rows, cols = (ids >= 0).nonzero(as_tuple=True)
    mask[rows, ids[rows, cols]] = True
    return ids, mask


def as_sparse(mask: torch.Tensor, rng: random.Random) -> torch.Tensor:
    """The mask as an uncoalesced sparse tensor: entries repeated, values arbitrary (even 0)."""
    rows, cols = mask.nonzero(as_tuple=True)
    repeat = torch.tensor([rng.random() < 0.3 for _ in range(rows.numel())], dtype=torch.bool)
    rows, cols = torch.cat([rows, rows[repeat]]), torch.cat([cols, cols[repeat]])
    values = torch.randint(0, 3, (rows.numel(),)).float()
    return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, mask.shape)


@pytest.mark.parametrize("seed", range(40))
def test_equals_dense_ranking(seed: int, method: str) -> None:
    rng = random.Random(seed)
    batch, num_items, dim = rng.randint(1, 9), rng.randint(1, 60), rng.randint(1, 4)
    dtype = DTYPES[seed % len(DTYPES)]
    ties = "first" if seed % 2 else "last"
    k = rng.choice([1, 2, 5, num_items, num_items + 3, rng.randint(1, num_items)])
    chunk_size = rng.choice([1, 2, 3, 7, 16, num_items, None])
    # Few distinct small integers: many ties, all exact in every dtype.
    queries = torch.randint(-2, 3, (batch, dim)).to(dtype)
    items = torch.randint(-2, 3, (num_items, dim)).to(dtype)
    ids, mask = excluded_ids(rng, batch, num_items, rng.choice([0, 1, 3, num_items]))
    # Some rows lose most of their catalog: fewer than k candidates remain.
    heavy = torch.rand(batch, num_items, generator=torch.Generator().manual_seed(seed)) < 0.8
    mask |= heavy & (torch.arange(batch) % 3 == 0)[:, None]
    exclude = as_sparse(mask, rng) if seed % 3 == 0 else torch.cat([ids, _ids_of(mask, batch)], 1)
    expected = reference((queries @ items.T).to(dtype), k, mask, ties)
    got = catalog.top_k(queries, items, k, exclude=exclude, chunk_size=chunk_size, ties=ties)
    assert got[1].dtype == torch.int64 and got[0].dtype == dtype
    assert torch.equal(got[1], expected[1])
    assert torch.equal(got[0], expected[0])


@pytest.mark.parametrize("seed", range(6))
def test_equals_dense_ranking_on_wider_chunks(seed: int, method: str) -> None:
    # Chunks of 32 columns and more take the filter's group-maximum path, with a ragged tail.
    rng = random.Random(seed)
    batch, num_items = rng.randint(1, 40), rng.randint(100, 400)
    ties = "first" if seed % 2 else "last"
    k, chunk_size = rng.choice([1, 10, 50, 120]), rng.choice([32, 33, 64, 100, 257, None])
    queries = torch.randint(-3, 4, (batch, 3)).float()
    items = torch.randint(-3, 4, (num_items, 3)).float()
    ids, mask = excluded_ids(rng, batch, num_items, rng.choice([0, 5, 50]))
    expected = reference(queries @ items.T, k, mask, ties)
    got = catalog.top_k(queries, items, k, exclude=ids, chunk_size=chunk_size, ties=ties)
    assert torch.equal(got[1], expected[1]) and torch.equal(got[0], expected[0])


@pytest.mark.parametrize("seed", range(8))
def test_equals_dense_ranking_with_a_bounded_first_chunk_and_strided_blocks(seed: int, method: str) -> None:
    # A chunk 16 k wide or more bounds its open rows by the k-th of its group maxima, not its
    # own top k; a scorer's non-contiguous blocks are read back by flat offset all the same.
    rng = random.Random(seed)
    batch, num_items = rng.randint(1, 30), rng.randint(300, 900)
    ties = "first" if seed % 2 else "last"
    k = rng.choice([1, 3, 10])
    chunk_size = rng.choice([16 * k, 16 * k + 5, 320, None])
    queries = torch.randint(-3, 4, (batch, 3)).float()
    items = torch.randint(-3, 4, (num_items, 3)).float()
    scores = queries @ items.T
    ids, mask = excluded_ids(rng, batch, num_items, rng.choice([0, 5, 50]))
    expected = reference(scores, k, mask, ties)
    got = catalog.top_k(queries, items, k, exclude=ids, chunk_size=chunk_size, ties=ties)
    assert torch.equal(got[1], expected[1]) and torch.equal(got[0], expected[0])
    strided = lambda start, stop: scores[:, start:stop].T.contiguous().T  # noqa: E731
    got = catalog.top_k(
        queries, strided, k, exclude=ids, chunk_size=chunk_size, ties=ties, num_items=num_items
    )
    assert torch.equal(got[1], expected[1]) and torch.equal(got[0], expected[0])


def _ids_of(mask: torch.Tensor, batch: int) -> torch.Tensor:
    """The mask's items as a (batch, m) id tensor padded with -1 at the front of each row."""
    width = int(mask.sum(1).max()) if mask.numel() else 0
    out = torch.full((batch, width), -1, dtype=torch.int64)
    for row in range(batch):
        cols = mask[row].nonzero().squeeze(1)
        if cols.numel():
            out[row, width - cols.numel() :] = cols
    return out


@pytest.mark.parametrize("ties", ["first", "last"])
def test_callable_scorer_with_infinities_and_ties_at_the_boundaries(ties: str, method: str) -> None:
    gen = torch.Generator().manual_seed(3)
    batch, num_items = 6, 50
    table = torch.randint(0, 4, (batch, num_items), generator=gen).double()
    table[torch.rand(batch, num_items, generator=gen) < 0.2] = -math.inf
    table[torch.rand(batch, num_items, generator=gen) < 0.05] = math.inf
    table[5] = -math.inf  # every candidate of this row scores -inf: they keep their ids
    calls = []

    def score(start: int, stop: int) -> torch.Tensor:
        calls.append((start, stop))
        return table[:, start:stop]

    mask = torch.zeros(batch, num_items, dtype=torch.bool)
    mask[5, ::2] = True
    exclude = _ids_of(mask, batch)
    for chunk_size in (1, 4, 7, 50, 64):
        calls.clear()
        got = catalog.top_k(
            torch.zeros(batch, 1), score, 30, exclude=exclude, chunk_size=chunk_size, ties=ties, num_items=50
        )
        expected = reference(table, 30, mask, ties)
        assert torch.equal(got[1], expected[1]) and torch.equal(got[0], expected[0])
        assert sorted(calls) == [(s, min(s + chunk_size, 50)) for s in range(0, 50, chunk_size)]
    assert (got[1][5, :25] >= 0).all() and (got[1][5, 25:] == -1).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ties", ["first", "last"])
def test_signed_zeros_tie_and_keep_their_sign(dtype: torch.dtype, ties: str, method: str) -> None:
    # Scores packed with their ids into one key (order_keys) tie -0.0 with 0.0, order
    # subnormals, and come back bit for bit from the candidates, not from the keys.
    gen = torch.Generator().manual_seed(5)
    tiny = torch.finfo(dtype).tiny
    values = torch.tensor([0.0, -0.0, tiny / 4, -tiny / 4, tiny, 1.0, -1.0, math.inf, -math.inf], dtype=dtype)
    table = values[torch.randint(0, values.numel(), (5, 300), generator=gen)]
    got = catalog.top_k(
        torch.zeros(5, 1), lambda a, b: table[:, a:b], 120, chunk_size=70, ties=ties, num_items=300
    )
    expected = reference(table, 120, torch.zeros(5, 300, dtype=torch.bool), ties)
    assert torch.equal(got[1], expected[1])
    assert torch.equal(got[0].signbit(), expected[0].signbit()) and torch.equal(got[0], expected[0])


@pytest.mark.parametrize("ties", ["first", "last"])
def test_all_equal_scores_follow_the_tie_rule(ties: str, method: str) -> None:
    queries, items = torch.ones(3, 2), torch.ones(20, 2)
    scores, ids = catalog.top_k(queries, items, 4, chunk_size=3, ties=ties)
    want = [0, 1, 2, 3] if ties == "first" else [19, 18, 17, 16]
    assert ids.tolist() == [want] * 3
    assert (scores == 2).all()


def test_k_beyond_the_catalog_and_empty_inputs(method: str) -> None:
    scores, ids = catalog.top_k(torch.ones(2, 1), torch.tensor([[1.0], [2.0]]), 4)
    assert ids.tolist() == [[1, 0, -1, -1]] * 2
    assert scores[:, 2:].eq(-math.inf).all()
    for exclude in (
        torch.zeros(2, 0, dtype=torch.int64),
        torch.full((2, 3), -1),
        torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 2)),
    ):
        assert catalog.top_k(torch.ones(2, 1), torch.tensor([[1.0], [2.0]]), 4, exclude=exclude)[1].equal(ids)
    scores, ids = catalog.top_k(torch.ones(0, 3), torch.ones(5, 3), 2)
    assert scores.shape == ids.shape == (0, 2)
    scores, ids = catalog.top_k(torch.ones(2, 3), torch.ones(0, 3), 2)
    assert ids.tolist() == [[-1, -1]] * 2 and scores.eq(-math.inf).all()


def test_agrees_with_faiss_where_scores_are_distinct() -> None:
    faiss = pytest.importorskip("faiss")
    gen = torch.Generator().manual_seed(0)
    queries, items = torch.randn(32, 16, generator=gen), torch.randn(3000, 16, generator=gen)
    ids = catalog.top_k(queries, items, 10, chunk_size=500)[1]
    index = faiss.IndexFlatIP(16)
    index.add(items.numpy())
    _, faiss_ids = index.search(queries.numpy(), 10)
    assert (torch.from_numpy(faiss_ids) == ids).float().mean() > 0.99
    dense = (queries @ items.T).topk(10)
    assert torch.equal(dense.indices, ids)


def test_embeddings_that_require_grad_give_the_same_ranking(method: str) -> None:
    # The product is written into a reused buffer, which autograd refuses: such inputs take
    # the allocating product, with the same result (uneven last chunk included).
    gen = torch.Generator().manual_seed(1)
    queries, items = (
        torch.randint(-3, 4, (6, 4), generator=gen).float(),
        torch.randint(-3, 4, (50, 4), generator=gen).float(),
    )
    plain = catalog.top_k(queries, items, 7, chunk_size=9)
    tracked = catalog.top_k(queries.requires_grad_(), items.requires_grad_(), 7, chunk_size=9)
    assert torch.equal(plain[1], tracked[1]) and torch.equal(plain[0], tracked[0].detach())
    assert torch.equal(
        plain[1],
        reference(queries.detach() @ items.detach().T, 7, torch.zeros(6, 50, dtype=torch.bool), "first")[1],
    )


def test_progress_bar(capsys) -> None:
    ids = catalog.top_k(torch.ones(1, 1), torch.arange(10.0)[:, None], 2, chunk_size=3, progress=True)[1]
    assert ids.tolist() == [[9, 8]]
    assert "chunk" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"k": 0}, ValueError, "k must be an int >= 1, got 0"),
        ({"k": 2.0}, ValueError, "k must be an int >= 1"),
        ({"ties": "optimistic"}, ValueError, "needs relevance labels.*metrics"),
        ({"ties": "average"}, ValueError, "needs relevance labels"),
        ({"ties": "random"}, ValueError, "ties must be one of"),
        ({"chunk_size": 0}, ValueError, "chunk_size must be a positive int"),
        ({"items": torch.ones(5, 4)}, ValueError, r"items must be a \(num_items, 3\)"),
        ({"items": torch.ones(5, 3, dtype=torch.float64)}, ValueError, "queries' dtype"),
        ({"queries": torch.ones(2, 3, 1)}, ValueError, r"queries must be a \(batch, d\) floating"),
        ({"items": [[1.0]]}, TypeError, "items must be a .* tensor or a callable"),
        ({"exclude": torch.tensor([[0, 5]])}, ValueError, r"exclude must be a \(2, m\)"),
        ({"exclude": torch.tensor([[0], [5]])}, ValueError, r"\[0, 5\) or be -1.*got 5 at exclude\[1, 0\]"),
        ({"exclude": torch.tensor([[0], [-2]])}, ValueError, "got -2 at exclude"),
        ({"exclude": torch.tensor([[0.0], [1.0]])}, TypeError, "exclude ids must be integers"),
        ({"exclude": torch.ones(2, 6).to_sparse()}, ValueError, r"shape \(batch, num_items\) = \(2, 5\)"),
        ({"exclude": [[1], [2]]}, TypeError, "exclude must be a sparse"),
        ({"num_items": 4}, ValueError, "num_items=4 disagrees"),
        ({"items": torch.ones(5, 3).to_sparse()}, TypeError, "items must be a dense .strided. tensor"),
        ({"queries": torch.ones(2, 3).to_sparse()}, TypeError, "queries must be a dense .strided. tensor"),
        (
            {"queries": torch.ones(2, 3, device="meta"), "items": torch.ones(5, 3, device="meta")},
            ValueError,
            "queries is on the meta device",
        ),
    ],
)
def test_bad_input_is_refused(kwargs, error, message) -> None:
    args = {"queries": torch.ones(2, 3), "items": torch.ones(5, 3), "k": 2} | kwargs
    with pytest.raises(error, match=message):
        catalog.top_k(args.pop("queries"), args.pop("items"), args.pop("k"), **args)


def test_bad_callable_scorers_are_refused(method: str) -> None:
    queries = torch.ones(2, 1)
    with pytest.raises(ValueError, match="num_items must be an int >= 0 when items is a callable"):
        catalog.top_k(queries, lambda a, b: torch.ones(2, b - a), 1)
    with pytest.raises(ValueError, match=r"items\(0, 3\) must return shape \(2, 3\), got \(2, 4\)"):
        catalog.top_k(queries, lambda a, b: torch.ones(2, 4), 1, num_items=5, chunk_size=3)
    with pytest.raises(TypeError, match="must return a floating tensor"):
        catalog.top_k(queries, lambda a, b: torch.ones(2, b - a, dtype=torch.int64), 1, num_items=5)
    nan = torch.ones(2, 5)
    nan[1, 3] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        catalog.top_k(queries, lambda a, b: nan[:, a:b], 1, num_items=5, chunk_size=2)
    with pytest.raises(ValueError, match="NaN"):  # also at an excluded item, on every path
        catalog.top_k(queries, lambda a, b: nan[:, a:b], 1, num_items=5, exclude=torch.tensor([[-1], [3]]))


def test_full_catalog_example_learns() -> None:
    path = Path(__file__).resolve().parents[1] / "examples" / "full_catalog.py"
    spec = importlib.util.spec_from_file_location("example_full_catalog", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--items", "20000", "--users", "300", "--epochs", "3"])
    assert set(results["trained"]) == {f"{m}@{k}" for m in ("mrr", "ndcg", "recall") for k in (10, 100)}
    for name, value in results["trained"].items():
        assert 0.0 <= results["untrained"][name] < value <= 1.0, name
    assert results["trained"]["recall@100"] > 0.2
