"""The exploration figures draw from small synthetic results without error; the slope helper is exact;
the figures of stored long runs draw one line per run and reject malformed results with a ValueError."""

import copy
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils.core.sparse import sparsemax  # noqa: E402
from course_utils.helpers import exploration_plots as ep  # noqa: E402

HEADS = {"curves": {"1 heads, seed 0": {"heads": 1, "seed": 0, "step": [250, 500, 750], "count_beside": [0.4, 0.5, 0.9]},
                    "1 heads, seed 1": {"heads": 1, "seed": 1, "step": [250, 500, 750], "count_beside": [0.3, 0.6, 0.8]},
                    "4 heads, seed 0": {"heads": 4, "seed": 0, "step": [250, 500], "count_beside": [1.0, 1.0]}},
         "lr_sweep_at_budget": [{"lr": lr, "seed": s, "count": 0.9, "count_beside": 0.45} for lr in (1e-3, 1e-2) for s in (0, 1)]}
MEASURES = ("mirror weight", "weight at +1", "argmax on mirror", "argmax at +1")
LONGER = {"runs": {f"{label}, seed {s}": {"schedule": label, "seed": s, "epoch": list(range(5, epochs + 1, 5)),
                                          **{m: [0.5] * (epochs // 5) for m in MEASURES}}
                   for label, epochs in (("20 epochs, decaying lr", 20), ("100 epochs, constant lr", 100)) for s in (0, 1, 2)}}


def _run_lines(fig):
    return [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "run"]


def test_slopes_per_doubling_exact():
    assert ep.slopes_per_doubling([16, 32, 64], [1.0, 4.0, 8.0]) == pytest.approx([2.0, 1.0])
    assert ep.slopes_per_doubling([100, 1000], [1.0, 10 ** 1.5]) == pytest.approx([1.5])


def test_simplex_xy_corners():
    xy = ep._simplex_xy(torch.eye(3, dtype=torch.float64))
    assert xy[0].tolist() == [0.0, 0.0] and xy[1].tolist() == [1.0, 0.0]
    assert xy[2, 1].item() == pytest.approx(math.sqrt(3) / 2)


def test_figures_draw():
    sweep = {"settings": {"steps": 300}, "runs": [{"variant": v, "lr": lr, "seed": s, "steps_to_95": None if v == "u" else 50}
                                                   for v in ("s", "u") for lr in (1e-3, 3e-3) for s in range(3)]}
    figs = [ep.plot_marker_weight({0: [0.0, 0.05, 0.1]}),
            ep.plot_slopes_per_doubling([16, 32, 64], {"a": [1.0, 2.0, 8.0]}),
            ep.plot_simplex_projection(torch.tensor([[0.6, 0.3, 0.1], [2.0, 0.0, 0.0]]), sparsemax),
            ep.plot_scaling_sweep(sweep), ep.plot_train_and_heldout([25, 50], [2.0, 1.0], [2.1, 1.5], 2.8)]
    assert all(isinstance(f, plt.Figure) for f in figs)
    plt.close("all")


def test_heads_long_one_line_per_run_and_the_sweep():
    fig = ep.plot_heads_long(HEADS)
    assert isinstance(fig, plt.Figure)
    lines = _run_lines(fig)
    assert len(lines) == 3 and [len(line.get_xdata()) for line in lines] == [3, 3, 2]
    (ax,) = fig.axes
    sweep = [c for c in ax.collections if c.get_gid() == "sweep"]
    assert len(sweep) == 1 and len(sweep[0].get_offsets()) == 4
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["1 head", "4 heads"]
    no_sweep = {"curves": HEADS["curves"]}  # a result without the sweep draws the curves only
    assert not [c for c in ep.plot_heads_long(no_sweep, key="count_beside").axes[0].collections if c.get_gid() == "sweep"]
    plt.close("all")


def test_longer_training_one_line_per_run_in_every_panel():
    fig = ep.plot_longer_training(LONGER)
    assert isinstance(fig, plt.Figure)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == list(MEASURES)
    assert all(sum(line.get_gid() == "run" for line in ax.get_lines()) == 6 for ax in panels)
    three = ep.plot_longer_training(LONGER, names=MEASURES[:3])  # the fourth panel of the grid is hidden
    assert len([ax for ax in three.axes if ax.get_visible()]) == 3 and len(_run_lines(three)) == 18
    plt.close("all")


def _without(result, field, run, key):
    broken = copy.deepcopy(result)
    del broken[field][run][key]
    return broken


def _shortened(result, field, run, key):
    broken = copy.deepcopy(result)
    broken[field][run][key] = broken[field][run][key][:-1]
    return broken


@pytest.mark.parametrize("bad, match", [
    ({"runs": {}}, "non-empty 'curves'"),
    ([1, 2], "got list"),
    ({"curves": {}}, "non-empty 'curves'"),
    (_without(HEADS, "curves", "4 heads, seed 0", "heads"), "has no \\['heads'\\]"),
    (_shortened(HEADS, "curves", "1 heads, seed 1", "step"), "one length"),
])
def test_heads_long_rejects_malformed_results(bad, match):
    with pytest.raises(ValueError, match=match):
        ep.plot_heads_long(bad)
    with pytest.raises(ValueError, match="has no \\['count_not_beside'\\]"):
        ep.plot_heads_long(HEADS, key="count_not_beside")


@pytest.mark.parametrize("bad, match", [
    (HEADS, "non-empty 'runs'"),
    (_without(LONGER, "runs", "20 epochs, decaying lr, seed 1", "argmax at +1"), "has no \\['argmax at \\+1'\\]"),
    (_shortened(LONGER, "runs", "100 epochs, constant lr, seed 2", "mirror weight"), "one length"),
])
def test_longer_training_rejects_malformed_results(bad, match):
    with pytest.raises(ValueError, match=match):
        ep.plot_longer_training(bad)
    with pytest.raises(ValueError, match="names"):
        ep.plot_longer_training(LONGER, names="mirror weight")


def test_the_stored_results_draw():
    assert len(_run_lines(ep.plot_heads_long(ep.load_result("heads_long")))) == 9
    assert len(_run_lines(ep.plot_longer_training(ep.load_result("longer_training")))) == 4 * 6
    plt.close("all")


def test_load_result_missing_names_the_file():
    with pytest.raises(ValueError, match="no data file"):
        ep.load_result("no_such_experiment")
