"""Lesson 02's figures in course_utils.helpers.lesson_plots draw what they are given."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils.helpers.lesson_plots import plot_row_entropy, plot_table  # noqa: E402


def test_plot_table_writes_every_cell_as_a_whole_number_with_the_labels():
    fig = plot_table(torch.tensor([[1.0, 0.0, 12.0], [0.0, 6.0, 0.0]]), ["a", "b", "c"], ["x", "y"],
                     title="T", xlabel="keys", ylabel="rows", cmap="Blues", vmin=0, vmax=1.5)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["1", "0", "12", "0", "6", "0"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y"]
    assert ax.collections[0].get_clim() == (0, 1.5)
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("T", "keys", "rows")
    plt.close(fig)


def test_plot_table_rejects_labels_that_do_not_fit():
    with pytest.raises(ValueError, match=r"values must have shape .*\(2, 3\), got shape \(3, 2\)"):
        plot_table(torch.zeros(3, 2), ["a", "b", "c"], ["x", "y"], title="", xlabel="", ylabel="")


def test_plot_row_entropy_draws_one_bar_per_row_and_the_reference_lines():
    weights = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    entropy = torch.tensor([0.0, math.log(2), math.log(3)])
    fig = plot_row_entropy(weights, entropy, ["p", "q", "r"])
    heatmap, bars = fig.axes[:2]
    assert [p.get_width() for p in bars.patches] == pytest.approx(entropy.tolist())
    assert [p.get_y() + p.get_height() / 2 for p in bars.patches] == pytest.approx([0.5, 1.5, 2.5])
    assert [line.get_xdata()[0] for line in bars.lines] == pytest.approx([math.log(2), math.log(3)])
    assert [t.get_text() for t in bars.texts] == ["0.00", "0.69", "1.10"]
    assert heatmap.collections[0].get_clim() == (0.0, 1)
    plt.close(fig)


def test_plot_row_entropy_rejects_an_entropy_per_key():
    with pytest.raises(ValueError, match=r"entropy \(n,\)"):
        plot_row_entropy(torch.full((2, 4), 0.25), torch.zeros(4), ["a", "b", "c", "d"])
