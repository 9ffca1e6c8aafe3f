"""The induction circuit: two attention heads in two layers that copy from context (07b)."""

from __future__ import annotations

from ...helpers.palette import DATA, HIGHLIGHT, INK, KEY, MUTED, QUERY, RESIDUAL, VALUE
from .drawing import drawing
from .svg import Canvas, num

_BAND = "#F4F4F4"  # the layers' background
_TOKENS = ["K", "A", "B", "F", "C", "A"]  # ... A B ... A: the last A should predict B


def _hop(c: Canvas, x0: float, x1: float, y: float, height: float, *, colour: str, sw: float = 2.2,
         dash: str | None = None) -> None:
    """A curved arrow above height ``y`` from the stream at ``x0`` to the stream at ``x1``."""
    mid = (x0 + x1) / 2
    c.path(f"M{num(x0)},{num(y)} Q{num(mid)},{num(y - height)} {num(x1 - 3)},{num(y - 2)}", colour=colour, sw=sw,
           arrow="end", dash=dash)


@drawing(
    "induction_circuit", notebook="07b", section="the two-head circuit",
    title="An induction head: a previous-token head in layer 1, a head that matches on it in layer 2",
    alt="""Six token positions from left to right, K A B F C A, each with its residual stream drawn as a grey
    vertical line rising from the token through two layers; the last token, A, must predict the next one.
    Layer 1 (lower band) holds a previous-token head: every position attends to the position just before it
    and copies that token into its own stream (faint arrows from each position to the next). The one that
    matters: at the position of B, the head reads A from the position before and writes "my previous token
    was A" into B's stream, drawn as a tag on that stream. Layer 2 (upper band) holds the induction head. At
    the last position, the current token A forms a query (blue) that asks "which position's previous token
    was A?"; the tag on B's stream, "my previous token was A", serves as the matching key (orange), so the
    head attends to B's position
    and copies its value, the token B (green arrow), into the last position's stream. The model predicts B:
    the token that followed the earlier A. Neither head can do it alone: layer 2's key exists only because
    layer 1 wrote it.""",
)
def induction_circuit() -> Canvas:
    c = Canvas(800, 540)
    xs = [250 + 96 * k for k in range(len(_TOKENS))]
    bottom, top = 470, 104
    # Layers as bands, residual streams as grey lines.
    c.rect(24, 330, 760, 84, fill=_BAND, stroke="#D0D0D0", sw=1.2, rx=8)
    c.rect(24, 122, 760, 134, fill=_BAND, stroke="#D0D0D0", sw=1.2, rx=8)
    c.lines(40, 372, ["layer 1", "previous-token head"], size=14, anchor="start")
    c.lines(40, 189, ["layer 2", "induction head"], size=14, anchor="start")
    for k, (x, token) in enumerate(zip(xs, _TOKENS)):
        c.line((x, bottom), (x, top), colour=RESIDUAL.strong, sw=4, arrow=None)
        role = HIGHLIGHT if k in (1, 5) else DATA
        c.box(x - 22, bottom, 44, 40, token, role=role, size=18, bold=True)
        c.text(x, bottom + 54, str(k), size=13, colour=MUTED)
    c.text(40, bottom + 20, "tokens", size=14, anchor="start")
    c.text(40, bottom + 54, "position", size=13, colour=MUTED, anchor="start")
    c.text(40, top + 6, "residual streams", size=13, colour=RESIDUAL.strong, anchor="start")

    # Layer 1: every position reads the one before it; at B it reads A and writes "prev = A".
    for k in range(1, len(xs)):
        if k != 2:
            _hop(c, xs[k - 1], xs[k], 394, 30, colour="#ADADAD", sw=1.5)
    _hop(c, xs[1], xs[2], 394, 38, colour=VALUE.strong, sw=2.8)
    c.text((xs[1] + xs[2]) / 2, 350, "A", size=15, bold=True, colour=VALUE.strong)
    c.box(xs[2] - 68, 266, 136, 48, ["my previous", "token was A"], role=DATA, size=14, bold=True)
    c.lines(40, 290, ["layer 1 wrote this", "into B's stream"], size=13, colour=MUTED, anchor="start")

    # Layer 2: the last A asks which position's previous token was A, matches B's position, copies B.
    c.text(xs[2], 194, "key", size=13, bold=True, colour=KEY.strong)
    c.box(xs[2] - 68, 204, 136, 46, ["my previous", "token was A"], role=KEY, size=14)
    c.text(692, 194, "query", size=13, bold=True, colour=QUERY.strong)
    c.box(600, 204, 184, 46, ["which position's previous", "token was A?"], role=QUERY, size=14)
    c.line((596, 227), (xs[2] + 72, 227), colour=INK, sw=1.8, dash="6 4", arrow="end")
    c.text((xs[2] + 68 + 600) / 2, 242, "match", size=13, colour=INK, halo=_BAND)
    _hop(c, xs[2], xs[5], 180, 34, colour=VALUE.strong, sw=2.8)
    c.text((xs[2] + xs[5]) / 2, 142, "attends to B's position, copies its value: B", size=14, bold=True,
           colour=VALUE.strong, halo=_BAND)

    # The prediction.
    c.line((xs[5], top), (xs[5], 92))
    c.box(xs[5] - 56, 50, 112, 38, "next: B", role=HIGHLIGHT, size=16, bold=True)
    c.text(xs[5] - 70, 69, "the token that followed the earlier A", size=14, colour=MUTED, anchor="end")
    return c
