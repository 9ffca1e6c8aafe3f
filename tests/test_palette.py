"""The course's colours: queries, keys and values apart for every reader, readable on white and on a
dark page; the heatmaps label their query axis in the query colour and their key axis in the key colour."""

from __future__ import annotations

import itertools

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course_utils.helpers import palette  # noqa: E402
from course_utils.helpers.plotting import plot_attention, plot_attention_grid  # noqa: E402

QKV = (palette.QUERY, palette.KEY, palette.VALUE)


def _linear(colour: str) -> np.ndarray:
    c = np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _contrast(a: str, b: str) -> float:
    la, lb = (float(_linear(c) @ [0.2126, 0.7152, 0.0722]) for c in (a, b))
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


# Machado et al. (2009), full severity: how a colour looks to a reader without L or M cones.
_CVD = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}


def _lab(rgb_linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ rgb_linear
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 216 / 24389, np.cbrt(t), (24389 / 27 * t + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("vision", list(_CVD))
def test_queries_keys_and_values_stay_apart(vision):
    """CIE76 distance of at least 35 between any two of the three, also for red-green colour blindness
    (about 1 man in 12); a clearly visible difference is about 10."""
    lab = {r.name: _lab(np.clip(_CVD[vision] @ _linear(r.strong), 0, 1)) for r in QKV}
    for a, b in itertools.combinations(lab, 2):
        assert np.linalg.norm(lab[a] - lab[b]) >= 35, f"{a} and {b} look alike under {vision}"


@pytest.mark.parametrize("role", QKV, ids=lambda r: r.name)
def test_strong_colours_read_on_white_and_on_a_dark_page(role):
    assert _contrast(role.strong, "#FFFFFF") >= 4.5  # WCAG AA for text on white
    assert _contrast(role.strong, "#111111") >= 3.0  # lines and large text on a dark theme
    assert _contrast(palette.INK, role.light) >= 7.0  # the dark labels on the tinted boxes
    assert _contrast(role.light, "#FFFFFF") < 1.4  # tints stay light: a box, not a block of colour


def test_neutrals_read_on_the_panel():
    assert _contrast(palette.INK, palette.PANEL) >= 12 and _contrast(palette.MUTED, palette.PANEL) >= 4.5
    assert _contrast("#FFFFFF", palette.MASK.strong) >= 7  # white "False" on a blocked cell


def test_weight_colour_follows_the_heatmaps_colour_map():
    viridis = matplotlib.colormaps["viridis"]
    for w in (0.0, 0.13, 0.5, 0.77, 1.0):
        ours = np.array([int(palette.weight_colour(w)[k : k + 2], 16) for k in (1, 3, 5)])
        theirs = np.array(viridis(w)[:3]) * 255
        assert np.abs(ours - theirs).max() <= 12, f"weight {w}: {ours} vs viridis {theirs.round()}"
    for bad in (-0.1, 1.5, True, "0.5", float("nan")):
        with pytest.raises(ValueError, match="number in"):
            palette.weight_colour(bad)


def test_text_on_picks_a_readable_colour():
    assert palette.text_on("#FFFFFF") == palette.INK and palette.text_on(palette.MASK.strong) == "#FFFFFF"
    assert palette.text_on(palette.VIRIDIS[0]) == "#FFFFFF" and palette.text_on(palette.VIRIDIS[-1]) == palette.INK


def test_heatmap_axes_say_query_and_key_in_their_colours():
    ax = plot_attention(np.full((3, 4), 0.25), ["a", "b", "c", "d"], ["x", "y", "z"])
    assert ax.get_ylabel() == "query" and ax.yaxis.label.get_color() == palette.QUERY.strong
    assert ax.get_xlabel() == "key" and ax.xaxis.label.get_color() == palette.KEY.strong
    assert {t.get_color() for t in ax.get_yticklabels()} == {palette.QUERY.strong}
    assert {t.get_color() for t in ax.get_xticklabels()} == {palette.KEY.strong}
    plt.close("all")


def test_every_panel_of_a_grid_keeps_the_colours():
    fig = plot_attention_grid(np.full((2, 3, 3), 1 / 3), ["a", "b", "c"], ["a", "b", "c"])
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert {t.get_color() for ax in panels for t in ax.get_xticklabels() if t.get_text()} == {palette.KEY.strong}
    assert {ax.yaxis.label.get_color() for ax in panels if ax.get_ylabel()} == {palette.QUERY.strong}
    plt.close("all")


def test_date_maps_colour_output_rows_as_queries_and_source_columns_as_keys():
    from course_utils.helpers.date_plots import plot_date_map

    ax = plot_date_map(np.full((11, 8), 0.125), "3/4/2021", "2021-04-03")
    assert {t.get_color() for t in ax.get_yticklabels()} == {palette.QUERY.strong}
    assert {t.get_color() for t in ax.get_xticklabels()} == {palette.KEY.strong}
    plt.close("all")
