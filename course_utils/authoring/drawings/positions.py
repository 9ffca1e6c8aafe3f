"""Positions as angles: the sinusoidal encoding's pairs as clock hands (09), RoPE's rotation of a pair of
features (17)."""

from __future__ import annotations

import math

from ...helpers.palette import DATA, HIGHLIGHT, INK, KEY, MUTED, PARAMETER, QUERY
from .drawing import drawing
from .svg import Canvas, num

_THETA = 0.3  # the pair's frequency theta_i in radians per position (drawn large, to be seen)
_Q, _K = math.radians(20), math.radians(70)  # the query's and the key's angle before rotation


def _point(cx: float, cy: float, r: float, angle: float) -> tuple[float, float]:
    """A point at ``angle`` (radians, counter-clockwise from the x axis) and distance ``r``; SVG's y points down."""
    return cx + r * math.cos(angle), cy - r * math.sin(angle)


def _arc(c: Canvas, cx: float, cy: float, r: float, a0: float, a1: float, *, colour: str, sw: float = 1.8,
         arrow: str | None = "end", dash: str | None = None) -> None:
    """A circular arc from angle ``a0`` to ``a1`` (counter-clockwise when a1 > a0)."""
    (x0, y0), (x1, y1) = _point(cx, cy, r, a0), _point(cx, cy, r, a1)
    large = 1 if abs(a1 - a0) > math.pi else 0
    sweep = 0 if a1 > a0 else 1
    c.path(f"M{num(x0)},{num(y0)} A{num(r)},{num(r)} 0 {large} {sweep} {num(x1)},{num(y1)}", colour=colour, sw=sw,
           arrow=arrow, dash=dash)


def _panel(c: Canvas, cx: float, cy: float, p: int, p_key: int) -> None:
    r = 120
    c.circle(cx, cy, r, stroke="#D5D5D5", sw=1.2)
    c.line((cx - r - 14, cy), (cx + r + 18, cy), colour=MUTED, sw=1.2)
    c.line((cx, cy + r + 14), (cx, cy - r - 18), colour=MUTED, sw=1.2)
    c.text(cx + r + 14, cy + 16, "x_{2i}", size=15, colour=MUTED, anchor="end")
    c.text(cx + 8, cy - r - 12, "x_{2i+1}", size=15, colour=MUTED, anchor="start")
    q_angle, k_angle = _Q + p * _THETA, _K + p_key * _THETA
    for angle, length, name in ((_Q, 96, "q"), (_K, 82, "k")):
        c.line((cx, cy), _point(cx, cy, length, angle), colour="#A8A8A8", sw=1.5, dash="5 4")
        c.text(*_point(cx, cy, length + 14, angle), name, size=13, colour=MUTED)
    c.line((cx, cy), _point(cx, cy, 96, q_angle), colour=QUERY.strong, sw=3)
    c.line((cx, cy), _point(cx, cy, 82, k_angle), colour=KEY.strong, sw=3)
    qx, qy = _point(cx, cy, 112, q_angle)
    kx, ky = _point(cx, cy, 100, k_angle)
    c.text(qx, qy, f"q at {p}", size=14, bold=True, colour=QUERY.strong)
    c.text(kx, ky, f"k at {p_key}", size=14, bold=True, colour=KEY.strong)
    _arc(c, cx, cy, 52, _Q, q_angle, colour=QUERY.strong, sw=1.5, dash="4 3")
    _arc(c, cx, cy, 66, _K, k_angle, colour=KEY.strong, sw=1.5, dash="4 3")
    _arc(c, cx, cy, 34, q_angle, k_angle, colour=INK, sw=2, arrow="both")
    c.text(cx, cy + r + 40, f"rotated by {p}θ_{{i}} and {p_key}θ_{{i}}", size=15)


