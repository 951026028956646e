"""The device-default trap: inputs on an accelerator, the metric's state on the CPU.

A metric keeps its sums on ``device`` (``"cpu"`` by default, as Ignite's metrics do). Fed tensors
on an accelerator, each update then copies its sums to the host, a synchronization that the
device path otherwise never makes. :func:`warn_of_host_state` warns once per metric (or group)
with the fix.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch

__all__ = ["DeviceWarning", "accelerated", "warn_of_host_state"]


class DeviceWarning(UserWarning):
    """Inputs on an accelerator reach a metric whose state is on the CPU: create it with
    ``device=idist.device()`` (or the inputs' device) to keep its sums with the inputs.

    A metric (or a group) warns once, on its first such update; each of them copies the sums to
    the host, a synchronization. Make it an error to find such a metric in a GPU run:

    Example:
        >>> import warnings
        >>> from ignite_ranking import MRR, DeviceWarning
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("error", DeviceWarning)
        ...     metric = MRR([10], device="cpu")  # fed CUDA tensors, its first update would raise
        >>> issubclass(DeviceWarning, UserWarning)
        True
    """


def accelerated(tensor: torch.Tensor) -> bool:
    """Whether a tensor lives on an accelerator (not the CPU, nor the meta device)."""
    return tensor.device.type not in ("cpu", "meta")


def warn_of_host_state(metrics: Sequence, inputs: torch.Tensor) -> None:
    """Warns once for ``metrics`` (one metric, or a group's members) if ``inputs`` (a tensor of the
    update's ranked batch) are on an accelerator while one of their states is on the CPU."""
    if metrics[0].__dict__.get("_device_warned") or not accelerated(inputs):
        return
    if all(metric._device.type != "cpu" for metric in metrics):
        return
    for metric in metrics:
        metric._device_warned = True
    owner = type(metrics[0]).__name__ if len(metrics) == 1 else "RankingMetrics"
    warnings.warn(
        DeviceWarning(
            f"{owner} keeps its state on the CPU but got inputs on {inputs.device}: each update "
            "copies its sums to the host, a synchronization. Create it with device=idist.device() "
            f"(or device='{inputs.device}') to keep the state with the inputs."
        ),
        stacklevel=4,
    )
