"""Drawings of masks: a causal mask and a padding mask combined (01b), and the two boolean conventions,
the course's True = may attend against ``nn.MultiheadAttention``'s True = blocked (03b)."""

from __future__ import annotations

from ...helpers.palette import HIGHLIGHT, INK, KEY, MASK, MUTED, QUERY
from .drawing import drawing
from .svg import Canvas

TOKENS_01B = [4, 7, 1, 0, 0]  # lesson 01b, section 3: batch item 0, two pad tokens (id 0) at the end
PAD = 0


def _mask(c: Canvas, x: float, y: float, allowed, n: int, m: int, cell: float, *, fill_allowed: str = "#FFFFFF",
          text=None) -> None:
    """An n x m boolean mask: allowed cells white (or ``fill_allowed``), blocked cells dark, each marked T or F."""
    c.grid(x, y, n, m, cell, role=MASK, fill=lambda i, j: fill_allowed if allowed(i, j) else MASK.strong,
           text=text or (lambda i, j: "T" if allowed(i, j) else "F"), size=14)


def _axes(c: Canvas, x: float, y: float, n: int, m: int, cell: float, rows: list[str], cols: list[str]) -> None:
    """Query labels down the left (blue, headed "q"), key labels along the bottom (orange, ended by "k")."""
    c.text(x - 8, y - 12, "q", size=14, colour=QUERY.strong, anchor="end", bold=True)
    c.text(x + m * cell + 8, y + n * cell + 16, "k", size=14, colour=KEY.strong, anchor="start", bold=True)
    for i, label in enumerate(rows):
        c.text(x - 8, y + (i + 0.5) * cell, label, size=14, colour=QUERY.strong, anchor="end", bold=True)
    for j, label in enumerate(cols):
        c.text(x + (j + 0.5) * cell, y + n * cell + 16, label, size=14, colour=KEY.strong, bold=True)


@drawing(
    "padding_causal_mask", notebook="01b", section="3. Checking against course_utils and PyTorch",
    title="A causal mask AND a padding mask: the mask of a padded sequence in a decoder",
    alt="""Three boolean masks for batch item 0 of the lesson, the tokens 4, 7, 1, PAD, PAD (queries down the
    left in blue, keys along the bottom in orange). Left, the causal mask of shape (5, 5): True (white) on and
    below the diagonal, False (dark) above it. Middle, the padding mask of shape (1, 5): True for the three real
    tokens and False for the two pad keys; its single row is broadcast over all five queries (the rows drawn
    dashed). Right, their AND, shape (5, 5): a key may be read only if it is not in the future and not padding.
    Rows 0 to 2 are the causal rows; the two pad queries, rows 3 and 4, still read the three real tokens, which
    is harmless because nothing uses the outputs at pad positions. No row is empty, since every query may read
    key 0.""",
)
def padding_causal_mask() -> Canvas:
    n, cell = len(TOKENS_01B), 38
    labels = ["PAD" if t == PAD else str(t) for t in TOKENS_01B]
    real = [t != PAD for t in TOKENS_01B]
    c = Canvas(800, 390)
    y0 = 96
    xs = [70, 330, 582]
    c.text(20, 24, "batch item 0: tokens 4, 7, 1, PAD, PAD", size=15, bold=True, anchor="start")
    titles = [("causal_mask(5)", "(5, 5)"), ("padding_mask", "(1, 5), broadcast"), ("causal & padding", "(5, 5)")]
    for x, (title, shape) in zip(xs, titles):
        c.text(x + n * cell / 2, y0 - 36, title, size=15, bold=True, mono=True)
        c.text(x + n * cell / 2, y0 - 16, shape, size=13, colour=MUTED, mono=True)
        _axes(c, x, y0, n, n, cell, labels, labels)
    _mask(c, xs[0], y0, lambda i, j: j <= i, n, n, cell)
    _mask(c, xs[1], y0, lambda i, j: real[j], 1, n, cell)
    for i in range(1, n):  # the same row, broadcast over the queries
        for j in range(n):
            c.rect(xs[1] + j * cell + 3, y0 + i * cell + 3, cell - 6, cell - 6, fill="#FFFFFF" if real[j] else "#EBEBEB",
                   stroke=MUTED, sw=1, dash="3 3")
    _mask(c, xs[2], y0, lambda i, j: j <= i and real[j], n, n, cell)
    mid = y0 + n * cell / 2
    c.text((xs[0] + n * cell + xs[1]) / 2 - 10, mid, "&", size=22, bold=True)
    c.text((xs[1] + n * cell + xs[2]) / 2 - 10, mid, "=", size=22, bold=True)
    c.rect(xs[2] - 3, y0 + 3 * cell - 3, n * cell + 6, 2 * cell + 6, stroke=HIGHLIGHT.strong, sw=2.5, rx=4)
    c.text(400, y0 + n * cell + 50, "a key may be read if it is not in the future AND not padding", size=15)
    c.text(400, y0 + n * cell + 74, "the pad queries (rows 3, 4, outlined) still read real tokens: harmless, nothing "
           "uses their outputs", size=14, colour=MUTED)
    return c


