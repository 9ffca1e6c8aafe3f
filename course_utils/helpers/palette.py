"""The course's colours: one for queries, one for keys, one for values, and a few neutrals.

Every heatmap (``plot_attention``: query axis in ``QUERY``, key axis in ``KEY``) and every
drawing (``python -m course_utils.authoring.drawings``) takes its colours from here, so that a
reader learns them once: **queries blue, keys orange, values green**.

Each role has a ``strong`` colour (lines, arrows, text) and a ``light`` tint (the fill of a box
or a matrix cell, with dark text on it). The three strong colours come from the Okabe-Ito set
(blue, vermillion, bluish green), the last two darkened so that all three

- keep a contrast of at least 4.5:1 with white (text on the drawings' light panels and on
  white figures) and of at least 3:1 with a near-black page (``#111111``, a dark theme), and
- stay apart for readers with red-green colour blindness (``tests/test_palette.py`` checks
  both with a simulation of protanopia and deuteranopia).

Colour never carries a meaning alone: every box and axis also says in words what it holds.
Plain strings (``"#rrggbb"``), so that matplotlib and SVG both take them; no imports.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Role:
    """A role's two colours: ``strong`` for lines and text, ``light`` for fills under dark text."""

    name: str
    strong: str
    light: str


QUERY = Role("query", "#0072B2", "#D9EAF5")
KEY = Role("key", "#C25400", "#F8E1CF")
VALUE = Role("value", "#008468", "#D3EDE5")

# Neutrals: what is not a query, a key or a value.
DATA = Role("data", "#4D4D4D", "#FFFFFF")  # inputs and activations: tokens, X, outputs (white boxes)
PARAMETER = Role("parameter", "#4D4D4D", "#E2E2E2")  # learned weights W_Q, W_K, ... (grey boxes)
MASK = Role("mask", "#3D3D3D", "#C9C9C9")  # blocked cells of a mask: dark; allowed cells stay white
RESIDUAL = Role("residual", "#767676", "#EDEDED")  # the residual path around a sub-layer
HIGHLIGHT = Role("highlight", "#7A5C00", "#FFEDA8")  # what a drawing points at: the new token, the current block

INK = "#1F1F1F"  # text and ordinary lines
MUTED = "#5C5C5C"  # secondary text: shapes, notes (7:1 on white)
PANEL = "#FFFFFF"  # the opaque background of every drawing, so that it reads on a dark page too
PANEL_EDGE = "#C8C8C8"

ROLES: dict[str, Role] = {r.name: r for r in (QUERY, KEY, VALUE, DATA, PARAMETER, MASK, RESIDUAL, HIGHLIGHT)}

# The heatmaps' colour map (matplotlib's "viridis"), sampled at 0, 1/8, ..., 1: drawings that show
# attention weights shade their cells like the heatmaps do, without importing matplotlib.
VIRIDIS = ("#440154", "#472D7B", "#3B528B", "#2C728E", "#21918C", "#28AE80", "#5EC962", "#ADDC30", "#FDE725")


def weight_colour(w: float) -> str:
    """The heatmaps' colour of an attention weight ``w`` in [0, 1] (viridis, linearly interpolated)."""
    if not isinstance(w, (int, float)) or isinstance(w, bool) or not 0.0 <= w <= 1.0:
        raise ValueError(f"w must be a number in [0, 1], got {w!r}")
    x = w * (len(VIRIDIS) - 1)
    i = min(int(x), len(VIRIDIS) - 2)
    a, b = (tuple(int(c[k : k + 2], 16) for k in (1, 3, 5)) for c in VIRIDIS[i : i + 2])
    t = x - i
    return "#" + "".join(f"{round(p + (q - p) * t):02X}" for p, q in zip(a, b))


def text_on(fill: str) -> str:
    """The text colour that reads on ``fill``: ``INK`` on light colours, white on dark ones."""
    r, g, b = (int(fill[k : k + 2], 16) / 255 for k in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return INK if 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.18 else "#FFFFFF"
