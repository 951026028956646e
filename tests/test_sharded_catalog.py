"""catalog.sharded_top_k on real processes (gloo) equals catalog.top_k on the whole catalog, bitwise.

Process start is slow, so one spawn of 4 processes runs everything: every scenario on the default
group (4 processes) and on subgroups of 1, 2 and 3 of them (`group=`, whose ranks are not the
global ones). Each scenario is rebuilt from its seed on every process and in this one, where
the reference is ``top_k`` over the concatenated item table with the same ``chunk_size``.

The shards have random sizes (empty ones too) in a random order over the ranks; scores are small
integers (exact in every dtype, ties everywhere: across shard boundaries and at the k-th place)
or ``randn`` products (whose last bits depend on the blocks they are computed in). Each process
patches its own selection method (``"filter"``, the CPU's, or ``"topk"``, CUDA's) at random.
Bad layouts and bad arguments on one process must make every process raise, with no hang: the
processes go on to the next scenario on the same group, and the join has a deadline.
"""

from __future__ import annotations

import math
import random
import socket
import time
import traceback
import warnings
from datetime import timedelta

import pytest
import torch

from ignite_ranking import catalog
from ignite_ranking.catalog import chunked

WORLD = 4
# (name, global ranks of the group; None: the default group)
GROUPS = [("default", None), ("one", [2]), ("two", [3, 1]), ("three", [0, 2, 3])]
RANDOM_SCENARIOS = 14
DEADLINE_S = 300


# ------------------------------------------------------------------------------------ scenarios


def scenarios_of(world: int) -> list[dict]:
    return fixed_scenarios(world) + [random_scenario(world, seed) for seed in range(RANDOM_SCENARIOS)]


def random_scenario(world: int, seed: int) -> dict:
    """A good call: data, shards over the ranks, settings, each rank's exclude and method."""
    rng = random.Random(f"{world}/{seed}")
    floats = seed % 7 == 6
    num_items = rng.randint(200, 400) if floats else rng.choice([0, 1, 3, *range(5, 61)])
    batch = rng.choice([0, 1, 2, 5, 9]) if seed % 5 else rng.randint(1, 9)
    cuts = sorted(rng.randint(0, num_items) for _ in range(world - 1))
    bounds = [0, *cuts, num_items]
    parts = [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(world)]
    rng.shuffle(parts)  # rank r holds parts[r]: offsets in no particular rank order
    largest = max(size for _, size in parts)
    return {
        "kind": "randn" if floats else "integers",
        "seed": seed,
        "batch": batch,
        "num_items": num_items,
        "d": 16 if floats else rng.randint(1, 4),
        "dtype": rng.choice([torch.float32, torch.float64]),
        "ties": rng.choice(["first", "last"]),
        "k": rng.choice([1, 2, 5, max(1, largest), max(1, largest + 1), max(1, num_items), num_items + 4]),
        "chunk_size": rng.choice([None, 64, 100] if floats else [None, 1, 2, 3, 7, 16]),
        "give_num_items": rng.random() < 0.5,
        "exclude": rng.choice([None, "ids", "coo", "csr"]) if num_items else None,
        "whole_exclude": [rng.random() < 0.5 for _ in range(world)],
        "parts": parts,
        "methods": [rng.choice(["filter", "topk"]) for _ in range(world)],
    }