@drawing(
    "mha_mask_conventions", notebook="03b", section="3. The mask-convention trap",
    title="True = may attend (the course, F.scaled_dot_product_attention) against True = blocked (nn.MultiheadAttention)",
    alt="""Three 5 by 5 masks for the same causal intent, queries down the left, keys along the bottom; white cells
    are the keys a query reads, dark cells the blocked ones. Left, the course's causal_mask(5), True on and
    below the diagonal: in the course's functions and in F.scaled_dot_product_attention, True means may attend,
    so each query reads itself and the past. Middle, what nn.MultiheadAttention needs for the same attention:
    its attn_mask means True = blocked, so pass ~mask, True strictly above the diagonal; the white cells are the
    same as on the left. Right, the mistake: the course's mask passed to nn.MultiheadAttention unchanged. It
    blocks the past and the token itself and lets every query read only the strict future (highlighted in yellow), with
    no error and no warning; the last query has no future, all its keys are blocked, and its row comes out as
    NaN.""",
)
def mha_mask_conventions() -> Canvas:
    n, cell = 5, 34
    c = Canvas(800, 420)
    y0 = 120
    xs = [50, 300, 550]
    labels = [str(k) for k in range(n)]
    c.text(20, 24, "one causal intent, two boolean conventions", size=15, bold=True, anchor="start")
    heads = [("ours / F.sdpa: mask", "True = may attend"), ("nn.MHA: attn_mask=~mask", "True = blocked"),
             ("nn.MHA: attn_mask=mask", "wrong: True read as blocked")]
    for x, (title, sub) in zip(xs, heads):
        c.text(x + n * cell / 2, y0 - 56, title, size=14, bold=True, mono=True)
        c.text(x + n * cell / 2, y0 - 34, sub, size=14, colour=INK)
        _axes(c, x, y0, n, n, cell, labels, labels)
    _mask(c, xs[0], y0, lambda i, j: j <= i, n, n, cell)
    _mask(c, xs[1], y0, lambda i, j: j <= i, n, n, cell, text=lambda i, j: "F" if j <= i else "T")
    _mask(c, xs[2], y0, lambda i, j: j > i, n, n, cell, fill_allowed=HIGHLIGHT.light,
          text=lambda i, j: "F" if j > i else "T")
    c.text(xs[2] + n * cell + 10, y0 + (n - 0.5) * cell, "NaN", size=15, bold=True, anchor="start")
    for k, x in enumerate(xs):
        note = ["reads itself and the past", "the same cells read", "reads only the future"][k]
        c.text(x + n * cell / 2, y0 + n * cell + 42, note, size=14, colour=HIGHLIGHT.strong if k == 2 else INK,
               bold=k == 2)
    c.text(400, 372, "white: read; yellow: read by mistake; dark: blocked. T/F: the boolean each mask stores.",
           size=14, colour=MUTED)
    c.text(400, 396, "the wrong call raises nothing: only a leakage test or a NaN row gives it away", size=14,
           colour=MUTED)
    return c
