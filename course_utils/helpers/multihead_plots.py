"""The pictures of lessons 03 and 03b (multi-head attention): the split of the features into heads,
and weight maps that show NaN cells. (The module's data flow is a drawing: ``heads_split_merge``.)"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .plotting import plot_attention


def plot_head_split(q: torch.Tensor, Q: torch.Tensor) -> Figure:
    """One sequence's projected queries ``q (T, d_model)`` with the head slices outlined, above the
    same numbers after ``split_heads``: ``Q (h, T, d_k)``, one panel per head, one shared colour scale."""
    if q.dim() != 2 or Q.dim() != 3 or Q.shape[1] != q.shape[0] or Q.shape[0] * Q.shape[2] != q.shape[1]:
        raise ValueError(f"need q (T, d_model) and Q (h, T, d_k) with h * d_k = d_model, got {tuple(q.shape)} "
                         f"and {tuple(Q.shape)}")
    q, Q = q.detach().float().cpu().numpy(), Q.detach().float().cpu().numpy()
    (T, _), (h, _, d_k) = q.shape, Q.shape
    vmax = float(abs(q).max()) or 1.0
    style = dict(cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    fig = plt.figure(figsize=(12, 5), constrained_layout=True)
    top, bottom = fig.subfigures(2, 1)
    ax = top.subplots()
    ax.imshow(q, **style)
    for i in range(h):
        ax.add_patch(Rectangle((i * d_k - 0.5, -0.5), d_k, T, fill=False, edgecolor=f"C{i % 10}", lw=3))
        ax.text(i * d_k + d_k / 2 - 0.5, -0.7, f"head {i}", ha="center", va="bottom", color=f"C{i % 10}", fontweight="bold")
    ax.set(xlabel="feature (0 .. d_model-1)", ylabel="token", yticks=range(T))
    ax.set_title(f"q[0] = W_q(x)[0]: shape (T, d_model) = {tuple(q.shape)}", pad=22)
    for i, a in enumerate(bottom.subplots(1, h)):
        a.imshow(Q[i], **style)
        a.set(xticks=[], yticks=range(T) if i == 0 else [], title=f"Q[0, {i}]")
        for spine in a.spines.values():
            spine.set(edgecolor=f"C{i % 10}", linewidth=3)
    bottom.suptitle(f"after split_heads: Q[0] has shape (h, T, d_k) = {tuple(Q.shape)}")
    return fig


def plot_weights_with_nan(ax: Axes, weights: torch.Tensor, title: str) -> Axes:
    """One weight matrix ``(n, m)`` on the 0-1 scale, each weight written in its cell; NaN cells red, labelled NaN."""
    w = weights.detach().cpu()
    if w.dim() != 2:
        raise ValueError(f"weights must have shape (n, m), got {tuple(w.shape)}")
    plot_attention(w, annot=True, vmin=0.0, vmax=1.0, ax=ax, title=title, cbar=False)
    ax.set_facecolor("#e06666")
    for i, j in w.isnan().nonzero().tolist():
        ax.text(j + 0.5, i + 0.5, "NaN", ha="center", va="center", fontsize=8, color="white")
    return ax
