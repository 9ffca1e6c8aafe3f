"""Plots for lesson 04b (dates to ISO 8601): attention maps with characters on both axes, the deciding
spans drawn on them, and accuracies per written form."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from ..models import dates as D
from .plotting import colour_query_key

_SPAN_COLOURS = {"year": "tab:red", "month": "tab:orange", "day": "tab:cyan"}


def plot_date_map(weights, text: str, output: str, *, spans=None, title: str | None = None,
                  ax: Axes | None = None) -> Axes:
    """One attention map ``(T_out, T_in)``: a row per output character (``output`` and ``<eos>``), a column per
    source character of ``text``; with ``spans`` ``(T_out, 2)`` (``-1`` or None: no span), each output
    character's deciding span is outlined (year red, month orange, day cyan)."""
    w = np.asarray(weights, dtype=float)[: len(output) + 1, : len(text)]
    if w.ndim != 2 or w.shape[1] != len(text):
        raise ValueError(f"weights must be (T_out, T_in) with T_in >= len(text) = {len(text)}, got {np.shape(weights)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.28 * len(text) + 1.6, 0.28 * w.shape[0] + 1.0))
    ax.imshow(w, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(text)), [c if c != " " else "␣" for c in text], fontsize=8, family="monospace")
    rows = (list(output) + ["<eos>"])[: w.shape[0]]
    ax.set_yticks(range(len(rows)), rows, fontsize=8, family="monospace")
    ax.tick_params(length=0)
    colour_query_key(ax)  # rows: the output characters (queries); columns: the source (keys)
    if spans is not None:
        for k, (name, span) in enumerate(zip(D.OUTPUT_FIELDS[: w.shape[0]], spans)):
            if name is not None and span is not None and int(span[0]) >= 0:
                start, end = int(span[0]), int(span[1])
                ax.add_patch(Rectangle((start - 0.5, k - 0.5), end - start, 1, fill=False,
                                       edgecolor=_SPAN_COLOURS[name], linewidth=1.2))
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_date_maps(items: Sequence[tuple], *, ncols: int = 2, suptitle: str | None = None):
    """A grid of maps; each item is ``(weights, text, output, spans, title)``. Returns the figure."""
    nrows = -(-len(items) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 3.0 * nrows), squeeze=False)
    for ax, (weights, text, output, spans, title) in zip(axes.flat, items):
        plot_date_map(weights, text, output, spans=spans, title=title, ax=ax)
    for ax in list(axes.flat)[len(items):]:
        ax.axis("off")
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def plot_by_form(table: dict[str, dict[str, float]], columns: Sequence[str], *, labels: Sequence[str] | None = None,
                 title: str | None = None, ax: Axes | None = None) -> Axes:
    """Horizontal bars: for every written form (rows of ``table``), the values ``table[form][column]``."""
    forms = list(table)
    labels = list(labels or columns)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.45 * len(forms) * len(columns) / 2 + 1.2))
    height = 0.8 / len(columns)
    y = np.arange(len(forms))
    for i, (col, label) in enumerate(zip(columns, labels)):
        values = [table[f][col] for f in forms]
        ax.barh(y + (i - (len(columns) - 1) / 2) * height, values, height=height, label=label)
    ax.set_yticks(y, forms, family="monospace", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of the held-out set")
    ax.legend(loc="lower left", fontsize=8)
    if title:
        ax.set_title(title)
    return ax
