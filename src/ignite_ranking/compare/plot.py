"""The per-query difference chart (matplotlib, an optional extra)."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["plot_differences"]


def plot_differences(
    differences, path: str | os.PathLike, metric: str = "metric", system_a: str = "A", system_b: str = "B"
) -> None:
    """Writes a bar chart of per-query differences ``B - A``, sorted, to ``path`` (PNG by extension).

    Bars above zero (queries where B is better) are blue, below zero orange; the title gives the
    wins, ties and losses and the mean difference.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "diff.png")
        >>> plot_differences([0.1, -0.2, 0.0, 0.3], path, "ndcg@10", "bm25", "dense")
        >>> os.path.getsize(path) > 0
        True
    """
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the difference plot needs matplotlib; install it with: pip install 'ignite-ranking[compare]'"
        ) from err
    d = np.sort(np.asarray(differences, dtype=np.float64))[::-1]
    wins, ties, losses = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    fig, ax = plt.subplots(figsize=(8, 3.5), dpi=120)
    try:
        x = np.arange(d.size)
        ax.bar(
            x,
            d,
            width=1.0 if d.size > 200 else 0.85,
            color=np.where(d >= 0, "#1f77b4", "#ff7f0e"),
            linewidth=0,
        )
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xlim(-0.5, max(d.size, 1) - 0.5)
        ax.set_xlabel(f"queries, sorted by difference ({d.size})")
        ax.set_ylabel(f"{metric}: {system_b} - {system_a}")
        mean = float(d.mean()) if d.size else float("nan")
        ax.set_title(
            f"{system_b} vs {system_a} on {metric}: {wins} wins, {ties} ties, {losses} losses; "
            f"mean difference {mean:+.4f}",
            fontsize=9,
        )
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