def fixed_scenarios(world: int) -> list[dict]:
    """Ties the random ones may miss: all scores equal; a tie at the k-th place across shards."""
    out = []
    for ties in ("first", "last"):
        sizes = [7 + rank for rank in range(world)]
        offsets = [sum(sizes[:rank]) for rank in range(world)]
        out.append(
            {
                "kind": "all tied",
                "batch": 3,
                "num_items": sum(sizes),
                "dtype": torch.float32,
                "ties": ties,
                "k": 5 + 2 * world,  # more than the first shard holds
                "chunk_size": 4,
                "give_num_items": True,
                "exclude": None,
                "parts": list(zip(offsets, sizes, strict=True))[::-1],
                "methods": ["topk", "filter"] * world,
            }
        )
        # Scores 5, 3, 3 | 3, 3, 3 | ... | 3, 3, 1: the k-th place is a tie over every shard.
        out.append(
            {
                "kind": "straddle",
                "batch": 2,
                "num_items": 3 * world,
                "dtype": torch.float64,
                "ties": ties,
                "k": 3,
                "chunk_size": 2,
                "give_num_items": False,
                "exclude": None,
                "parts": [(3 * rank, 3) for rank in range(world)],
                "methods": ["filter", "topk"] * world,
            }
        )
    # Items scored +-inf (a common mask) and exclusions: -inf candidates stand ahead of the
    # padding of rows left with fewer than k candidates, also when they come from other shards.
    sizes = [5, 0, 4, 6][:world]
    out.append(
        {
            "kind": "infinite",
            "seed": 11,
            "batch": 3,
            "num_items": sum(sizes),
            "dtype": torch.float64,
            "ties": "last",
            "k": sum(sizes) + 2,
            "chunk_size": 3,
            "give_num_items": True,
            "exclude": "ids",
            "whole_exclude": [True] * world,
            "parts": [(sum(sizes[:rank]), sizes[rank]) for rank in range(world)],
            "methods": ["topk", "filter"] * world,
        }
    )
    return out


