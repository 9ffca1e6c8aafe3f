"""RoPE's rotation of a pair of features (17)."""

from __future__ import annotations

import math

from ...helpers.palette import INK, KEY, MUTED, QUERY
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
