"""Figures of lessons 01-04 that take more than a few lines: kept here so that lesson cells stay short.

Every weight map uses the fixed 0-1 colour scale unless a function says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
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
