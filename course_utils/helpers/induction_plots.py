"""The plots of lesson 07b (induction heads): the phase change, heads with the copy boundary marked,
the QK and OV circuits read off the weights, and where along the sequence the circuit works."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .palette import HIGHLIGHT, INK, MUTED, VALUE
from .plotting import colour_query_key, plot_attention

# Lines that are neither queries, keys nor values: the palette's neutrals and its highlight, told apart by
# their dashes and markers too (the query, key and value colours keep their meaning in every figure).
_STYLES = [(INK, "-", "o"), (HIGHLIGHT.strong, "--", "s"), (MUTED, ":", "^"), ("#8C8C8C", "-.", "D")]


def _smooth(values: Sequence[float], window: int = 10) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if len(v) < window:
        return v
    return np.convolve(v, np.ones(window) / window, mode="valid")


def plot_phase_change(histories: Mapping[str, Mapping], stored: Mapping[str, Sequence[Mapping]] | None = None,
                      chance_loss: float | None = None) -> Figure:
    """Two panels against the training step: the loss on the copied tokens (mean of 10 steps) and the
    held-out accuracy, for each training in ``histories`` (name -> ``train_induction``'s history).
    ``stored``: name -> runs ``{"steps": [...], "accuracy": [...]}`` of other seeds, drawn thin.
    ``chance_loss``: a dashed line at the loss of a uniform guess (ln V)."""
    if not isinstance(histories, Mapping) or not histories:
        raise TypeError("histories must be a non-empty dict: name -> the history train_induction returned")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True)
    for k, (name, history) in enumerate(histories.items()):
        colour, dash, _ = _STYLES[k % len(_STYLES)]
        for run in (stored or {}).get(name, []):
            right.plot(run["steps"], run["accuracy"], color=colour, ls=dash, lw=1, alpha=0.4)
        loss = _smooth(history["copied_loss"])
        left.plot(np.arange(len(loss)) + (len(history["copied_loss"]) - len(loss)) + 1, loss, color=colour, ls=dash,
                  label=name)
        right.plot(history["check_steps"], history["accuracy"], color=colour, ls=dash, lw=2.2, label=name)
    if chance_loss is not None:
        left.axhline(chance_loss, color=MUTED, ls="--", lw=1, label=f"uniform guess, ln V = {chance_loss:.2f}")
    left.set(xlabel="training step", ylabel="loss on the copied tokens (nats)", ylim=(0, None),
             title="loss on the tokens a copy can predict")
    right.set(xlabel="training step", ylabel="held-out accuracy", ylim=(0, 1),
              title="accuracy on the second copy (thin: other seeds)")
    left.legend(frameon=False)
    right.legend(frameon=False, loc="center right")
    return fig


def _matrices(weights) -> list[np.ndarray]:
    items = list(weights) if isinstance(weights, (list, tuple)) else list(np.asarray(_numpy(weights)))
    out = [np.asarray(_numpy(w), dtype=float) for w in items]
    if not out or any(w.ndim != 2 or w.shape[0] != w.shape[1] for w in out):
        raise ValueError("weights must be (heads, T, T) or a list of (T, T) matrices, got shapes "
                         f"{[getattr(w, 'shape', None) for w in out]}")
    return out


def _numpy(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else x


def plot_heads(weights, boundaries: int | Sequence[int], titles: Sequence[str], *, cell_size: float = 4.2) -> Figure:
    """Heatmaps of heads side by side (colour scale 0..1, rows queries, columns keys), each with dashed lines
    where the copy starts (query and key position ``boundary``). ``weights``: ``(heads, T, T)`` or a list of
    ``(T_k, T_k)`` matrices; ``boundaries``: one position for all, or one per matrix."""
    matrices = _matrices(weights)
    bounds = [boundaries] * len(matrices) if isinstance(boundaries, int) else list(boundaries)
    if len(titles) != len(matrices) or len(bounds) != len(matrices):
        raise ValueError(f"need one title and one boundary per matrix ({len(matrices)}), got {len(titles)} and {len(bounds)}")
    for w, b in zip(matrices, bounds):
        if isinstance(b, bool) or not isinstance(b, int) or not 0 < b < w.shape[0]:
            raise ValueError(f"a boundary must be a position from 1 to {w.shape[0] - 1}, got {b!r}")
    fig, axes = plt.subplots(1, len(matrices), figsize=(cell_size * len(matrices) + 1.0, cell_size), squeeze=False)
    for ax, matrix, title, boundary in zip(axes[0], matrices, titles, bounds):
        labels = [str(t) if t % 4 == 0 else "" for t in range(matrix.shape[0])]
        plot_attention(matrix, labels, labels, annot=False, ax=ax, vmin=0.0, vmax=1.0, cbar=False, title=title)
        for line in (ax.axhline, ax.axvline):
            line(boundary, color="white", lw=1.2, ls="--")
        ax.tick_params(labelsize=8)
        ax.set(xlabel="key position", ylabel="query position")
    fig.set_layout_engine("constrained")
    fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.8, label="weight")
    return fig


def plot_along_the_sequence(previous: Sequence[float], by_source: Mapping[str, Sequence[float]], last_trained: int) -> Figure:
    """Where the circuit works. Left: layer 1's weight on the previous token at each query position
    1, 2, ... (``previous``). Right: for each test in ``by_source`` (name -> ``accuracy_by_source``, NaN
    where no token), the accuracy against the position the copied token comes from, i.e. the key an
    induction head must read. A dotted line at ``last_trained``, the last such position seen in training."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4), constrained_layout=True)
    left.plot(range(1, len(previous) + 1), list(previous), color=INK, marker=".")
    left.set(xlabel="query position i", ylabel="weight on key i - 1", ylim=(0, 1.05),
             title="layer 1: the previous-token head")
    for k, (name, acc) in enumerate(by_source.items()):
        colour, dash, marker = _STYLES[k % len(_STYLES)]
        acc = np.asarray(_numpy(acc), dtype=float)
        right.plot(np.arange(len(acc)), acc, color=colour, ls=dash, marker=marker, ms=4, label=name)  # NaN: a gap
    right.set(xlabel="position of the key the induction head must read", ylabel="accuracy", ylim=(0, 1.05),
              title="2 layers: accuracy on the copied tokens")
    for ax in (left, right):
        ax.axvline(last_trained, color=MUTED, ls=":", lw=1.2)
    right.legend(frameon=False)
    return fig


def plot_circuits(panels: Sequence[Mapping]) -> Figure:
    """Circuits read off the weights, side by side: each panel a dict with ``matrix`` ``(n, m)`` (a tensor or
    array), ``title``, ``rows`` and ``columns`` (the axis labels) and ``kind``: ``"qk"`` (rows are what the
    query is made from, columns what the key is made from: the query and key colours) or ``"ov"`` (rows are
    what the head reads, in the value colour; columns the predicted token). Each panel has its own colour
    scale, its largest entry in each row marked with a white dot."""
    if not isinstance(panels, Sequence) or not panels:
        raise TypeError("panels must be a non-empty list of dicts with matrix, title, rows, columns, kind")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 4.2), squeeze=False, constrained_layout=True)
    for ax, panel in zip(axes[0], panels):
        matrix = np.asarray(_numpy(panel["matrix"]), dtype=float)
        if matrix.ndim != 2 or panel.get("kind") not in ("qk", "ov"):
            raise ValueError(f"a panel needs a 2-d matrix and kind 'qk' or 'ov', got shape {matrix.shape}, "
                             f"kind {panel.get('kind')!r}")
        finite = matrix[np.isfinite(matrix)]
        mesh = ax.pcolormesh(np.ma.masked_invalid(matrix), cmap="viridis", vmin=finite.min(), vmax=finite.max())
        best = np.nanargmax(np.where(np.isfinite(matrix), matrix, -np.inf), axis=1)
        ax.scatter(best + 0.5, np.arange(len(best)) + 0.5, s=2, color="white", linewidths=0)
        ax.set(xlim=(0, matrix.shape[1]), ylim=(matrix.shape[0], 0), title=panel["title"],
               xlabel=panel["columns"], ylabel=panel["rows"])
        ax.tick_params(labelsize=8)
        if panel["kind"] == "qk":
            colour_query_key(ax)
        else:
            ax.yaxis.label.set_color(VALUE.strong)
            ax.tick_params(axis="y", labelcolor=VALUE.strong)
        fig.colorbar(mesh, ax=ax, shrink=0.8).outline.set_linewidth(0)
    return fig
