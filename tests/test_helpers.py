"""Metrics, plotting, seeding, device and data helpers."""

import math
import random

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course_utils import (  # noqa: E402
    attention_entropy,
    data_path,
    get_device,
    mean_attention_distance,
    plot_attention,
    plot_attention_grid,
    seed_everything,
)


def test_entropy_extremes():
    one_hot = torch.tensor([[0.0, 1.0, 0.0, 0.0]])
    uniform = torch.full((1, 4), 0.25)
    assert attention_entropy(one_hot).item() == 0.0
    assert attention_entropy(uniform).item() == pytest.approx(math.log(4))
    assert attention_entropy(torch.tensor([0.5, 0.5, 0.0])).item() == pytest.approx(math.log(2))
    assert attention_entropy(torch.zeros(3)).item() == 0.0  # fully masked row, no NaN


def test_mean_attention_distance():
    eye = torch.eye(5)
    assert mean_attention_distance(eye).item() == 0.0
    anti = torch.eye(4).flip(-1)  # distances 3, 1, 1, 3
    assert mean_attention_distance(anti).item() == pytest.approx(2.0)
    batch = torch.stack([eye[:4, :4], anti])
    torch.testing.assert_close(mean_attention_distance(batch), torch.tensor([0.0, 2.0]))


def test_seed_everything_repeats_all_generators():
    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    seed_everything(7)
    first = draw()
    seed_everything(7)
    assert draw() == first
    seed_everything(8, threads=None)
    assert draw() != first


def test_seed_everything_pins_threads():
    before = torch.get_num_threads()
    try:
        seed_everything(0, threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_get_device_is_cpu_without_accelerators():
    device = get_device()
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert device.type == expected


def test_plot_attention_labels_and_annotations():
    w = torch.softmax(torch.randn(3, 4), dim=-1)
    ax = plot_attention(w, ["a", "b", "c", "d"], ["x", "y", "z"], title="t")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c", "d"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]
    assert len(ax.texts) == 12 and ax.texts[0].get_text() == f"{w[0, 0]:.2f}"
    plt.close("all")


def test_plot_attention_masked_cells_are_blank_and_text_stays_readable():
    w = torch.tensor([[1.0, 0.0], [float("nan"), 0.5]])
    ax = plot_attention(w, ["a", "b"], ["x", "y"])
    assert ax.collections[0].get_clim() == (0.0, 1.0)  # NaN ignored by the colour scale
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.00", "0.50"]  # no "nan" written
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours["1.00"] == "0.15" and colours["0.00"] == "w"  # dark on yellow, white on dark violet
    big = plot_attention(torch.rand(40, 64))
    assert len(big.get_xticklabels()) == 22 and big.get_xticklabels()[1].get_text() == "3"  # every 3rd of 64
    plt.close("all")


def test_plot_attention_rejects_bad_labels_and_shapes():
    with pytest.raises(ValueError, match="3 labels for 4 positions"):
        plot_attention(torch.rand(2, 4), ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"\(n, m\)"):
        plot_attention(torch.rand(2, 2, 2))
    plt.close("all")


def test_plot_attention_grid_shares_one_colour_scale():
    w = torch.rand(2, 3, 4, 4)
    w[1, 2, 0, 0] = 3.0
    fig = plot_attention_grid(w)
    heatmaps = [ax for ax in fig.axes if ax.collections and ax.get_label() != "<colorbar>"]
    assert len(heatmaps) == 6
    assert {ax.collections[0].get_clim() for ax in heatmaps} == {(0.0, 3.0)}
    assert heatmaps[0].get_title() == "head 0"
    fig3 = plot_attention_grid(torch.rand(8, 5, 5), titles=[f"h{i}" for i in range(8)])
    assert len([ax for ax in fig3.axes if ax.collections and ax.get_label() != "<colorbar>"]) == 8
    fig4 = plot_attention_grid(torch.rand(8, 5, 5), ncols=3)
    heatmaps4 = [ax for ax in fig4.axes if ax.collections and ax.get_label() != "<colorbar>"]
    assert len(heatmaps4) == 8 and heatmaps4[7].get_title() == "head 7"
    assert sum(not ax.axison for ax in fig4.axes) == 1  # 3 x 3 slots, one left empty
    fig5 = plot_attention_grid(torch.full((2, 3, 3), 1 / 3), vmax=1.0)
    assert {ax.collections[0].get_clim() for ax in fig5.axes if ax.get_label() != "<colorbar>"} == {(0.0, 1.0)}
    with pytest.raises(ValueError, match="ncols"):
        plot_attention_grid(torch.rand(8, 5, 5), ncols=0)
    with pytest.raises(ValueError, match=r"\(h, n, m\) or \(L, h, n, m\)"):
        plot_attention_grid(torch.rand(4, 4))
    plt.close("all")


def test_plot_attention_grid_names_keys_and_queries_on_the_outer_panels_only():
    # 8 heads in rows of 3: the last row holds heads 6 and 7, so head 5 (above the empty slot)
    # shows its keys too; the queries are named in the first column only.
    fig = plot_attention_grid(torch.rand(8, 4, 5), [f"k{j}" for j in range(5)], [f"q{i}" for i in range(4)], ncols=3)
    heatmaps = [ax for ax in fig.axes if ax.collections and ax.get_label() != "<colorbar>"]
    fig.canvas.draw()

    def shown(labels):
        return [t.get_text() for t in labels if t.get_visible() and t.get_text()]

    for k, ax in enumerate(heatmaps):
        keys = shown(ax.xaxis.get_ticklabels()) if ax.xaxis.get_tick_params()["labelbottom"] else []
        queries = shown(ax.yaxis.get_ticklabels()) if ax.yaxis.get_tick_params()["labelleft"] else []
        assert keys == ([f"k{j}" for j in range(5)] if k in (5, 6, 7) else []), (k, keys)
        assert queries == ([f"q{i}" for i in range(4)] if k % 3 == 0 else []), (k, queries)
    plt.close("all")


def test_data_path_names_missing_files():
    with pytest.raises(ValueError, match="no data file 'nope.txt'"):
        data_path("nope.txt")
