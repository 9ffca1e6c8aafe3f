"""The figures of lessons 01-04 (course_utils.helpers.lesson_plots) draw what they are given."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from course_utils.helpers.lesson_plots import (  # noqa: E402
    anti_diagonal_offsets,
    diagram_additive_score,
    plot_by_length,
    plot_lookup,
    plot_offsets,
    plot_weights,
)


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


def test_anti_diagonal_offsets_skips_eos_and_padding():
    # Two examples, n = 3 and 2, T_out = 4, T_in = 3; padded positions hold more than any weight.
    w = torch.full((2, 4, 3), 5.0)
    w[0, :, :3] = torch.tensor([[0.1, 0.2, 0.7], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.9, 0.0, 0.1]])
    w[1, :, :2] = torch.tensor([[0.3, 0.7], [0.8, 0.2], [0.5, 0.5], [0.5, 0.5]])
    offsets = anti_diagonal_offsets(w, torch.tensor([3, 2]))
    assert offsets.tolist() == [0, 1, 0, 0, 0]  # peaks 2, 2, 0 against mirrors 2, 1, 0; then 1, 0 against 1, 0
    assert offsets.dtype == torch.long


@pytest.mark.parametrize("weights, lengths, error, needle", [
    (np.zeros((1, 2, 2)), torch.tensor([2]), TypeError, "weights must be a torch.Tensor"),
    (torch.zeros(2, 2), torch.tensor([2]), ValueError, "3 dimension"),
    (torch.zeros(1, 2, 2), torch.tensor([2.0]), ValueError, "integer"),
    (torch.zeros(2, 3, 2), torch.tensor([2]), ValueError, "one length per example"),
    (torch.zeros(1, 3, 2), torch.tensor([3]), ValueError, "lengths must lie in 1..2"),
    (torch.zeros(1, 3, 2), torch.tensor([0]), ValueError, "lengths must lie in 1..2"),
])
def test_anti_diagonal_offsets_rejects_bad_input(weights, lengths, error, needle):
    with pytest.raises(error, match=needle):
        anti_diagonal_offsets(weights, lengths)


def _texts(fig: Figure) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in [*ax.texts, ax.title])


def test_diagram_additive_score_draws_the_score_network():
    fig = diagram_additive_score()
    assert isinstance(fig, Figure)
    text = _texts(fig)
    for label in ("$s_t$", "$h_i$", "$W_s$", "$W_h$", "+", "tanh", "$v^\\top$", "score $e_{t,i}$", "softmax over i",
                  "weights $\\alpha_{t,i}$", "weighted sum", "context $c_t$"):
        assert label in text, label
    assert len(fig.axes[0].texts) >= 12 and sum(a.arrow_patch is not None for a in fig.axes[0].texts
                                                if hasattr(a, "arrow_patch")) >= 12
    plt.close(fig)
