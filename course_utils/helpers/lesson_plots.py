"""Figures of lessons 01-04 that take more than a few lines: kept here so that lesson cells stay short.

Every weight map uses the fixed 0-1 colour scale unless a function says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import math

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .plotting import plot_attention


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def plot_weights(
    weights,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    *,
    fmt: str = ".2f",
    title: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Heatmap of weights ``(n, m)`` on the 0-1 scale, each cell written with ``fmt`` (e.g. ``".3f"``)."""
    w = _np(weights)
    ax = plot_attention(w, x_labels, y_labels, annot=False, vmin=0.0, vmax=1.0, title=title, ax=ax)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            ax.text(j + 0.5, i + 0.5, format(float(w[i, j]), fmt), ha="center", va="center", fontsize=8,
                    color="black" if w[i, j] > 0.6 else "white")
    return ax


def plot_table(
    values,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    cmap: str = "Greys",
    vmin: float | None = None,
    vmax: float | None = None,
    figsize: tuple[float, float] = (5.5, 3.2),
) -> Figure:
    """A small matrix ``(n, m)`` drawn as a table: every cell shaded and written as a whole number.

    For hand-built matrices that are read cell by cell (lesson 02's features ``X`` and rule matrix
    ``W``); ``vmin``/``vmax`` fix the shading (default: the smallest and largest value).
    """
    v = _np(values)
    if v.ndim != 2 or v.shape != (len(y_labels), len(x_labels)):
        raise ValueError(f"values must have shape (len(y_labels), len(x_labels)) = ({len(y_labels)}, {len(x_labels)}), "
                         f"got shape {v.shape}")
    fig, ax = plt.subplots(figsize=figsize)
    sns.heatmap(v, annot=True, fmt=".0f", cmap=cmap, vmin=vmin, vmax=vmax, cbar=False, xticklabels=list(x_labels),
                yticklabels=list(y_labels), linewidths=0.5, linecolor="lightgrey", ax=ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="y", rotation=0)
    ax.tick_params(axis="x", rotation=30)
    ax.set_title(title)
    return fig


def plot_row_entropy(weights, entropy, labels: Sequence[str]) -> Figure:
    """A self-attention heatmap ``(n, n)`` beside one bar per row: its entropy ``(n,)`` in nats.

    Dotted line at log 2 (a row split over two keys), dashed line at log m (a uniform row);
    ``labels`` name the n positions (queries and keys alike).
    """
    w, h = _np(weights), _np(entropy)
    if w.ndim != 2 or h.shape != w.shape[:1] or len(labels) != w.shape[1]:
        raise ValueError(f"need weights (n, m), entropy (n,) and m labels, got shapes {w.shape} and {h.shape} "
                         f"and {len(labels)} labels")
    n, m = w.shape
    fig, (ax_map, ax_bar) = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True,
                                         gridspec_kw={"width_ratios": [3, 2]}, constrained_layout=True)
    plot_attention(weights, labels, labels, title="attention weights", ax=ax_map, vmax=1)
    rows = np.arange(n) + 0.5  # heatmap rows sit at 0.5, 1.5, ...
    ax_bar.barh(rows, h, height=0.6, color="tab:orange")
    ax_bar.axvline(math.log(2), color="grey", linestyle=":", label="log 2 (two keys)")
    ax_bar.axvline(math.log(m), color="black", linestyle="--", label=f"log {m} (uniform)")
    for y, value in zip(rows.tolist(), h.tolist()):
        ax_bar.text(value + 0.03, y, f"{value:.2f}", va="center", fontsize=8)
    ax_bar.set_xlim(0, math.log(m) * 1.1)
    ax_bar.set_xlabel("entropy H of the row (nats)")
    ax_bar.set_title("how spread out each row is")
    ax_bar.legend(loc="lower right", fontsize=8)
    return fig


def plot_lookup(hard, soft, labels: Sequence[str], query: str) -> Figure:
    """Bars of a hard (argmax) and a soft (softmax) look-up's weights ``(m,)`` over the same keys."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
    for ax, w, title in [(axes[0], _np(hard), "hard look-up: argmax"), (axes[1], _np(soft), "soft look-up: softmax")]:
        ax.bar(list(labels), w, color="tab:blue")
        for i, wi in enumerate(w):
            ax.text(i, wi + 0.02, f"{wi:.2f}", ha="center")
        ax.set_title(title)
        ax.set_xlabel("key")
    axes[0].set_ylabel("weight on the key's value")
    axes[0].set_ylim(0, 1.15)
    fig.suptitle(f'query "{query}"')
    fig.tight_layout()
    return fig


def plot_by_length(curves: dict[str, dict[int, float]], *, ylabel: str, title: str) -> Figure:
    """One line per model: ``{name: {length: value}}`` against the source length."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for name, by_len in curves.items():
        lengths = sorted(by_len)
        ax.plot(lengths, [by_len[n] for n in lengths], "o-", label=name)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("source length")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_offsets(offsets: dict[str, Sequence[int]], *, title: str) -> Figure:
    """Histogram of peak offsets (argmax position minus the mirrored position), one bar group per model."""
    values = {name: np.asarray(list(v)) for name, v in offsets.items()}
    lo = min(int(v.min()) for v in values.values())
    hi = max(int(v.max()) for v in values.values())
    bins = np.arange(lo, hi + 1)
    width = 0.8 / len(values)
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    for k, (name, v) in enumerate(values.items()):
        share = [(v == b).mean() for b in bins]
        ax.bar(bins + (k - (len(values) - 1) / 2) * width, share, width=width, label=name)
    ax.set_xticks(bins)
    ax.set_xlabel("peak position - mirrored position n-1-t")
    ax.set_ylabel("share of decoder steps")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig
