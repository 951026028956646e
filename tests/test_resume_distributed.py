"""Kill-and-resume under real worker processes (gloo) and on one process, equal to the bit.

Each world size runs in two launches of fresh processes: the first evaluates every case without
interruption, saving ignite Checkpoints (the metric and the evaluator) at the first, a middle and
the last-but-one iteration; the second starts from nothing but those files, resumes from each and
must give exactly the uninterrupted results (every published value and the per-query values).
Rank 0 runs one batch more than the others, so a rank may resume with nothing left to read.
Three processes refuse the checkpoints of two, saying why. ``examples/checkpoint_resume.py``
(tests/test_examples.py) kills a real process with SIGKILL.
"""

from __future__ import annotations

import socket

import pytest
import torch
from resume_cases import CASES, PLANS, checkpointed_run, resumed_run, worker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(world: int, phase: str, folder, out) -> list[dict]:
    import ignite.distributed as idist

    with idist.Parallel(
        backend="gloo", nproc_per_node=world, master_addr="127.0.0.1", master_port=_free_port()
    ) as parallel:
        parallel.run(worker, phase, str(folder), str(out))
    return [torch.load(out / f"{phase}-w{world}-rank{r}.pt", weights_only=False) for r in range(world)]


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """{world: (uninterrupted results per rank, resumed results per rank)} for 2 and 3 processes."""
    folder, out = tmp_path_factory.mktemp("checkpoints"), tmp_path_factory.mktemp("results")
    results = {}
    for world in (2, 3):
        results[world] = (_launch(world, "run", folder, out), _launch(world, "resume", folder, out))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_resumed_runs_equal_the_uninterrupted_run_on_gloo_processes(launches, world):
    uninterrupted, resumed = launches[world]
    for rank in range(world):
        for form, kind in CASES:
            expected = uninterrupted[rank][form, kind]
            assert expected == uninterrupted[0][form, kind]  # every rank gets the same result
            for k in PLANS[world][1]:
                assert resumed[rank][form, kind, k] == expected, (world, rank, form, kind, k)


@pytest.mark.slow
def test_three_processes_refuse_a_checkpoint_of_two(launches):
    _, resumed = launches[3]
    for rank in range(3):
        for form, kind in CASES:
            message = resumed[rank][form, kind, "w2"]
            assert "states of 2 process(es) and this run has 3" in message
            assert "resume on 2 process(es)" in message


@pytest.mark.parametrize(("form", "kind"), CASES)
def test_resumed_runs_equal_the_uninterrupted_run_on_one_process(tmp_path, form, kind):
    expected = checkpointed_run(form, kind, 1, tmp_path)
    for k in PLANS[1][1]:
        assert resumed_run(form, kind, 1, tmp_path / f"checkpoint_{k}.pt") == expected, k
