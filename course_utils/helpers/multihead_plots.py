"""The pictures of lesson 03 (multi-head attention): the module's data flow with every tensor's
shape, the split of the features into heads, and weight maps that show NaN cells."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

from .palette import DATA, KEY, PARAMETER, QUERY, VALUE
from .plotting import plot_attention

# The course's palette: tensors white (queries, keys and values in their tints), learned layers grey,
# reshapes and the attention itself light with a dashed edge.
_TENSOR, _LAYER, _STEP = DATA.light, PARAMETER.light, "#F6F6F6"
_ROLE_TINT = {"q": QUERY.light, "k": KEY.light, "v": VALUE.light}


def _box(ax: Axes, x: float, y: float, text: str, colour: str, width: float = 2.3) -> None:
    ax.add_patch(FancyBboxPatch((x - width / 2, y - 0.32), width, 0.64, boxstyle="round,pad=0.04",
                                facecolor=colour, edgecolor="0.3", linestyle="--" if colour == _STEP else "-"))
    ax.text(x, y, text, ha="center", va="center", fontsize=9)


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color="0.3", lw=1.2))


def plot_multihead_flow(batch: int, length: int, d_model: int, num_heads: int) -> Figure:
    """A diagram of ``MultiHeadAttention(d_model, num_heads)`` on ``x (B, T, d_model)``: every
    tensor with its shape for these sizes (white; q, k, v in the palette's query, key and value
    tints), the learned layers (grey), the reshapes and the attention (dashed)."""
    for name, value in {"batch": batch, "length": length, "d_model": d_model, "num_heads": num_heads}.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
    B, T, h, d_k = batch, length, num_heads, d_model // num_heads
    fig, ax = plt.subplots(figsize=(13, 4.8))
    ax.set(xlim=(-0.2, 16.5), ylim=(-0.1, 6.1))
    ax.axis("off")
    _box(ax, 1, 3, f"x\n({B}, {T}, {d_model})", _TENSOR, 1.8)
    for y, name in ((5.4, "q"), (3, "k"), (0.6, "v")):
        _box(ax, 3.6, y, f"W_{name}: Linear({d_model}, {d_model})", _LAYER, 2.6)
        _box(ax, 6.3, y, f"{name} ({B}, {T}, {d_model})", _ROLE_TINT[name], 2.0)
        _box(ax, 8.9, y, f"{name.upper()} = split_heads({name})\n({B}, {h}, {T}, {d_k})", _STEP, 2.6)
        _arrow(ax, (1.9, 3), (2.3, y))
        _arrow(ax, (4.9, y), (5.3, y))
        _arrow(ax, (7.3, y), (7.6, y))
        _arrow(ax, (10.2, y), (10.95, 3))
    _box(ax, 12.2, 3, f"softmax(QKᵀ / √{d_k}) V\nfor each head", _STEP, 2.5)
    _box(ax, 12.2, 5.4, f"weights\n({B}, {h}, {T}, {T})", _TENSOR, 2.0)
    _arrow(ax, (12.2, 3.35), (12.2, 5.05))
    _box(ax, 12.2, 0.6, f"merge_heads\n({B}, {T}, {h}·{d_k} = {d_model})", _STEP, 2.5)
    _arrow(ax, (12.2, 2.65), (12.2, 0.95))
    _box(ax, 15.1, 0.6, f"W_o: Linear({d_model}, {d_model})", _LAYER, 2.5)
    _arrow(ax, (13.45, 0.6), (13.85, 0.6))
    _box(ax, 15.1, 3, f"output\n({B}, {T}, {d_model})", _TENSOR, 1.9)
    _arrow(ax, (15.1, 0.95), (15.1, 2.65))
    ax.set_title(f"MultiHeadAttention(d_model={d_model}, num_heads={h}): d_k = {d_model} / {h} = {d_k}; "
                 "white: tensors (q, k, v in the query, key, value colours), grey: learned layers, "
                 "dashed: reshapes and attention", fontsize=10)
    return fig


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
