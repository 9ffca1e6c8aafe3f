"""Figures of the explorations (notebooks 10-14), and the loader of their stored long runs.

The long experiments are run by maintainers (``python -m course_utils.studies.experiments``)
and stored in ``data/results/<name>.json``; ``load_result(name)`` reads one. Every plotting
function draws on the given ``ax`` (or a new figure) and returns the figure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
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


def _runs(result: Mapping, field: str, needed: Sequence[str], series: Sequence[str]) -> list[Mapping]:
    """The runs of a stored result, ``result[field]`` (run name -> run), after checking that every run has
    the keys ``needed`` and that its lists ``series`` are non-empty and of one length."""
    if not isinstance(result, Mapping) or not isinstance(result.get(field), Mapping) or not result[field]:
        got = f"a dict with keys {sorted(result)}" if isinstance(result, Mapping) else type(result).__name__
        raise ValueError(f"expected a stored result with a non-empty {field!r} mapping (load_result(...)), got {got}")
    for name, run in result[field].items():
        missing = [key for key in needed if key not in run]
        if missing:
            raise ValueError(f"run {name!r} has no {missing}; its keys are {sorted(run)}")
        lengths = {key: len(run[key]) for key in series}
        if len(set(lengths.values())) != 1 or not min(lengths.values()):
            raise ValueError(f"run {name!r}: the series {lengths} must be non-empty and of one length")
    return list(result[field].values())


def plot_heads_long(result: Mapping, key: str = "count_beside", budget: int = 100, ax=None):
    """Accuracy ``key`` against training steps (log scale) for every run of ``heads_long``: one line per
    seed, one colour per head count; a dotted vertical line at the notebooks' ``budget``, and, where the
    result holds the learning-rate sweep at that budget (``lr_sweep_at_budget``), one cross per run of it.

    ``result``: ``load_result("heads_long")``; every run of ``result["curves"]`` needs ``heads``,
    ``step`` and ``key`` (lists of one length). Raises ValueError otherwise.
    """
    runs = _runs(result, "curves", ("heads", "step", key), ("step", key))
    fig, ax = _axes(ax, (7.5, 4))
    colours = {1: "C3", 2: "C1", 4: "C0", 8: "C2", 16: "C4"}
    seen = set()
    for run in runs:
        h = run["heads"]
        ax.plot(run["step"], run[key], "-", color=colours.get(h, "k"), lw=1.3, alpha=0.85, gid="run",
                label=f"{h} head{'s' if h > 1 else ''}" if h not in seen else None)
        seen.add(h)
    sweep = [row[key] for row in result.get("lr_sweep_at_budget", ()) if key in row]
    if sweep:
        lrs = sorted({row["lr"] for row in result["lr_sweep_at_budget"] if "lr" in row})
        ax.scatter([budget] * len(sweep), sweep, marker="x", color="C3", s=30, zorder=3, gid="sweep",
                   label=f"1 head at {budget} steps, lr " + ", ".join(f"{lr:g}" for lr in lrs))
    ax.axvline(budget, color="grey", ls=":", lw=1)
    ax.text(budget * 1.05, 0.02, f"notebook budget\n({budget} steps)", color="grey", fontsize=8, va="bottom",
            transform=ax.get_xaxis_transform())
    ylabel = {"count_beside": "count accuracy, marker beside", "count_not_beside": "count accuracy, no marker beside",
              "count": "count accuracy", "all": "all three answers right"}.get(key, key)
    ax.set(xscale="log", ylim=(0, 1.02), xlabel="training steps (batches of 64, log scale)",
           ylabel=ylabel, title="one line per seed")
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


def plot_longer_training(result: Mapping, names: Sequence[str] = ("mirror weight", "weight at +1",
                                                               "argmax on mirror", "argmax at +1"), ncols: int = 2):
    """Measures of every ``longer_training`` run against the epoch: one panel per measure (``ncols`` per row),
    one line per run: the colour says the seed, the line style the schedule (dashed: the shortest).

    ``result``: ``load_result("longer_training")``; every run of ``result["runs"]`` needs ``schedule``,
    ``seed``, ``epoch`` and the ``names`` (lists of one length). Raises ValueError otherwise.
    """
    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a non-empty list of measures, got {names!r}")
    runs = _runs(result, "runs", ("schedule", "seed", "epoch", *names), ("epoch", *names))
    rows = -(-len(names) // ncols)
    fig, axes = plt.subplots(rows, min(ncols, len(names)), figsize=(4.6 * min(ncols, len(names)), 3.2 * rows),
                             sharex=True, constrained_layout=True, squeeze=False)
    last_epoch = {run["schedule"]: run["epoch"][-1] for run in runs}
    schedules = sorted(last_epoch, key=last_epoch.get)  # the shortest first: dashed
    seeds = sorted({run["seed"] for run in runs})
    styles = ["--", "-", ":", "-."]
    for ax, name in zip(axes.flat, names):
        for run in runs:
            style = styles[schedules.index(run["schedule"]) % len(styles)]
            ax.plot(run["epoch"], run[name], style, color=f"C{seeds.index(run['seed'])}", lw=1.4, gid="run",
                    marker="o" if style == "--" else None, ms=3)
        if name in ("mirror weight", "argmax on mirror"):
            ax.axhline(1.0, color="grey", ls=":", lw=1)  # a perfect anti-diagonal
        ax.set(title=name, ylim=(0, 1.03))
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("epoch")
    handles = [Line2D([], [], color=f"C{k}", label=f"seed {s}") for k, s in enumerate(seeds)]
    handles += [Line2D([], [], color="k", ls=styles[k % len(styles)], label=s) for k, s in enumerate(schedules)]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8)
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
