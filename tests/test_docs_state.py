"""The docs say what the state holds: the dtypes they name are those the code keeps."""

from __future__ import annotations

from pathlib import Path

import torch

from ignite_ranking import MRR, Coverage

ROOT = Path(__file__).resolve().parents[1]


def test_exposure_docs_name_the_int64_counts_of_the_state():
    metric = Coverage([1, 2], num_items=4)
    metric.update((torch.tensor([[0.9, 0.1, 0.5, 0.2]]), torch.zeros(1, 4)))
    assert metric.state_dict()["__metric_state_per_rank"][0]["_sum_per_k"].dtype == torch.int64
    page = (ROOT / "docs" / "metrics" / "exposure.md").read_text(encoding="utf-8")
    state = page.split("## State", 1)[1].split("\n## ", 1)[0]
    assert "int64 counts" in state and "float64" not in state


def test_examples_and_why_do_not_call_the_exact_sums_float64():
    metric = MRR([1])
    metric.update((torch.tensor([[0.9, 0.1]]), torch.tensor([[1, 0]])))
    assert (
        metric.state_dict()["__metric_state_per_rank"][0]["_sum_per_k"].dtype == torch.int64
    )  # fixed-point limbs
    for path in ("examples/checkpoint_resume.py", "examples/distributed.py", "docs/why.md"):
        text = " ".join((ROOT / path).read_text(encoding="utf-8").split())
        assert "float64 sum" not in text and "int64 limbs" in text, path
