"""The pictures of lesson 03 (course_utils/helpers/multihead_plots.py)."""

import matplotlib.pyplot as plt
import pytest
import torch

from course_utils.helpers.multihead_plots import plot_head_split, plot_weights_with_nan


def _texts(fig) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_the_head_split_draws_one_panel_per_head_and_checks_shapes():
    q = torch.randn(5, 12)
    fig = plot_head_split(q, q.view(5, 3, 4).transpose(0, 1))
    assert len(fig.axes) == 4 and [ax.get_title() for ax in fig.axes[1:]] == ["Q[0, 0]", "Q[0, 1]", "Q[0, 2]"]
    with pytest.raises(ValueError, match=r"\(5, 12\)"):
        plot_head_split(q, torch.randn(3, 5, 3))
    plt.close("all")


def test_nan_weights_are_labelled_nan():
    w = torch.tensor([[1.0, 0.0], [float("nan"), float("nan")]])
    _, ax = plt.subplots()
    plot_weights_with_nan(ax, w, "t")
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.00", "NaN", "NaN"]
    with pytest.raises(ValueError, match=r"\(n, m\)"):
        plot_weights_with_nan(ax, torch.rand(2, 2, 2), "t")
    plt.close("all")