@drawing(
    "rope_rotation", notebook="17", section="RoPE: position as a rotation",
    title="RoPE rotates each pair of query and key features by position times theta_i",
    alt="""Two panels, each the plane of one pair of features (x_2i, x_2i+1) with a circle. Grey dashed
    arrows are a query q and a key k before rotation. RoPE rotates the query at position p by the angle
    p theta_i and the key at position p' by p' theta_i (dashed arcs), giving the solid blue query and orange
    key. Left: the query at position 2 and the key at position 5. Right: the same query and key at
    positions 6 and 9. Both rotations are different, but the angle between the rotated query and key (the
    black double arrow) is the same in both panels: it is the angle between the original vectors plus
    (p' - p) theta_i, with offset p' - p = 3 in both. So their dot product, the attention score, depends on
    the positions only through the offset. Each pair i turns at its own frequency
    theta_i = 10000^(-2i/d); the values are not rotated.""",
)
def rope_rotation() -> Canvas:
    c = Canvas(800, 470)
    c.text(400, 24, "pair i of the features, rotated by position × θ_{i},  θ_{i} = 10000^{−2i/d}", size=15,
           bold=True)
    _panel(c, 200, 220, 2, 5)
    _panel(c, 600, 220, 6, 9)
    c.line((400, 60), (400, 400), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")
    c.text(400, 424, "offset 5 − 2 = 9 − 6 = 3: the same angle between q and k, so the same score q · k",
           size=15)
    c.text(400, 448, "grey dashed: before rotation; values are not rotated", size=13, colour=MUTED)
    return c


D_MODEL_09, PAIRS_09 = 64, (0, 4, 8, 20)  # lesson 09, section 2: d_model and the pairs its line plot shows


@drawing(
    "positional_clock_hands", notebook="09", section="2. Sinusoidal positional encodings: the heatmap",
    title="The sinusoidal encoding as clock hands: each pair of dimensions turns at its own speed",
    alt="""A table of small clock faces. Each row is one pair i of dimensions of the sinusoidal positional
    encoding with d_model = 64 (pairs 0, 4, 8 and 20, the ones the lesson plots); each column is one position
    p = 0, 1, 2, 3, 4 and 10. In every face the hand points at the angle p times omega_i, clockwise from twelve
    o'clock, so its horizontal coordinate is the pair's sine dimension PE(p, 2i) and its vertical coordinate
    the cosine dimension PE(p, 2i + 1). At position 0 (the shaded faces) every hand points straight up (sine 0,
    cosine 1): PE(0) = (0, 1, 0, 1, ...). Pair 0
    turns 57.3 degrees per position, a full turn every 6.3 positions; pair 4 turns 18.1 degrees, pair 8 turns
    5.7 degrees, and pair 20 only 0.2 degrees per position, so over a few positions it barely moves. Like the
    hands of a clock, fast and slow hands together tell every position apart.""",
)
def positional_clock_hands() -> Canvas:
    positions = (0, 1, 2, 3, 4, 10)
    c = Canvas(800, 516)
    x0, step, y0, row, r = 300, 82, 96, 90, 28
    c.text(20, 24, f"PE(p) with d_model = {D_MODEL_09}: pair i is one hand, at angle p·ω_{{i}}", size=15, bold=True,
           anchor="start")
    for k, p in enumerate(positions):
        c.text(x0 + k * step, 62, f"p = {p}", size=14, bold=True)
    for n, i in enumerate(PAIRS_09):
        omega = 10000.0 ** (-2 * i / D_MODEL_09)
        y = y0 + r + n * row
        c.text(20, y - 10, f"pair {i}: dims {2 * i}, {2 * i + 1}", size=15, bold=True, anchor="start")
        c.text(20, y + 12, f"{math.degrees(omega):.1f}° per position", size=14, colour=MUTED, anchor="start")
        for k, p in enumerate(positions):
            cx = x0 + k * step
            c.circle(cx, y, r, fill="#FFFFFF" if p else HIGHLIGHT.light, stroke=MUTED, sw=1.5)
            c.circle(cx, y - r + 4, 1.5, fill=MUTED, stroke=None)
            a = p * omega
            c.line((cx, y), (cx + (r - 5) * math.sin(a), y - (r - 5) * math.cos(a)), colour=INK, sw=2.5)
    c.text(400, 450, "hand = (sin p·ω_{i}, cos p·ω_{i}) = (PE(p, 2i), PE(p, 2i+1))", size=15)
    c.text(400, 474, "p = 0 (shaded): every hand points up, PE(0) = (0, 1, 0, 1, ...)", size=14, colour=MUTED)
    c.text(400, 496, "fast hands and slow hands together tell every position apart", size=14, colour=MUTED)
    return c


SENT_A, SENT_B = ["dog", "bites", "man"], ["man", "bites", "dog"]  # lesson 09, section 1


@drawing(
    "order_blindness", notebook="09", section="1. Self-attention cannot see word order",
    title="Self-attention without positions: the same words in another order give the same outputs, reordered",
    alt="""Two sentences made of the same three words, "dog bites man" on the left and "man bites dog" on the
    right, each word a fixed embedding vector decided by the word alone. Both go through the same multi-head
    self-attention, drawn as a grey band. Above the band each word's output is drawn as a box named after its
    word: o(dog), o(bites), o(man). Lines join equal outputs across the two sentences: the dog's output is the
    same vector whether the dog bites (first word of A) or is bitten (last word of B); sentence B's outputs are
    sentence A's permuted by perm = [2, 1, 0]. Averaged into one sentence vector, the two sentences cannot be
    told apart. Below, the fix of section 2: adding a position vector PE(p) to the embedding of the word at
    position p makes "dog" at position 0 and "dog" at position 2 different inputs.""",
)
def order_blindness() -> Canvas:
    c = Canvas(800, 420)
    w, gap = 96, 14
    sides = [(60, SENT_A, "sentence A"), (450, SENT_B, "sentence B")]
    c.text(20, 24, "no positions: the same words, the same outputs, only reordered", size=15, bold=True,
           anchor="start")
    c.rect(40, 170, 720, 56, fill="#F1F1F1", stroke=MUTED, sw=1.2, rx=8)
    c.text(400, 198, "the same self-attention, mha(x, x, x), on both sentences", size=15, halo="#F1F1F1")
    centres = {}
    for x0, words, title in sides:
        c.text(x0 + (3 * w + 2 * gap) / 2, 322, title, size=14, bold=True, colour=MUTED)
        for k, word in enumerate(words):
            x = x0 + k * (w + gap)
            c.box(x, 250, w, 40, word, role=DATA, size=15, bold=True)
            c.text(x + w / 2, 306, f"position {k}", size=13, colour=MUTED)
            c.line((x + w / 2, 248), (x + w / 2, 230), sw=1.5)
            c.line((x + w / 2, 166), (x + w / 2, 146), sw=1.5)
            c.box(x, 102, w, 40, f"o({word})", role=PARAMETER, size=15)
            centres.setdefault(word, []).append(x + w / 2)
    for _word, (a, b) in centres.items():
        top = 100 - 0.12 * (b - a)  # the longer the span, the higher the arc
        c.path(f"M{a:.1f},100 C{a:.1f},{top:.1f} {b:.1f},{top:.1f} {b:.1f},100", colour=HIGHLIGHT.strong, sw=2,
               dash="6 4")
    c.text(20, 56, "equal vectors", size=14, bold=True, colour=HIGHLIGHT.strong, anchor="start")
    c.text(400, 362, "out_B == out_A[:, perm] with perm = [2, 1, 0]: \"dog\" bites or is bitten, same vector", size=14)
    c.text(400, 392, "the fix: x = embedding(word) + PE(position), so the two dogs differ", size=14, colour=MUTED)
    return c
