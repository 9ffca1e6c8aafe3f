"""Attention heatmaps with seaborn: one matrix, or a grid of them (heads, or layers x heads)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def _to_numpy(weights) -> np.ndarray:
    """A float NumPy copy of a tensor (any device or dtype), array or nested list; ValueError for anything else."""
    if isinstance(weights, torch.Tensor):
        if weights.is_complex() or weights.device.type == "meta":
            raise ValueError(f"weights must be a real tensor with data, got dtype {weights.dtype} on {weights.device}")
        return weights.detach().float().cpu().numpy()
    try:
        return np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be a tensor, an array or a nested list of numbers, got {type(weights).__name__}") from None


def _check_labels(labels: Sequence[str] | None, size: int, what: str) -> None:
    if labels is not None and len(labels) != size:
        raise ValueError(f"{what} has {len(labels)} labels for {size} positions")


def plot_attention(
    weights,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    annot: bool | None = None,
    title: str | None = None,
    ax: Axes | None = None,
    vmin: float = 0.0,
    vmax: float | None = None,
    cmap: str = "viridis",
    cbar: bool = True,
) -> Axes:
    """Draw one attention matrix ``(n, m)`` as a heatmap: rows are queries, columns are keys.

    Args:
        weights: tensor or array ``(n, m)``.
        x_labels: ``m`` key labels (tokens); y_labels: ``n`` query labels.
        annot: write the weights in the cells; default: only for matrices up to 10 x 10.
        vmin, vmax: colour scale; pass the same values to compare several plots.

    Returns the matplotlib Axes.
    """
    w = _to_numpy(weights)
    if w.ndim != 2:
        raise ValueError(f"weights must have shape (n, m), got shape {w.shape}")
    n, m = w.shape
    _check_labels(x_labels, m, "x_labels (keys)")
    _check_labels(y_labels, n, "y_labels (queries)")
    if ax is None:
        _, ax = plt.subplots(figsize=(max(3.0, 0.6 * m + 1.5), max(2.5, 0.5 * n + 1.0)))
    if annot is None:
        annot = n <= 10 and m <= 10
    sns.heatmap(
        w, ax=ax, cmap=cmap, vmin=vmin, vmax=vmax, annot=annot, fmt=".2f", square=False, cbar=cbar,
        xticklabels=list(x_labels) if x_labels is not None else "auto",
        yticklabels=list(y_labels) if y_labels is not None else "auto",
        annot_kws={"fontsize": 8},
    )
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    ax.tick_params(axis="y", rotation=0)
    if title:
        ax.set_title(title)
    return ax


def plot_attention_grid(
    weights,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    row_titles: Sequence[str] | None = None,
    ncols: int | None = None,
    vmax: float | None = None,
    annot: bool = False,
    cmap: str = "viridis",
    cell_size: float = 2.4,
) -> Figure:
    """Draw a grid of attention matrices sharing one colour scale (0 to the largest weight).

    Args:
        weights: ``(h, n, m)`` (heads) or ``(L, h, n, m)`` (layers x heads).
        titles: for ``(h, n, m)`` one title per head (default ``head 0``, ...);
            for ``(L, h, n, m)`` one title per column.
        row_titles: for ``(L, h, n, m)``, one title per row (default ``layer 0``, ...).
        ncols: for ``(h, n, m)``, heads per row (default: all in one row).
        vmax: top of the shared colour scale (default: the largest weight); pass 1.0
            so that nearly uniform weights do not look patterned.

    Returns the matplotlib Figure.
    """
    w = _to_numpy(weights)
    if w.ndim == 3:
        heads = w.shape[0]
        ncols = heads if ncols is None else ncols
        if not isinstance(ncols, int) or ncols <= 0:
            raise ValueError(f"ncols must be a positive integer, got {ncols!r}")
        titles = list(titles) if titles is not None else [f"head {c}" for c in range(heads)]
        if len(titles) != heads:
            raise ValueError(f"need {heads} titles, one per head, got {len(titles)}")
        rows = -(-heads // ncols)
        cells = [(w[i], titles[i], "") for i in range(heads)]
        cols = min(ncols, heads)
    elif w.ndim == 4:
        rows, cols = w.shape[:2]
        titles = list(titles) if titles is not None else [f"head {c}" for c in range(cols)]
        row_titles = list(row_titles) if row_titles is not None else [f"layer {r}" for r in range(rows)]
        if len(titles) != cols or len(row_titles) != rows:
            raise ValueError(f"need {cols} titles and {rows} row_titles, got {len(titles)} and {len(row_titles)}")
        cells = [(w[r, c], titles[c] if r == 0 else None, row_titles[r]) for r in range(rows) for c in range(cols)]
    else:
        raise ValueError(f"weights must have shape (h, n, m) or (L, h, n, m), got shape {w.shape}")
    n, m = w.shape[-2:]
    _check_labels(x_labels, m, "x_labels (keys)")
    _check_labels(y_labels, n, "y_labels (queries)")
    # The layout engine is switched on only at the end: with it on, seaborn would re-run
    # the layout for every heatmap drawn, which makes large grids slow.
    fig, axes = plt.subplots(rows, cols, figsize=(cell_size * cols + 1.0, cell_size * rows), squeeze=False)
    if vmax is None:
        vmax = float(w.max()) if w.size else 1.0
    for k, ax in enumerate(axes.flat):
        if k >= len(cells):
            ax.axis("off")  # unused slot in the last row
            continue
        matrix, title, row_title = cells[k]
        plot_attention(matrix, x_labels, y_labels, annot=annot, ax=ax, vmin=0.0, vmax=vmax, cmap=cmap, cbar=False, title=title)
        first_col, last_row = k % cols == 0, k + cols >= len(cells)
        ax.set_ylabel((f"{row_title}\nquery" if row_title else "query") if first_col else "")
        if not last_row:
            ax.set_xlabel("")
    fig.set_layout_engine("constrained")
    fig.colorbar(axes.flat[0].collections[0], ax=axes, shrink=0.8, label="weight")
    return fig
