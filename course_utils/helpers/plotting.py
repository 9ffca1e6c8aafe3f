"""Attention heatmaps: one matrix, or a grid of them (heads, or layers x heads).

Every heatmap of the course labels its query axis (rows) in the query colour and its key axis
(columns) in the key colour of ``course_utils.helpers.palette`` (``colour_query_key``).

Drawn with matplotlib's ``pcolormesh`` directly (seaborn's ``heatmap`` redraws the whole figure
for every panel, which made a grid of 8 heads take seconds).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .palette import KEY, QUERY


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
    if vmax is None:
        vmax = float(np.nanmax(w)) if np.isfinite(w).any() else 1.0
    mesh = ax.pcolormesh(np.ma.masked_invalid(w), cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set(xlim=(0, m), ylim=(n, 0))  # query 0 on top, as in the matrix
    for spine in ax.spines.values():
        spine.set_visible(False)
    if cbar:
        ax.figure.colorbar(mesh, ax=ax).outline.set_linewidth(0)
    _set_tick_labels(ax, x_labels, m, "x")
    _set_tick_labels(ax, y_labels, n, "y")
    if annot:
        _annotate(ax, mesh, w)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    colour_query_key(ax)
    if title:
        ax.set_title(title)
    return ax


def colour_query_key(ax: Axes) -> Axes:
    """Colour a weight map as every heatmap of the course: the query axis (rows: label and tick
    labels) in the query colour, the key axis (columns) in the key colour. Returns ``ax``."""
    ax.yaxis.label.set_color(QUERY.strong)
    ax.xaxis.label.set_color(KEY.strong)
    ax.tick_params(axis="y", labelcolor=QUERY.strong)
    ax.tick_params(axis="x", labelcolor=KEY.strong)
    return ax


def _set_tick_labels(ax: Axes, labels: Sequence[str] | None, size: int, axis: str) -> None:
    """One tick per cell centre (indices when there are no labels, every k-th past 25 cells);
    key labels turn vertical when they would not fit side by side."""
    step = 1 if labels is not None else -(-size // 25)
    ticks = np.arange(0, size, step)
    texts = [str(labels[i]) if labels is not None else str(i) for i in ticks]
    if axis == "y":
        ax.set_yticks(ticks + 0.5, texts, rotation=0, va="center")
        return
    width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72 / max(len(ticks), 1)
    longest = max((len(t) for t in texts), default=0) * 0.62 * plt.rcParams["font.size"]  # points, roughly
    ax.set_xticks(ticks + 0.5, texts, rotation=90 if longest > 0.9 * width_pt else 0)


def _annotate(ax: Axes, mesh, w: np.ndarray) -> None:
    """Write each weight in its cell, dark on light colours and white on dark ones."""
    colours = mesh.cmap(mesh.norm(w))
    linear = np.where(colours[..., :3] <= 0.03928, colours[..., :3] / 12.92, ((colours[..., :3] + 0.055) / 1.055) ** 2.4)
    luminance = linear @ np.array([0.2126, 0.7152, 0.0722])
    for (i, j), value in np.ndenumerate(w):
        if np.isnan(value):
            continue  # a blank cell, as pcolormesh draws it
        text = ax.text(j + 0.5, i + 0.5, f"{value:.2f}", ha="center", va="center", fontsize=8,
                       color="0.15" if luminance[i, j] > 0.408 else "w")
        text.set_in_layout(False)  # inside its cell: the layout need not measure it (fast for big grids)


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
        # Every panel has the same keys and queries: their names are written once, on the outer
        # panels (which also halves the time it takes to draw a grid of eight heads).
        ax.tick_params(labelleft=first_col, labelbottom=last_row)
        if not last_row:
            ax.set_xlabel("")
    fig.set_layout_engine("constrained")
    fig.colorbar(axes.flat[0].collections[0], ax=axes, shrink=0.8, label="weight")
    return fig
