"""Figures of lessons 01-04 that take more than a few lines: kept here so that lesson cells stay short.

Every weight map uses the fixed 0-1 colour scale unless a function says otherwise. Also here: the
numbers one of them plots (``anti_diagonal_offsets``, lesson 04's peak offsets) and lesson 04's diagram
of the score network drawn with boxes and arrows (``diagram_additive_score``; one decoder step is a
drawing of ``authoring/drawings``).
"""

from __future__ import annotations

from collections.abc import Sequence

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..core.validation import require_index_range, require_tensor
from .palette import DATA, INK, KEY, MUTED, PARAMETER, QUERY, VALUE
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
    import seaborn as sns  # here, not at the top: most lessons that import this module never draw a table

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
    ax_bar.barh(rows, h, height=0.6, color=QUERY.strong)  # one bar per query row
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
        ax.bar(list(labels), w, color=MUTED)
        for i, wi in enumerate(w):
            ax.text(i, wi + 0.02, f"{wi:.2f}", ha="center")
        ax.set_title(title)
        ax.set_xlabel("key", color=KEY.strong)
        ax.tick_params(axis="x", labelcolor=KEY.strong)
    axes[0].set_ylabel("weight on the key's value")
    axes[0].set_ylim(0, 1.15)
    fig.suptitle(f'query "{query}"', color=QUERY.strong)
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


def anti_diagonal_offsets(weights: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Where each decoder step's largest weight sits, relative to the mirrored source position.

    ``weights``: ``(B, T_out, T_in)`` attention of a reversal model; ``lengths``: ``(B,)`` source
    lengths n. For every example b and step t < n (the token steps: the ``<eos>`` step and padded
    steps are left out), the argmax over the real source positions i < n minus n - 1 - t.
    Returns a 1-D long CPU tensor of ``lengths.sum()`` offsets, example after example, t ascending.
    """
    require_tensor("weights", weights, ndim=3, floating=True)
    require_tensor("lengths", lengths, ndim=1, integer=True)
    B, T_out, T_in = weights.shape
    if lengths.shape[0] != B:
        raise ValueError(f"lengths must hold one length per example ({B}), got shape {tuple(lengths.shape)}")
    require_index_range("lengths", lengths, 1, min(T_in, T_out) + 1, f" (weights have shape {tuple(weights.shape)})")
    lengths = lengths.to(weights.device)
    real = torch.arange(T_in, device=weights.device) < lengths[:, None]  # (B, T_in)
    peak = weights.masked_fill(~real[:, None, :], float("-inf")).argmax(-1)  # (B, T_out)
    t = torch.arange(T_out, device=weights.device)
    offsets = peak - (lengths[:, None] - 1 - t)  # (B, T_out)
    return offsets[t < lengths[:, None]].cpu()


# --- Lesson 04's two diagrams: boxes and arrows on an axis without ticks ---------------------------


def _canvas(figsize: tuple[float, float], xlim: tuple[float, float], ylim: tuple[float, float]):
    fig, ax = plt.subplots(figsize=figsize)
    ax.set(xlim=xlim, ylim=ylim)
    ax.axis("off")
    return fig, ax


def _node(ax: Axes, xy: tuple[float, float], text: str, kind: str = "op", fontsize: int = 11, role=None):
    """A box at ``xy``: ``kind`` "op" (a layer, grey), "value" (a vector, white, or in the tint of a
    palette ``role``: the query blue, the key orange, the value green) or "sum" (a circle)."""
    style = {"op": dict(boxstyle="round,pad=0.35", fc=PARAMETER.light, ec=PARAMETER.strong),
             "value": dict(boxstyle="round,pad=0.3", fc=(role or DATA).light, ec=(role or DATA).strong),
             "sum": dict(boxstyle="circle,pad=0.2", fc="white", ec=INK)}[kind]
    return ax.text(*xy, text, ha="center", va="center", fontsize=fontsize, bbox=style, zorder=3)


def _arrow(ax: Axes, a, b, *, dashed: bool = False, head: bool = True) -> None:
    """An arrow from ``a`` to ``b``: nodes made by ``_node`` (clipped at their boxes) or (x, y) points."""
    ends = [(x, "data", None) if isinstance(x, tuple) else ((0.5, 0.5), x, x.get_bbox_patch()) for x in (a, b)]
    (xy_a, coords_a, patch_a), (xy_b, coords_b, patch_b) = ends
    ax.annotate("", xy=xy_b, xycoords=coords_b, xytext=xy_a, textcoords=coords_a, zorder=4, arrowprops=dict(
        arrowstyle="-|>" if head else "-", color="0.5" if dashed else "0.25", lw=1.2, ls="--" if dashed else "-",
        shrinkA=2 if patch_a else 0, shrinkB=2 if patch_b else 0, patchA=patch_a, patchB=patch_b))


def diagram_additive_score() -> Figure:
    """The additive score network: ``e_ti = v^T tanh(W_s s_t + W_h h_i)``, softmax over i, context ``c_t``."""
    fig, ax = _canvas((13, 4.4), (-0.9, 13.3), (-3.2, 1.9))
    ax.add_patch(plt.Rectangle((1.2, -1.55), 7.55, 3.1, fc="#f4f4f4", ec="0.75", ls="--", zorder=0))
    ax.text(1.3, 1.4, "once for every source position i (the same $W_s$, $W_h$, $v$)", fontsize=9, color="0.35",
            va="top")
    s = _node(ax, (0, 0.8), "$s_t$\ndecoder state\n(Bahdanau: $s_{t-1}$)", "value", 10, role=QUERY)
    h = _node(ax, (0, -1.0), "$h_i$\nencoder state i", "value", 10)
    chain = [_node(ax, (2.3, 0.8), "$W_s$"), _node(ax, (2.3, -1.0), "$W_h$"), _node(ax, (3.8, -0.1), "+", "sum", 14),
             _node(ax, (5.0, -0.1), "tanh"), _node(ax, (6.2, -0.1), "$v^\\top$"),
             _node(ax, (7.7, -0.1), "score $e_{t,i}$", "value"),
             _node(ax, (9.9, -0.1), "softmax over i\n(real positions only)"),
             _node(ax, (12.2, -0.1), "weights $\\alpha_{t,i}$", "value"),
             _node(ax, (12.2, -1.8), "weighted sum\n$\\sum_i \\alpha_{t,i} h_i$"),
             _node(ax, (9.6, -1.8), "context $c_t$", "value", role=VALUE)]
    w_s, w_h, plus = chain[:3]
    for a, b in [(s, w_s), (h, w_h), (w_s, plus), (w_h, plus), *zip(chain[2:], chain[3:])]:
        _arrow(ax, a, b)
    _arrow(ax, h, (0, -2.75), dashed=True, head=False)  # the values: down, along the bottom, up into the sum
    _arrow(ax, (0, -2.75), (12.2, -2.75), dashed=True, head=False)
    _arrow(ax, (12.2, -2.75), chain[8], dashed=True)
    ax.text(6.1, -2.8, "the encoder states $h_0, \\ldots, h_{n-1}$ are also the values", fontsize=9, color="0.35",
            ha="center", va="top")
    ax.set_title("Additive attention: $e_{t,i} = v^\\top \\tanh(W_s\\, s_t + W_h\\, h_i)$, "
                 "$\\alpha_{t,i} = \\mathrm{softmax}_i\\, e_{t,i}$, $c_t = \\sum_i \\alpha_{t,i} h_i$")
    fig.tight_layout()
    return fig
