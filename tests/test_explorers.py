"""Interactive explorers: the drawings show the right numbers, the widgets redraw on every change."""

import math

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from course_utils.helpers.explorers import (
    DK_CHOICES,
    draw_decoder_step,
    draw_head,
    draw_query_weights,
    draw_softmax_saturation,
    head_explorer,
    random_scores,
    sentence_explorer,
    seq2seq_explorer,
    softmax_explorer,
    softmax_weights,
)

WORDS = ["the", "cat", "sat", "on", "the", "mat"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def rows(n: int, m: int, seed: int = 0) -> torch.Tensor:
    """Random attention weights ``(n, m)``, each row a distribution."""
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(n, m, generator=g), dim=-1)


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_entropy(p) -> float:
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def bar_axes(fig):
    """The axes that hold a bar chart (vertical or horizontal)."""
    return [ax for ax in fig.axes if ax.containers]


def heights(ax) -> list[float]:
    return [patch.get_height() for patch in ax.containers[0]]


def mc_mean_max_weight(sigma: float, m: int = 8, samples: int = 100_000) -> float:
    """E[largest softmax weight] of m i.i.d. N(0, sigma^2) logits, by Monte Carlo in NumPy."""
    z = np.random.default_rng(123).standard_normal((samples, m)) * sigma
    return float(np_softmax(z).max(axis=-1).mean())


# --- softmax saturation -----------------------------------------------------------


@pytest.mark.parametrize("d_k", [4, 64])
def test_random_scores_have_variance_d_k_and_repeat(d_k):
    s = random_scores(d_k, num_queries=2000, num_keys=8, seed=3)
    assert s.shape == (2000, 8)
    assert s.var().item() == pytest.approx(d_k, rel=0.1)
    assert torch.equal(s, random_scores(d_k, num_queries=2000, num_keys=8, seed=3))
    assert not torch.equal(s, random_scores(d_k, num_queries=2000, num_keys=8, seed=4))


