"""Figures of the explorations (notebooks 10-14), and the loader of their stored long runs.

The long experiments are run by maintainers (``python -m course_utils.tooling.experiments``)
and stored in ``data/results/<name>.json``; ``load_result(name)`` reads one. Every plotting
function draws on the given ``ax`` (or a new figure) and returns the figure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from course_utils.models.data_files import data_path


def load_result(name: str) -> dict:
    """The stored result ``data/results/<name>.json`` of a maintainer experiment, as a dict."""
    return json.loads(data_path(f"results/{name}.json").read_text(encoding="utf-8"))


def _axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
        return fig, ax
    return ax.figure, ax


def plot_heads_long(result: Mapping, key: str = "count_beside", budget: int = 200, ax=None):
    """Accuracy ``key`` against training steps (log scale) for every run of ``heads_long``: one line per
    seed, one colour per head count; a dotted vertical line at the notebooks' ``budget``."""
    fig, ax = _axes(ax, (7.5, 4))
    colours = {1: "C3", 2: "C1", 4: "C0", 8: "C2", 16: "C4"}
    seen = set()
    for run in result["curves"].values():
        h = run["heads"]
        ax.plot(run["step"], run[key], "-", color=colours.get(h, "k"), lw=1.3, alpha=0.85,
                label=f"{h} head{'s' if h > 1 else ''}" if h not in seen else None)
        seen.add(h)
    ax.axvline(budget, color="grey", ls=":", lw=1)
    ax.text(budget * 1.05, 0.02, f"notebook budget\n({budget} steps)", color="grey", fontsize=8, va="bottom",
            transform=ax.get_xaxis_transform())
    ax.set(xscale="log", ylim=(0, 1.02), xlabel="training steps (batches of 64, log scale)",
           ylabel="count accuracy, marker beside", title="one line per seed")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def plot_marker_weight(markers_by_seed: Mapping[int, Sequence[float]], ax=None):
    """Total weight a one-head model puts on markers against the number of markers, one line per seed."""
    fig, ax = _axes(ax, (4.8, 3.4))
    for seed, weights in markers_by_seed.items():
        ax.plot(range(len(weights)), weights, "o-", label=f"seed {seed}")
    ax.set_xticks(range(len(next(iter(markers_by_seed.values())))))
    ax.set(xlabel="markers # in the sequence", ylabel="total weight on markers",
           title="one head: its counting signal", ylim=(0, None))
    ax.legend(fontsize=8)
    return fig


def slopes_per_doubling(lengths: Sequence[float], times: Sequence[float]) -> list[float]:
    """Local log-log slopes ``log(t[i+1]/t[i]) / log(T[i+1]/T[i])`` (one per step of the lengths)."""
    return [math.log(t1 / t0) / math.log(T1 / T0) for T0, T1, t0, t1 in zip(lengths, lengths[1:], times, times[1:])]


def plot_slopes_per_doubling(lengths: Sequence[int], times_by_name: Mapping[str, Sequence[float]], ax=None):
    """Slope per doubling of T for each implementation, drawn at the upper length of each step."""
    fig, ax = _axes(ax, (6.5, 3.8))
    for name, times in times_by_name.items():
        ax.plot(lengths[1:], slopes_per_doubling(lengths, times), "o-", label=name)
    ax.axhline(2, color="grey", ls="--", lw=1, label="T^2 law: slope 2")
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths[1:], [f"{a}->{b}" for a, b in zip(lengths, lengths[1:])], rotation=45, fontsize=8)
    ax.minorticks_off()
    ax.set(xlabel="doubling of T", ylabel="log2(time ratio)", title="slope per doubling of T")
    ax.legend(fontsize=8)
    return fig


def _simplex_xy(p: torch.Tensor) -> torch.Tensor:
    """Points of the plane p1 + p2 + p3 = 1, (N, 3), to 2-D coordinates of the drawn triangle, (N, 2)."""
    corners = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]], dtype=p.dtype)
    return p @ corners


