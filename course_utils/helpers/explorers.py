"""Interactive explorers: drag a slider or click a button instead of re-running a cell.

Each explorer comes in two parts:

- a drawing function that takes plain data (weights, labels, the selected value) and
  returns a matplotlib Figure. A notebook calls it once with a fixed selection, so that
  the page shows a picture even without a kernel (on GitHub, in a static render);
- a widget function that wires ipywidgets controls to the drawing function and
  *returns* an ``Explorer`` widget; put it last in a cell to show it. Its output changes
  as the student drags, so that cell is tagged ``nbval-ignore-output``.

=========================  ==================================  =========================
explorer                   drawing function                    widget
=========================  ==================================  =========================
softmax and ``d_k``        ``draw_softmax_saturation``          ``softmax_explorer``
one query of a sentence    ``draw_query_weights``               ``sentence_explorer``
heads of a layer           ``draw_head``                        ``head_explorer``
seq2seq decoder steps      ``draw_decoder_step``                ``seq2seq_explorer``
=========================  ==================================  =========================

In a notebook (two cells, the second tagged ``nbval-ignore-output``)::

    draw_query_weights(weights, tokens, query_index=2)
    plt.show()

    sentence_explorer(weights, tokens, query_index=2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import display
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor

from ..core.metrics import attention_entropy
from ..core.validation import require_positive
from .readable_widgets import ReadableVBox
from .plotting import plot_attention, plot_attention_grid

DK_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
HIGHLIGHT = "#d62728"  # red: the selected row / the largest weight
BAR = "#4c72b0"


# --- Checks shared by the drawing and the widget functions --------------------------


def _as_weights(weights, ndim: int, shape_name: str) -> Tensor:
    """``weights`` (tensor or array) as a float CPU tensor with ``ndim`` dimensions."""
    if isinstance(weights, Tensor):
        w = weights.detach().float().cpu()
    else:
        w = torch.as_tensor(np.asarray(weights, dtype=float), dtype=torch.float32)
    if w.dim() != ndim or w.numel() == 0:
        hint = " (for a batch, pass one example: weights[0])" if w.dim() == ndim + 1 else ""
        raise ValueError(f"weights must have shape {shape_name}, not empty, got shape {tuple(w.shape)}{hint}")
    return w


def _check_labels(labels: Sequence[str], size: int, what: str, shape: tuple[int, ...]) -> list[str]:
    if labels is None or len(labels) != size:
        got = "None" if labels is None else f"{len(labels)} labels"
        raise ValueError(f"{what} needs {size} labels for weights of shape {shape}, got {got}")
    return [str(label) for label in labels]


def _check_index(name: str, value: int, size: int, shape: tuple[int, ...]) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 0 <= value < size:
        raise ValueError(f"{name} must be an integer in 0..{size - 1} for weights of shape {shape}, got {value!r}")
    return int(value)


def _highlight_row(ax: Axes, row: int, width: int) -> None:
    """Outline row ``row`` of a seaborn heatmap drawn on ``ax``."""
    ax.add_patch(Rectangle((0, row), width, 1, fill=False, edgecolor=HIGHLIGHT, lw=3, clip_on=False))


def _bars(ax: Axes, row: Tensor, labels: list[str]) -> None:
    """Bars of one attention row, the largest in red, with the uniform level dashed."""
    colours = [BAR] * len(row)
    colours[int(row.argmax())] = HIGHLIGHT
    ax.bar(range(len(row)), row.tolist(), color=colours)
    ax.axhline(1 / len(row), ls="--", lw=1, color="grey", label=f"uniform 1/{len(row)}")
    ax.set_xticks(range(len(row)), labels, rotation=45 if max(map(len, labels)) > 3 else 0)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("weight")
    ax.legend(loc="upper right", fontsize=8)


# --- 1. Softmax saturation as d_k grows --------------------------------------------


def random_scores(d_k: int, num_queries: int = 256, num_keys: int = 8, seed: int = 0) -> Tensor:
    """Unscaled scores ``q . k`` of random vectors with N(0, 1) entries, ``(num_queries, num_keys)``.

    Each query gets its own ``num_keys`` keys, so the rows are independent samples; every
    score has mean 0 and variance ``d_k``. A fixed ``seed`` gives the same scores every time.
    """
    require_positive(d_k=d_k, num_queries=num_queries, num_keys=num_keys)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_queries, 1, d_k, generator=g)
    k = torch.randn(num_queries, num_keys, d_k, generator=g)
    return (q * k).sum(dim=-1)


def softmax_weights(d_k: int, scaled: bool, num_queries: int = 256, num_keys: int = 8, seed: int = 0) -> Tensor:
    """``softmax(scores / sqrt(d_k))`` if ``scaled`` else ``softmax(scores)``, ``(num_queries, num_keys)``."""
    scores = random_scores(d_k, num_queries, num_keys, seed)
    return torch.softmax(scores / math.sqrt(d_k) if scaled else scores, dim=-1)


@lru_cache(maxsize=64)
def saturation_curve(
    d_ks: tuple[int, ...], scaled: bool, num_queries: int = 256, num_keys: int = 8, seed: int = 0
) -> tuple[float, ...]:
    """For each ``d_k`` in ``d_ks``: the largest weight of a row, averaged over the queries.

    ``1 / num_keys`` means uniform attention, 1 means one-hot (saturated).
    """
    curve = [softmax_weights(d, scaled, num_queries, num_keys, seed).max(dim=-1).values.mean() for d in d_ks]
    return tuple(value.item() for value in curve)


def draw_softmax_saturation(
    d_k: int,
    scaled: bool = False,
    *,
    num_queries: int = 256,
    num_keys: int = 8,
    seed: int = 0,
    d_ks: Sequence[int] = DK_CHOICES,
) -> Figure:
    """Left: one query's weights over ``num_keys`` random keys at this ``d_k``.
    Right: the mean largest weight against ``d_k``, with and without the ``sqrt(d_k)`` scaling.

    Without scaling the scores have standard deviation ``sqrt(d_k)`` and the weights turn
    one-hot as ``d_k`` grows; dividing by ``sqrt(d_k)`` (a temperature) keeps them soft.
    """
    require_positive(d_k=d_k, **{f"d_ks[{i}]": d for i, d in enumerate(d_ks)})
    d_ks = tuple(sorted(set(d_ks) | {d_k}))
    scores = random_scores(d_k, num_queries, num_keys, seed)  # (num_queries, num_keys)
    scores = scores / math.sqrt(d_k) if scaled else scores
    weights = torch.softmax(scores, dim=-1)
    fig, (ax_bar, ax_curve) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    _bars(ax_bar, weights[0], [f"k{j}" for j in range(num_keys)])
    how = "q.k / sqrt(d_k)" if scaled else "q.k"
    ax_bar.set_title(f"d_k = {d_k}, scores {how}: std {scores.std():.1f}\none query: largest weight {weights[0].max():.2f}")
    ax_bar.set_xlabel("key")
    for flag, label in ((False, "no scaling: q.k"), (True, "scaled: q.k / sqrt(d_k)")):
        ax_curve.plot(d_ks, saturation_curve(d_ks, flag, num_queries, num_keys, seed), marker="o", label=label)
    mean_max = weights.max(dim=-1).values.mean().item()
    ax_curve.plot([d_k], [mean_max], ls="none", marker="*", ms=18, color=HIGHLIGHT, label=f"d_k = {d_k}: {mean_max:.2f}")
    ax_curve.axhline(1 / num_keys, ls="--", lw=1, color="grey")
    ax_curve.set_xscale("log", base=2)
    ax_curve.set_xticks(d_ks, [str(d) for d in d_ks], fontsize=8)
    ax_curve.minorticks_off()
    ax_curve.set_ylim(0, 1.05)
    ax_curve.set_xlabel("d_k")
    ax_curve.set_ylabel("largest weight (mean)")
    ax_curve.set_title(f"mean over {num_queries} queries (1 = one-hot, {1 / num_keys:.3f} = uniform)")
    ax_curve.legend(loc="upper left", fontsize=8)
    return fig


# --- 2. One query of a sentence -----------------------------------------------------


def _check_query_weights(weights, query_labels, key_labels) -> tuple[Tensor, list[str], list[str]]:
    w = _as_weights(weights, 2, "(n, m)")
    if key_labels is None:
        key_labels = query_labels
    q = _check_labels(query_labels, w.shape[0], "query_labels (one per row)", tuple(w.shape))
    k = _check_labels(key_labels, w.shape[1], "key_labels (one per column)", tuple(w.shape))
    return w, q, k


def draw_query_weights(
    weights, query_labels: Sequence[str], key_labels: Sequence[str] | None = None, query_index: int = 0
) -> Figure:
    """Left: the whole matrix ``(n, m)`` with row ``query_index`` outlined. Right: that row as bars.

    Args:
        weights: ``(n, m)`` attention weights, rows = queries, columns = keys.
        query_labels: ``n`` labels; key_labels: ``m`` labels (default: the query labels,
            for self-attention over one sentence).
        query_index: the row to show.
    """
    w, q_labels, k_labels = _check_query_weights(weights, query_labels, key_labels)
    i = _check_index("query_index", query_index, w.shape[0], tuple(w.shape))
    n, m = w.shape
    fig, (ax_map, ax_bar) = plt.subplots(
        1, 2, figsize=(max(8.0, 0.9 * m + 5), max(3.2, 0.45 * n + 1.2)), width_ratios=[1.2, 1], layout="constrained"
    )
    plot_attention(w, k_labels, q_labels, ax=ax_map, vmax=1.0, title="all queries")
    _highlight_row(ax_map, i, m)
    _bars(ax_bar, w[i], k_labels)
    entropy = attention_entropy(w[i]).item()
    ax_bar.set_title(f"query {i} '{q_labels[i]}'\nentropy {entropy:.2f} nats (uniform: log {m} = {math.log(m):.2f})")
    ax_bar.set_xlabel("key")
    return fig


# --- 3. The heads of a multi-head layer ---------------------------------------------


def _check_head_weights(weights, labels, query_labels) -> tuple[Tensor, list[str], list[str]]:
    w = _as_weights(weights, 3, "(h, n, m)")
    shape = tuple(w.shape)
    k = _check_labels(labels, w.shape[2], "labels (one per key)", shape)
    if query_labels is None and w.shape[1] != w.shape[2]:
        raise ValueError(
            f"weights of shape {shape} have n != m (cross-attention): pass query_labels, {w.shape[1]} of them"
        )
    q = k if query_labels is None else query_labels
    return w, k, _check_labels(q, w.shape[1], "query_labels (one per query)", shape)


def draw_head(
    weights, labels: Sequence[str], head: int | None = None, *, query_labels: Sequence[str] | None = None
) -> Figure:
    """Heatmap and entropy of one head (``head=i``) or all heads (``head=None``).

    Args:
        weights: ``(h, n, m)``, one example's weights from a multi-head layer.
        labels: ``m`` key labels; query_labels: ``n`` labels (default: ``labels``, self-attention).
        head: a head index, or None for a grid of all heads titled with their mean entropy.

    Entropy is in nats: 0 for one-hot rows, ``log m`` for uniform rows.
    """
    w, k_labels, q_labels = _check_head_weights(weights, labels, query_labels)
    h, n, m = w.shape
    entropy = attention_entropy(w)  # (h, n)
    if head is None:
        titles = [f"head {c}: H = {entropy[c].mean():.2f}" for c in range(h)]
        size = max(2.4, 0.3 * max(n, m))
        fig = plot_attention_grid(w, k_labels, q_labels, titles=titles, ncols=min(h, 4), vmax=1.0, cell_size=size)
        if m > 6:
            for ax in fig.axes[:h]:
                ax.tick_params(axis="x", rotation=90)
        fig.suptitle(f"mean entropy per head, nats (one-hot 0, uniform {math.log(m):.2f})")
        return fig
    c = _check_index("head", head, h, tuple(w.shape))
    fig, (ax_map, ax_h) = plt.subplots(
        1, 2, figsize=(max(8.0, 0.6 * m + 6), max(3.2, 0.45 * n + 1.2)), width_ratios=[2, 1.2], layout="constrained"
    )
    plot_attention(w[c], k_labels, q_labels, ax=ax_map, vmax=1.0, title=f"head {c}")
    ax_h.barh(np.arange(n) + 0.5, entropy[c].tolist(), height=0.7, color=BAR)
    ax_h.axvline(math.log(m), ls="--", lw=1, color="grey")
    ax_h.set_ylim(n, 0)  # row i at the same height as the heatmap's row i
    ax_h.set_yticks(np.arange(n) + 0.5, q_labels)
    ax_h.set_xlim(0, 1.05 * math.log(m) if m > 1 else 1.0)
    ax_h.set_xlabel("entropy (nats)")
    ax_h.set_title(f"entropy per query, mean {entropy[c].mean():.2f}\n(dashed: uniform, log {m} = {math.log(m):.2f})")
    return fig


# --- 4. Stepping through a seq2seq decoder ------------------------------------------


def _check_decoder_weights(weights, source_tokens, output_tokens) -> tuple[Tensor, list[str], list[str]]:
    w = _as_weights(weights, 2, "(T_out, T_in)")
    shape = tuple(w.shape)
    src = _check_labels(source_tokens, w.shape[1], "source_tokens (one per column)", shape)
    what = "output_tokens (one per decoder step; slice weights[:len(tokens)])"
    out = _check_labels(output_tokens, w.shape[0], what, shape)
    return w, src, out


def draw_decoder_step(weights, source_tokens: Sequence[str], output_tokens: Sequence[str], step: int) -> Figure:
    """Where the decoder looks while it writes output token ``step``.

    Left: the attention ``(T_out, T_in)`` of steps ``0..step`` (later steps are not written
    yet and stay blank), row ``step`` outlined. Right: that row over the source tokens.
    """
    w, src, out = _check_decoder_weights(weights, source_tokens, output_tokens)
    t = _check_index("step", step, w.shape[0], tuple(w.shape))
    T_out, T_in = w.shape
    so_far = w.clone()
    so_far[t + 1 :] = float("nan")  # seaborn leaves NaN cells blank
    fig, (ax_map, ax_bar) = plt.subplots(
        1, 2, figsize=(max(8.0, 0.9 * T_in + 5), max(3.2, 0.45 * T_out + 1.2)), width_ratios=[1.2, 1], layout="constrained"
    )
    steps = [f"{s}: {token}" for s, token in enumerate(out)]
    plot_attention(so_far, src, steps, ax=ax_map, vmax=1.0, title=f"output so far: {' '.join(out[: t + 1])}")
    ax_map.set_xlabel("source token")
    ax_map.set_ylabel("decoder step: output")
    _highlight_row(ax_map, t, T_in)
    _bars(ax_bar, w[t], src)
    j = int(w[t].argmax())
    ax_bar.set_title(f"step {t} writes '{out[t]}'\nmost weight on source {j} '{src[j]}' ({w[t, j]:.2f})")
    ax_bar.set_xlabel("source token")
    return fig


# --- The widgets ---------------------------------------------------------------------


class Explorer(ReadableVBox):
    """Controls above an Output widget that shows ``draw(**fixed, **selection)``.

    Every change of a control redraws. ``drawn`` lists the selections drawn so far
    (the last one is on screen) and ``figure`` is the last Figure drawn (already closed).
    """

    def __init__(self, draw: Callable[..., Figure], controls: dict[str, widgets.ValueWidget], **fixed) -> None:
        self.drawn: list[dict] = []
        self.figure: Figure | None = None
        self.controls = controls

        def render(**selection) -> None:
            fig = draw(**fixed, **selection)
            display(fig)
            plt.close(fig)  # shown once, in the Output; not again at the end of the cell
            self.figure = fig
            self.drawn.append(selection)

        self.output = widgets.interactive_output(render, controls)
        super().__init__([widgets.HBox(list(controls.values())), self.output])

    fallback = "Interactive explorer: run the notebook in Jupyter to use the controls (the drawing above shows one setting)."


def softmax_explorer(
    d_k: int = 64,
    scaled: bool = False,
    *,
    num_queries: int = 256,
    num_keys: int = 8,
    seed: int = 0,
    d_ks: Sequence[int] = DK_CHOICES,
) -> Explorer:
    """A ``d_k`` slider and a scaling toggle over ``draw_softmax_saturation``; ``d_k`` must be in ``d_ks``."""
    require_positive(num_queries=num_queries, num_keys=num_keys, **{f"d_ks[{i}]": d for i, d in enumerate(d_ks)})
    if d_k not in d_ks:
        raise ValueError(f"d_k={d_k!r} is not one of the slider's values d_ks={tuple(d_ks)}")
    controls = {
        "d_k": widgets.SelectionSlider(options=list(d_ks), value=d_k, description="d_k", continuous_update=False),
        "scaled": widgets.ToggleButtons(
            options=[("q.k", False), ("q.k / sqrt(d_k)", True)], value=bool(scaled), description="scores"
        ),
    }
    fixed = {"num_queries": num_queries, "num_keys": num_keys, "seed": seed, "d_ks": tuple(d_ks)}
    return Explorer(draw_softmax_saturation, controls, **fixed)


def sentence_explorer(
    weights, query_labels: Sequence[str], key_labels: Sequence[str] | None = None, query_index: int = 0
) -> Explorer:
    """One button per query word over ``draw_query_weights``; ``weights`` is ``(n, m)``."""
    w, q_labels, k_labels = _check_query_weights(weights, query_labels, key_labels)
    i = _check_index("query_index", query_index, w.shape[0], tuple(w.shape))
    words = widgets.ToggleButtons(options=[(word, n) for n, word in enumerate(q_labels)], value=i, description="query")
    words.style.button_width = "auto"
    return Explorer(draw_query_weights, {"query_index": words}, weights=w, query_labels=q_labels, key_labels=k_labels)


def head_explorer(
    weights, labels: Sequence[str], head: int | None = None, *, query_labels: Sequence[str] | None = None
) -> Explorer:
    """Buttons "all", "0", "1", ... over ``draw_head``; ``weights`` is ``(h, n, m)``.

    ``drawn`` records the button's value: ``"all"`` or a head index.
    """
    w, k_labels, q_labels = _check_head_weights(weights, labels, query_labels)
    if head is not None:
        _check_index("head", head, w.shape[0], tuple(w.shape))
    options = [("all", "all")] + [(str(c), c) for c in range(w.shape[0])]  # a None value means "nothing selected"
    heads = widgets.ToggleButtons(options=options, value="all" if head is None else head, description="head")
    heads.style.button_width = "3.5em"

    def draw(head: int | str, **data) -> Figure:
        return draw_head(head=None if head == "all" else head, **data)

    return Explorer(draw, {"head": heads}, weights=w, labels=k_labels, query_labels=q_labels)


def seq2seq_explorer(weights, source_tokens: Sequence[str], output_tokens: Sequence[str], step: int = 0) -> Explorer:
    """A decoder-step slider (with a play button) over ``draw_decoder_step``; ``weights`` is ``(T_out, T_in)``."""
    w, src, out = _check_decoder_weights(weights, source_tokens, output_tokens)
    t = _check_index("step", step, w.shape[0], tuple(w.shape))
    slider = widgets.IntSlider(value=t, min=0, max=w.shape[0] - 1, description="step", continuous_update=False)
    play = widgets.Play(value=t, min=0, max=w.shape[0] - 1, interval=900, description="play")
    widgets.jslink((play, "value"), (slider, "value"))
    box = Explorer(draw_decoder_step, {"step": slider}, weights=w, source_tokens=src, output_tokens=out)
    box.children[0].children = (play, slider)
    return box