def data(scenario: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """``(queries, items)``: the whole catalog, the same on every process."""
    batch, num_items, dtype = scenario["batch"], scenario["num_items"], scenario["dtype"]
    if scenario["kind"] == "all tied":
        return torch.ones(batch, 2, dtype=dtype), torch.ones(num_items, 2, dtype=dtype)
    if scenario["kind"] == "straddle":
        items = torch.full((num_items, 1), 3.0, dtype=dtype)
        items[0], items[-1] = 5.0, 1.0
        return torch.ones(batch, 1, dtype=dtype), items
    gen = torch.Generator().manual_seed(scenario["seed"])
    if scenario["kind"] == "infinite":
        values = torch.tensor([-math.inf, -1.0, 0.0, 2.0, math.inf], dtype=dtype)
        items = values[torch.randint(0, 5, (num_items, 1), generator=gen)]
        return torch.arange(1.0, batch + 1, dtype=dtype)[:, None], items
    shape_q, shape_i = (batch, scenario["d"]), (num_items, scenario["d"])
    if scenario["kind"] == "randn":
        return torch.randn(shape_q, generator=gen, dtype=dtype), torch.randn(
            shape_i, generator=gen, dtype=dtype
        )
    queries = torch.randint(-2, 3, shape_q, generator=gen).to(dtype)
    return queries, torch.randint(-2, 3, shape_i, generator=gen).to(dtype)


def exclusions(scenario: dict) -> torch.Tensor | None:
    """The whole catalog's exclusions, in global ids, in the scenario's form."""
    form, batch, num_items = scenario["exclude"], scenario["batch"], scenario["num_items"]
    if form is None:
        return None
    rng = random.Random(scenario["seed"])
    ids = torch.tensor(
        [[rng.randrange(-1, num_items) for _ in range(num_items // 2 + 1)] for _ in range(batch)],
        dtype=torch.int64,
    ).reshape(batch, num_items // 2 + 1)
    if batch:
        ids[0, : num_items // 2] = torch.arange(num_items // 2)  # a row that loses most items
    if form == "ids":
        return ids
    rows, cols = (ids >= 0).nonzero(as_tuple=True)
    values = torch.ones(rows.numel())
    indices = torch.stack([rows, ids[rows, cols]])
    sparse = torch.sparse_coo_tensor(indices, values, (batch, num_items), check_invariants=False)
    if form == "coo":
        return sparse  # repeats kept
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta")
        return sparse.coalesce().to_sparse_csr()


def this_rank_exclude(scenario: dict, rank: int) -> torch.Tensor | None:
    """The whole exclusion list, or (on some ranks) only the ids of this rank's shard."""
    exclude = exclusions(scenario)
    if exclude is None or scenario["whole_exclude"][rank] or exclude.layout != torch.strided:
        return exclude
    offset, size = scenario["parts"][rank]
    return torch.where((exclude >= offset) & (exclude < offset + size), exclude, -1)


def reference(scenario: dict) -> tuple[torch.Tensor, torch.Tensor]:
    queries, items = data(scenario)
    settings = {"chunk_size": scenario["chunk_size"], "ties": scenario["ties"]}
    return catalog.top_k(queries, items, scenario["k"], exclude=exclusions(scenario), **settings)


# Bad calls, each a change to a good layout of 3 items per rank (on one rank or on all).
BAD = [
    "gap",
    "overlap",
    "num_items too large",
    "num_items too small",
    "offset not 0",
    "queries shape",
    "queries dtype",
    "queries values",
    "k",
    "bad items on one rank",
    "bad exclude on one rank",
    "nan on one rank",
]


def bad_call(name: str, world: int, rank: int) -> dict:
    """Keyword arguments of ``sharded_top_k`` for this rank in the bad scenario ``name``."""
    num_items = 3 * world
    gen = torch.Generator().manual_seed(7)
    queries = torch.randint(-2, 3, (4, 3), generator=gen).float()
    items = torch.randint(-2, 3, (num_items, 3), generator=gen).float()
    offset, size = 3 * rank, 3
    last = rank == world - 1
    call = {"num_items": None, "k": 4, "exclude": None}
    if name == "gap" and last:
        offset, size = offset + 1, 2  # item 3 * rank is on no rank
    elif name == "overlap" and last:
        offset, size = offset - 1, 4  # item 3 * rank - 1 is on two ranks
    elif name == "num_items too large":
        call["num_items"] = num_items + 2
    elif name == "num_items too small":
        call["num_items"] = num_items - 2
    elif name == "offset not 0":
        offset += 1
        if last:
            size = 2
    elif name == "queries shape" and last:
        queries = torch.cat([queries, queries[:1]])
    elif name == "queries dtype" and last:
        queries, items = queries.double(), items.double()
    elif name == "queries values" and last:
        queries = queries.clone()
        queries[1, 2] += 1
    elif name == "k" and last:
        call["k"] = 5
    shard = items[offset : offset + size]
    if name == "bad items on one rank" and last:
        shard = shard[:, :2]
    if name == "bad exclude on one rank" and last:
        call["exclude"] = torch.full((4, 1), num_items)
    if name == "nan on one rank" and last:
        shard = shard.clone()
        shard[0, 0] = math.nan
    return {"queries": queries, "items": shard, "item_offset": offset, **call}


# ------------------------------------------------------------------------------------ workers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_group(name: str, group, results: dict) -> None:
    """Every scenario on ``group``, this process's results (or errors) in ``results``."""
    import torch.distributed as dist

    world, me = dist.get_world_size(group), dist.get_rank(group)
    for index, scenario in enumerate(scenarios_of(world)):
        queries, items = data(scenario)
        offset, size = scenario["parts"][me]
        chunked._method_for = lambda device, m=scenario["methods"][me]: m
        try:
            results[name, "good", index] = catalog.sharded_top_k(
                queries,
                items[offset : offset + size],
                scenario["k"],
                item_offset=offset,
                num_items=scenario["num_items"] if scenario["give_num_items"] else None,
                exclude=this_rank_exclude(scenario, me),
                chunk_size=scenario["chunk_size"],
                ties=scenario["ties"],
                group=group,
            )
        except Exception:
            results[name, "good", index] = traceback.format_exc()
    for bad in BAD:
        try:
            catalog.sharded_top_k(**bad_call(bad, world, me), group=group)
            results[name, "bad", bad] = None
        except Exception as error:
            results[name, "bad", bad] = (type(error).__name__, str(error))


def _worker(rank: int, port: int, out_dir: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=WORLD,
        timeout=timedelta(seconds=60),
    )
    groups = {name: None if ranks is None else dist.new_group(sorted(ranks)) for name, ranks in GROUPS}
    results = {}
    started = time.perf_counter()
    for name, ranks in GROUPS:
        if ranks is None or rank in ranks:
            _run_group(name, groups[name], results)
        dist.barrier()  # every process, so that no subgroup's run overlaps the next one's
    results["seconds"] = time.perf_counter() - started
    torch.save(results, f"{out_dir}/rank{rank}.pt")
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    import torch.multiprocessing as mp

    out_dir = tmp_path_factory.mktemp("sharded")
    # A fork server imports torch and this module once, then forks the workers from that clean
    # process (no thread pool started yet): 4 interpreter starts on 2 cores cost far more.
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    if method == "forkserver":
        mp.get_context(method).set_forkserver_preload([__name__])
    context = mp.start_processes(
        _worker, args=(_free_port(), str(out_dir)), nprocs=WORLD, join=False, start_method=method
    )
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not context.join(timeout=max(1.0, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                pytest.fail(f"the {WORLD} worker processes did not finish in {DEADLINE_S} s: a hang")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


def _members(name: str) -> list[int]:
    ranks = dict(GROUPS)[name]
    return list(range(WORLD)) if ranks is None else sorted(ranks)


# ------------------------------------------------------------------------------------ tests


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _ in GROUPS])
def test_every_rank_equals_top_k_over_the_whole_catalog(rank_results, name: str) -> None:
    members = _members(name)
    world = len(members)
    scenarios = scenarios_of(world)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the workers: a product's rounding may depend on the threads
    try:
        for index, scenario in enumerate(scenarios):
            want_scores, want_ids = reference(scenario)
            for rank in members:
                got = rank_results[rank][name, "good", index]
                assert not isinstance(got, str), f"rank {rank}, scenario {scenario}:\n{got}"
                scores, ids = got
                assert ids.dtype == torch.int64 and scores.dtype == scenario["dtype"]
                assert torch.equal(ids, want_ids), (rank, scenario)
                assert torch.equal(scores, want_scores), (rank, scenario)
    finally:
        torch.set_num_threads(threads)
    kinds = {scenario["kind"] for scenario in scenarios}
    assert kinds == {"all tied", "straddle", "infinite", "integers", "randn"}


def test_the_fixed_scenarios_mean_what_they_say() -> None:
    infinite = fixed_scenarios(3)[-1]
    scores, ids = reference(infinite)
    candidates = ids >= 0
    assert (scores[candidates] == -math.inf).any() and (~candidates).any()
    tied, straddle = fixed_scenarios(3)[:2]
    assert reference(tied)[1][0].tolist() == list(range(tied["k"]))
    assert reference(straddle)[1].tolist() == [[0, 1, 2]] * 2  # items 1..7 tie
    straddle_last = fixed_scenarios(3)[3]
    assert reference(straddle_last)[1].tolist() == [[0, 7, 6]] * 2


EXPECTED_BAD = {
    # name: what every rank says, or (what the rank with the bad argument says, what the others say)
    "gap": r"must cover the catalog .* exactly once, but items {g}\.\.{g} are on no rank "
    r"\(a gap between rank {p}'s shard and rank {r}'s\)",
    "overlap": r"ranks {p} and {r} both hold items {o}\.\.{o}",
    "num_items too large": r"items {n}\.\.{n2} are on no rank \(after rank {r}'s shard; num_items={n3}\)",
    "num_items too small": r"rank {r} holds items past num_items={n4}",
    "offset not 0": r"items 0\.\.0 are on no rank \(a gap before rank 0's\)",
    "queries shape": r"queries: rank 0 has \(4, 3\) float32 on cpu, rank {r} has \(5, 3\) float32 on cpu",
    "queries dtype": r"queries: rank 0 has \(4, 3\) float32 on cpu, rank {r} has \(4, 3\) float64 on cpu",
    "queries values": r"queries: the values on rank {r} are not rank 0's .*shard the items, not the queries",
    "k": r"k: rank 0 has 4, rank {r} has 5",
    "bad items on one rank": (
        r"items must be a \(num_items, 3\) tensor",
        r"the arguments of rank {r} were refused",
    ),
    "bad exclude on one rank": (
        r"exclude ids must lie in \[0, {n}\)",
        r"on rank {r}, its exclude was refused",
    ),
    "nan on one rank": (r"contain NaN", r"on rank {r}, its item scores contain NaN"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _ in GROUPS])
def test_bad_layouts_and_arguments_are_refused_on_every_rank(rank_results, name: str) -> None:
    import re

    members = _members(name)
    world = len(members)
    last = world - 1
    values = {"r": last, "p": last - 1, "g": 3 * last, "o": 3 * last - 1, "n": 3 * world}
    values |= {"n2": 3 * world + 1, "n3": 3 * world + 2, "n4": 3 * world - 2}
    for bad, expected in EXPECTED_BAD.items():
        if world == 1 and bad in ("gap", "overlap", "queries shape", "queries dtype", "queries values", "k"):
            continue  # a world of one cannot disagree with itself; its own checks still run
        for group_rank, rank in enumerate(members):
            outcome = rank_results[rank][name, "bad", bad]
            assert outcome is not None, f"rank {rank} did not raise on {bad!r} ({name})"
            kind, message = outcome
            pattern = expected
            if isinstance(expected, tuple):  # the rank whose argument was bad says what it was
                pattern = expected[0] if group_rank == last else expected[1]
            assert kind == "ValueError", (bad, name, rank, message)
            assert re.search(pattern.format(**values), message), (bad, name, rank, message)


@pytest.mark.slow
def test_the_run_is_short(rank_results) -> None:
    # Not a timing test: a guard that the file stays quick on two slow cores.
    seconds = [round(results["seconds"], 1) for results in rank_results]
    assert max(seconds) < 60, seconds


# ------------------------------------------------------------------------------------ one process


def test_without_a_process_group_it_is_a_world_of_one() -> None:
    scenario = random_scenario(1, 3)
    queries, items = data(scenario)
    got = catalog.sharded_top_k(
        queries, items, scenario["k"], item_offset=0, exclude=exclusions(scenario), ties=scenario["ties"]
    )
    want = reference(scenario)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"item_offset": 2}, ValueError, r"items 0\.\.1 are on no rank \(a gap before rank 0's\)"),
        ({"num_items": 7}, ValueError, r"items 5\.\.6 are on no rank"),
        ({"item_offset": -1}, ValueError, "item_offset must be an int >= 0, got -1"),
        ({"item_offset": 1.0}, ValueError, "item_offset must be an int >= 0"),
        ({"num_items": -3}, ValueError, "num_items must be an int >= 0"),
        ({"items": lambda a, b: None}, TypeError, "items must be this process's"),
        ({"k": 0}, ValueError, "k must be an int >= 1"),
        ({"ties": "average"}, ValueError, "needs relevance labels"),
        ({"chunk_size": 0}, ValueError, "chunk_size must be a positive int"),
        ({"exclude": torch.tensor([[5], [0]])}, ValueError, r"\[0, 5\) or be -1"),
        ({"queries": torch.ones(2, 3, dtype=torch.int64)}, ValueError, "floating"),
    ],
)
def test_bad_input_is_refused_in_a_world_of_one(kwargs, error, message) -> None:
    args = {"queries": torch.ones(2, 3), "items": torch.ones(5, 3), "k": 2, "item_offset": 0} | kwargs
    with pytest.raises(error, match=message):
        catalog.sharded_top_k(args.pop("queries"), args.pop("items"), args.pop("k"), **args)