def plot_simplex_projection(scores: torch.Tensor, sparsemax, ax=None):
    """Sparsemax as the closest point of the simplex, for rows of 3 scores ``(N, 3)``.

    Each score vector is first shifted onto the plane of the simplex (adding a constant
    to every score changes neither softmax nor sparsemax); an arrow joins it to its
    sparsemax, and a cross marks its softmax. Points outside the triangle land on an
    edge (one key dropped) or a corner (two dropped).
    """
    fig, ax = _axes(ax, (5.2, 4.8))
    z = scores.double()
    on_plane = z - (z.sum(-1, keepdim=True) - 1) / 3
    sp, soft = sparsemax(z), torch.softmax(z, -1)
    triangle = _simplex_xy(torch.eye(3, dtype=torch.float64))
    ax.fill(triangle[:, 0], triangle[:, 1], color="0.93", zorder=0)
    ax.plot(*torch.cat([triangle, triangle[:1]]).T, color="k", lw=1)
    for xy, name in zip(triangle, ("key 1 only", "key 2 only", "key 3 only")):
        ax.annotate(name, xy.tolist(), textcoords="offset points", xytext=(0, -12 if xy[1] < 0.5 else 6),
                    ha="center", fontsize=8)
    a, b, c = _simplex_xy(on_plane), _simplex_xy(sp), _simplex_xy(soft)
    for (x0, y0), (x1, y1) in zip(a.tolist(), b.tolist()):
        ax.annotate("", (x1, y1), (x0, y0), arrowprops={"arrowstyle": "->", "color": "C0", "lw": 1})
    ax.scatter(a[:, 0], a[:, 1], s=14, color="C0", label="scores (shifted onto the plane)")
    ax.scatter(b[:, 0], b[:, 1], s=30, color="C3", zorder=3, label="sparsemax: closest point")
    ax.scatter(c[:, 0], c[:, 1], s=22, marker="x", color="C2", label="softmax (always inside)")
    ax.set_aspect("equal")
    ax.axis("off")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 1.12))
    return fig


def plot_longer_training(result: Mapping, names: Sequence[str] = ("mirror weight", "weight at +1", "argmax on mirror"),
                         axes=None):
    """Measures of every ``longer_training`` run against the epoch: one panel per measure, one line per run
    (colour: schedule; each seed its own line)."""
    if axes is None:
        fig, axes = plt.subplots(1, len(names), figsize=(4.3 * len(names), 3.6), constrained_layout=True)
    fig = np.atleast_1d(axes)[0].figure
    schedules = sorted({run["schedule"] for run in result["runs"].values()})
    for ax, name in zip(np.atleast_1d(axes), names):
        for run in result["runs"].values():
            k = schedules.index(run["schedule"])
            ax.plot(run["epoch"], run[name], "o-" if run["seed"] == 0 else "-", ms=3, color=f"C{k}", alpha=0.85,
                    label=f"{run['schedule']}" if run["seed"] == 0 else None)
        ax.set(xlabel="epoch", title=name, ylim=(0, 1))
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    return fig


def plot_scaling_sweep(result: Mapping, ax=None):
    """Steps to 95% held-out accuracy for each variant and learning rate; one dot per seed, hollow when
    95% was not reached within the budget (drawn at the budget)."""
    fig, ax = _axes(ax, (7.5, 3.8))
    runs, budget = result["runs"], result["settings"]["steps"]
    variants = list(dict.fromkeys(r["variant"] for r in runs))
    lrs = sorted({r["lr"] for r in runs})
    for k, variant in enumerate(variants):
        for j, lr in enumerate(lrs):
            hits = [r["steps_to_95"] for r in runs if r["variant"] == variant and r["lr"] == lr]
            x = j + 0.25 * (k - (len(variants) - 1) / 2)
            for i, hit in enumerate(hits):
                reached = hit is not None
                ax.scatter(x + 0.04 * (i - 1), hit if reached else budget, color=f"C{k}", s=28,
                           facecolors=f"C{k}" if reached else "none",
                           label=variant if (j == 0 and i == 0) else None)
    ax.axhline(budget, color="grey", ls=":", lw=1)
    ax.set_xticks(range(len(lrs)), [f"lr {lr:g}" for lr in lrs])
    ax.set(ylabel="steps to 95% held-out accuracy", title="hollow: not reached within the budget", ylim=(0, budget * 1.08))
    ax.legend(fontsize=8, loc="upper right")
    return fig


def plot_train_and_heldout(steps: Sequence[int], train: Sequence[float], heldout: Sequence[float], baseline: float,
                           ax=None, label: str = ""):
    """Training and held-out loss against the step, with the no-context baseline."""
    fig, ax = _axes(ax, (7, 3.4))
    ax.plot(steps, train, "-", color="C0", label=f"training text {label}".strip())
    ax.plot(steps, heldout, "-", color="C3", label=f"held-out text {label}".strip())
    ax.axhline(baseline, color="k", ls="--", lw=1, label="no-context baseline")
    ax.set(xlabel="training step", ylabel="loss (nats per character)", ylim=(0, None))
    ax.legend(fontsize=8)
    return fig
