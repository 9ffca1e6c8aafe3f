"""The figures of lessons 01-04 (course_utils.helpers.lesson_plots) draw what they are given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from course_utils.helpers.lesson_plots import plot_by_length, plot_lookup, plot_offsets, plot_weights  # noqa: E402


def test_plot_weights_writes_every_cell_with_the_format_on_a_0_1_scale():
    ax = plot_weights(torch.tensor([[0.2361, 0.5254, 0.2387]]), ["the", "cat", "slept"], ["s_t"], fmt=".3f")
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0.236", "0.525", "0.239"]
    assert ax.collections[0].get_clim() == (0.0, 1.0)
    plt.close("all")


def test_plot_lookup_bar_heights():
    fig = plot_lookup(np.eye(3)[0], np.array([0.5, 0.3, 0.2]), ["a", "b", "c"], query="q")
    heights = [[p.get_height() for p in ax.patches] for ax in fig.axes]
    assert heights == [[1.0, 0.0, 0.0], [0.5, 0.3, 0.2]]
    plt.close(fig)


def test_plot_by_length_and_offsets():
    fig = plot_by_length({"a": {4: 1.0, 5: 0.5}, "b": {4: 0.2, 5: 0.1}}, ylabel="acc", title="t")
    assert [list(line.get_ydata()) for line in fig.axes[0].lines] == [[1.0, 0.5], [0.2, 0.1]]
    plt.close(fig)
    fig = plot_offsets({"x": [0, 0, 1, -1], "y": [1, 1, 1, 0]}, title="t")
    shares = [p.get_height() for p in fig.axes[0].patches]
    assert shares == [0.25, 0.5, 0.25, 0.0, 0.25, 0.75]
    plt.close(fig)
