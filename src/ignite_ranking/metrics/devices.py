"""The device-default trap: inputs on an accelerator, the metric's state on the CPU.

A metric keeps its sums on ``device`` (``"cpu"`` by default, as Ignite's metrics do). Fed tensors
on an accelerator, each update then copies its sums to the host, a synchronization that the
device path otherwise never makes. :func:`warn_of_host_state` warns once per metric (or group)
with the fix.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

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


def _first_tensor(output: object) -> torch.Tensor | None:
    values = (
        output
        if isinstance(output, (tuple, list))
        else vars(output).values()
        if hasattr(output, "__dict__")
        else ()
    )
    return next((v for v in values if isinstance(v, torch.Tensor)), None)


def warn_of_host_state(owner: object, devices: Iterable[torch.device], output: object) -> None:
    """Warns once per ``owner`` if ``output``'s tensors are on an accelerator while one of the
    state ``devices`` is the CPU."""
    if owner.__dict__.get("_device_warned"):
        return
    tensor = _first_tensor(output)
    if tensor is None or not accelerated(tensor) or all(d.type != "cpu" for d in devices):
        return
    owner._device_warned = True
    warnings.warn(
        DeviceWarning(
            f"{type(owner).__name__} keeps its state on the CPU but got inputs on {tensor.device}: each "
            "update copies its sums to the host, a synchronization. Create it with "
            f"device=idist.device() (or device='{tensor.device}') to keep the state with the inputs."
        ),
        stacklevel=3,
    )
