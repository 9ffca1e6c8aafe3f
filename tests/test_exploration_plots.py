"""The exploration figures draw from small synthetic results without error; the slope helper is exact."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils.core.sparse import sparsemax  # noqa: E402
from course_utils.helpers import exploration_plots as ep  # noqa: E402


def test_slopes_per_doubling_exact():
    assert ep.slopes_per_doubling([16, 32, 64], [1.0, 4.0, 8.0]) == pytest.approx([2.0, 1.0])
    assert ep.slopes_per_doubling([100, 1000], [1.0, 10 ** 1.5]) == pytest.approx([1.5])


def test_simplex_xy_corners():
    xy = ep._simplex_xy(torch.eye(3, dtype=torch.float64))
    assert xy[0].tolist() == [0.0, 0.0] and xy[1].tolist() == [1.0, 0.0]
    assert xy[2, 1].item() == pytest.approx(math.sqrt(3) / 2)


def test_figures_draw():
    heads = {"curves": {"1 heads, seed 0": {"heads": 1, "seed": 0, "step": [250, 500], "count_beside": [0.4, 0.5]},
                        "4 heads, seed 0": {"heads": 4, "seed": 0, "step": [250, 500], "count_beside": [1.0, 1.0]}}}
    runs = {"runs": {"a": {"schedule": "s", "seed": 0, "epoch": [5, 10], "mirror weight": [0.5, 0.6],
                           "weight at +1": [0.3, 0.2], "argmax on mirror": [0.7, 0.8]}}}
    sweep = {"settings": {"steps": 300}, "runs": [{"variant": v, "lr": lr, "seed": s, "steps_to_95": None if v == "u" else 50}
                                                   for v in ("s", "u") for lr in (1e-3, 3e-3) for s in range(3)]}
    figs = [ep.plot_heads_long(heads), ep.plot_marker_weight({0: [0.0, 0.05, 0.1]}),
            ep.plot_slopes_per_doubling([16, 32, 64], {"a": [1.0, 2.0, 8.0]}),
            ep.plot_simplex_projection(torch.tensor([[0.6, 0.3, 0.1], [2.0, 0.0, 0.0]]), sparsemax),
            ep.plot_longer_training(runs), ep.plot_scaling_sweep(sweep),
            ep.plot_train_and_heldout([25, 50], [2.0, 1.0], [2.1, 1.5], 2.8)]
    assert all(isinstance(f, plt.Figure) for f in figs)
    plt.close("all")


def test_load_result_missing_names_the_file():
    with pytest.raises(ValueError, match="no data file"):
        ep.load_result("no_such_experiment")
