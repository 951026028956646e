"""The one switch between the host-tuned kernels and the generic ones.

Some kernels take a faster form on CPU tensors (a grouped top-k, a numpy sort, a read of a count
on the host); the generic form, what any other device runs, never reads a tensor on the host.
:func:`host_tuned` is the one question every such branch asks. The environment variable
``IGNITE_RANKING_KERNELS`` answers it: ``auto`` (the default) takes the host-tuned form on CPU
tensors, ``generic`` never does, so that tests and benchmarks run the device path on a CPU.
"""

from __future__ import annotations

import os

import torch

__all__ = ["KERNELS_VARIABLE", "KERNEL_CHOICES", "host_tuned", "kernels_choice"]

KERNELS_VARIABLE = "IGNITE_RANKING_KERNELS"
KERNEL_CHOICES = ("auto", "generic")


def kernels_choice() -> str:
    """``IGNITE_RANKING_KERNELS`` (``auto`` when unset), checked against :data:`KERNEL_CHOICES`."""
    choice = os.environ.get(KERNELS_VARIABLE, "auto")
    if choice not in KERNEL_CHOICES:
        raise ValueError(f"{KERNELS_VARIABLE} must be one of {', '.join(KERNEL_CHOICES)}, got {choice!r}.")
    return choice


def host_tuned(where: torch.Tensor | torch.device) -> bool:
    """Whether a kernel may take its host-tuned form for a tensor (or device): on CPU under
    ``auto``; never under ``generic``, nor on any other device."""
    device = where if isinstance(where, torch.device) else where.device
    return device.type == "cpu" and kernels_choice() == "auto"