@pytest.mark.parametrize("scaled", [False, True])
def test_softmax_weights_match_numpy(scaled):
    s = random_scores(16, num_queries=5, num_keys=7).double().numpy()
    expected = np_softmax(s / 4.0 if scaled else s)
    np.testing.assert_allclose(softmax_weights(16, scaled, num_queries=5, num_keys=7).numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("d_k, scaled", [(1, False), (64, False), (64, True)])
def test_softmax_bars_are_the_first_querys_weights(d_k, scaled):
    fig = draw_softmax_saturation(d_k, scaled)
    (ax,) = bar_axes(fig)
    s = random_scores(d_k)[0].double().numpy()
    expected = np_softmax(s / math.sqrt(d_k) if scaled else s)
    np.testing.assert_allclose(heights(ax), expected, atol=1e-6)
    red = [p.get_facecolor() for p in ax.containers[0]].index(matplotlib.colors.to_rgba("#d62728"))
    assert red == int(expected.argmax())
    assert f"d_k = {d_k}" in ax.get_title() and f"{expected.max():.2f}" in ax.get_title()


def test_softmax_curve_saturates_without_scaling_and_stays_flat_with_it():
    fig = draw_softmax_saturation(64, False)
    curve_ax = fig.axes[1]
    lines = {line.get_label(): line for line in curve_ax.get_lines()}
    unscaled = lines["no scaling: q.k"].get_ydata()
    scaled = lines["scaled: q.k / sqrt(d_k)"].get_ydata()
    assert list(lines["no scaling: q.k"].get_xdata()) == list(DK_CHOICES)
    # unscaled scores have std sqrt(d_k): the largest weight climbs toward 1 (one-hot)
    assert all(b > a for a, b in zip(unscaled, unscaled[1:]))
    assert unscaled[-1] == pytest.approx(mc_mean_max_weight(math.sqrt(512)), abs=0.03)
    # scaled scores have std 1 whatever d_k: the largest weight stays where N(0, 1) logits put it
    assert max(scaled) - min(scaled) < 0.1
    for d_k, value in zip(DK_CHOICES, scaled):
        if d_k >= 16:
            assert value == pytest.approx(mc_mean_max_weight(1.0), abs=0.03)
    # the star marks the mean largest weight at the current d_k
    star = next(line for line in curve_ax.get_lines() if line.get_label().startswith("d_k = 64"))
    mean_max = np_softmax(random_scores(64).double().numpy()).max(axis=-1).mean()
    assert star.get_ydata()[0] == pytest.approx(mean_max, abs=1e-6)


def test_softmax_explorer_redraws_on_every_change():
    box = softmax_explorer(d_k=8)
    assert box.drawn == [{"d_k": 8, "scaled": False}]
    box.controls["d_k"].value = 256
    box.controls["scaled"].value = True
    assert box.drawn[1:] == [{"d_k": 256, "scaled": False}, {"d_k": 256, "scaled": True}]
    title = bar_axes(box.figure)[0].get_title()
    assert "d_k = 256" in title and "sqrt(d_k)" in title
    assert box.figure.number not in plt.get_fignums()  # closed after display: not shown twice
    with pytest.raises(ValueError, match=r"d_k=100 is not one of"):
        softmax_explorer(d_k=100)


# --- one query of a sentence --------------------------------------------------------


def test_query_bars_are_the_selected_row_with_its_entropy():
    w = rows(6, 6)
    fig = draw_query_weights(w, WORDS, query_index=2)
    (ax,) = bar_axes(fig)
    np.testing.assert_allclose(heights(ax), w[2].numpy(), atol=1e-6)
    assert "'sat'" in ax.get_title() and f"entropy {np_entropy(w[2].numpy()):.2f}" in ax.get_title()
    assert f"{math.log(6):.2f}" in ax.get_title()
    outline = [p for p in fig.axes[0].patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert [p.get_xy() for p in outline] == [(0, 2)]


def test_query_weights_cross_attention_labels_and_errors():
    w = rows(3, 4)
    fig = draw_query_weights(w.numpy(), ["a", "b", "c"], ["w", "x", "y", "z"], 1)
    assert [t.get_text() for t in bar_axes(fig)[0].get_xticklabels()] == ["w", "x", "y", "z"]
    with pytest.raises(ValueError, match=r"key_labels .* 4 labels .* \(3, 4\), got 3 labels"):
        draw_query_weights(w, ["a", "b", "c"])  # keys default to the 3 query labels
    with pytest.raises(ValueError, match=r"query_index must be an integer in 0..2 .* got 3"):
        draw_query_weights(w, ["a", "b", "c"], list("wxyz"), 3)
    with pytest.raises(ValueError, match=r"shape \(n, m\), not empty, got shape \(1, 3, 4\) \(for a batch, pass one example"):
        draw_query_weights(w[None], ["a", "b", "c"], list("wxyz"))


def test_sentence_explorer_follows_the_buttons():
    w = rows(6, 6, seed=1)
    box = sentence_explorer(w, WORDS)
    button = box.controls["query_index"]
    assert button.options[4] == ("the", 4)  # repeated words are separate buttons
    button.value = 4
    assert box.drawn == [{"query_index": 0}, {"query_index": 4}]
    np.testing.assert_allclose(heights(bar_axes(box.figure)[0]), w[4].numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="query_labels"):
        sentence_explorer(w, WORDS[:5])


# --- heads ----------------------------------------------------------------------------


def heads(h=4, n=5, seed=0) -> torch.Tensor:
    return torch.stack([rows(n, n, seed=seed + c) for c in range(h)])


def test_one_head_shows_its_heatmap_and_per_query_entropy():
    w = heads()
    labels = list("abcde")
    fig = draw_head(w, labels, head=2)
    (ax_h,) = bar_axes(fig)
    widths = [p.get_width() for p in ax_h.containers[0]]
    expected = [np_entropy(row) for row in w[2].numpy()]
    np.testing.assert_allclose(widths, expected, atol=1e-5)
    assert f"mean {np.mean(expected):.2f}" in ax_h.get_title()
    heatmap = fig.axes[0].collections[0].get_array()
    np.testing.assert_allclose(np.asarray(heatmap).reshape(5, 5), w[2].numpy(), atol=1e-6)
    assert fig.axes[0].get_title() == "head 2"


def test_all_heads_are_titled_with_their_mean_entropy():
    w = heads(h=5)  # two rows of the grid, the last one part empty
    fig = draw_head(w, list("abcde"))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [f"head {c}: H = {np.mean([np_entropy(r) for r in w[c].numpy()]):.2f}" for c in range(5)]


def test_draw_head_errors():
    w = heads()
    with pytest.raises(ValueError, match=r"\(h, n, m\), not empty, got shape \(1, 4, 5, 5\) \(for a batch"):
        draw_head(w[None], list("abcde"))
    with pytest.raises(ValueError, match=r"head must be an integer in 0..3 .* got 4"):
        draw_head(w, list("abcde"), 4)
    with pytest.raises(ValueError, match=r"labels \(one per key\) needs 5 labels .* got 4 labels"):
        draw_head(w, list("abcd"))
    cross = w[:, :3, :]  # 3 queries, 5 keys: query labels cannot default to the key labels
    with pytest.raises(ValueError, match=r"\(4, 3, 5\) have n != m .* pass query_labels, 3 of them"):
        draw_head(cross, list("abcde"))
    with pytest.raises(ValueError, match=r"query_labels \(one per query\) needs 3 labels .* got 2 labels"):
        draw_head(cross, list("abcde"), query_labels=["x", "y"])
    draw_head(cross, list("abcde"), 0, query_labels=["x", "y", "z"])


def test_head_explorer_switches_between_all_and_one():
    w = heads(h=3)
    box = head_explorer(w, list("abcde"))
    assert box.drawn == [{"head": "all"}]
    assert len([ax for ax in box.figure.axes if ax.get_title().startswith("head")]) == 3
    box.controls["head"].value = 1
    assert box.drawn[-1] == {"head": 1} and box.figure.axes[0].get_title() == "head 1"
    box.controls["head"].value = "all"
    assert len(box.drawn) == 3 and box.figure.axes[0].get_title().startswith("head 0: H =")
    with pytest.raises(ValueError, match="head must be"):
        head_explorer(w, list("abcde"), head=3)


# --- seq2seq steps ----------------------------------------------------------------


SRC = ["a", "b", "c", "<eos>"]
OUT = ["c", "b", "a", "<eos>"]


def test_decoder_step_hides_future_steps_and_shows_the_current_row():
    w = rows(4, 4, seed=5)
    fig = draw_decoder_step(w, SRC, OUT, step=1)
    mesh = fig.axes[0].collections[0].get_array()
    visible = ~np.ma.getmaskarray(mesh).reshape(4, 4)
    assert visible[:2].all() and not visible[2:].any()  # steps 2 and 3 are not written yet
    (ax,) = bar_axes(fig)
    np.testing.assert_allclose(heights(ax), w[1].numpy(), atol=1e-6)
    j = int(np.argmax(w[1].numpy()))
    assert "writes 'b'" in ax.get_title() and f"source {j} '{SRC[j]}'" in ax.get_title()
    assert fig.axes[0].get_title() == "output so far: c b"


def test_decoder_step_errors():
    w = rows(4, 4)
    with pytest.raises(ValueError, match=r"output_tokens .* 4 labels .* \(4, 4\), got 3 labels"):
        draw_decoder_step(w, SRC, OUT[:3], 0)
    with pytest.raises(ValueError, match=r"step must be an integer in 0..3"):
        draw_decoder_step(w, SRC, OUT, -1)
    with pytest.raises(ValueError, match=r"source_tokens"):
        seq2seq_explorer(w[:, :3], SRC, OUT)
    with pytest.raises(ValueError, match=r"not empty, got shape \(4, 0\)"):
        draw_decoder_step(w[:, :0], [], OUT, 0)


def test_seq2seq_explorer_steps_through():
    w = rows(4, 4, seed=2)
    box = seq2seq_explorer(w, SRC, OUT, step=3)
    play, slider = box.children[0].children
    assert (slider.min, slider.max, slider.value, play.max) == (0, 3, 3, 3)
    for t in (0, 1, 2):
        slider.value = t
        assert f"step {t} writes '{OUT[t]}'" in bar_axes(box.figure)[0].get_title()
    assert box.drawn == [{"step": 3}, {"step": 0}, {"step": 1}, {"step": 2}]
