"""A small SVG writer for the course's drawings: boxes, arrows, grids and text, nothing else.

A ``Canvas`` collects shapes in user units (1 unit = 1 CSS pixel at 100 % zoom) and writes one
self-contained SVG: ``role="img"``, a ``<title>`` and a ``<desc>`` (the alt text), an opaque
panel behind everything (so that a drawing reads on a dark page as on a white one) and labels as
real ``<text>``. The output depends only on the calls made (no clock, no fonts read), so a
drawing regenerated on any machine is byte for byte the same.

Label markup: ``W_{Q}`` writes Q as a subscript, ``x^{2}`` 2 as a superscript; everything else
is literal text (escaped for XML).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ...helpers.palette import DATA, INK, MUTED, PANEL, PANEL_EDGE, Role, text_on

FONT = "'DejaVu Sans', Verdana, 'Segoe UI', Helvetica, Arial, sans-serif"
MONO = "'DejaVu Sans Mono', Menlo, Consolas, monospace"
SIZE = 15  # default label size in px; nothing is drawn below MIN_SIZE
MIN_SIZE = 13
SCRIPT = 0.8  # sub- and superscripts, relative to their label; never below MIN_SCRIPT px
MIN_SCRIPT = 12

# Advance widths of DejaVu Sans (in em) for printable ASCII, to size boxes around labels. DejaVu
# Sans and Verdana are the widest common sans-serif fonts: a label that fits in them fits in any.
_ASCII = (" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~")
_WIDTHS = (
    0.32, 0.4, 0.46, 0.84, 0.64, 0.95, 0.78, 0.27, 0.39, 0.39, 0.5, 0.84, 0.32, 0.36, 0.32, 0.34,
    0.64, 0.64, 0.64, 0.64, 0.64, 0.64, 0.64, 0.64, 0.64, 0.64, 0.34, 0.34, 0.84, 0.84, 0.84, 0.53,
    1.0, 0.68, 0.69, 0.7, 0.77, 0.63, 0.58, 0.77, 0.75, 0.29, 0.29, 0.66, 0.56, 0.86, 0.75, 0.79,
    0.6, 0.79, 0.69, 0.63, 0.61, 0.73, 0.68, 0.99, 0.69, 0.61, 0.69, 0.39, 0.34, 0.39, 0.84, 0.5,
    0.5, 0.61, 0.63, 0.55, 0.63, 0.62, 0.35, 0.63, 0.63, 0.28, 0.28, 0.58, 0.28, 0.97, 0.63, 0.61,
    0.63, 0.63, 0.41, 0.52, 0.39, 0.63, 0.59, 0.82, 0.59, 0.59, 0.52, 0.64, 0.34, 0.64, 0.84,
)
_WIDTH = dict(zip(_ASCII, _WIDTHS))
_MARKUP = re.compile(r"([_^])\{([^{}]*)\}")


def runs(label: str) -> list[tuple[str, str]]:
    """``"W_{Q} x"`` -> ``[("W", ""), ("Q", "sub"), (" x", "")]``: the pieces of a label and their position."""
    out, last = [], 0
    for m in _MARKUP.finditer(label):
        if m.start() > last:
            out.append((label[last : m.start()], ""))
        out.append((m.group(2), "sub" if m.group(1) == "_" else "sup"))
        last = m.end()
    if last < len(label):
        out.append((label[last:], ""))
    return out


def text_width(label: str, size: float = SIZE, *, mono: bool = False, bold: bool = False) -> float:
    """Width in px of a one-line label (markup allowed) in the drawings' font at ``size`` px."""
    total = 0.0
    for piece, kind in runs(label):
        scale = SCRIPT if kind else 1.0
        em = 0.602 * len(piece) if mono else sum(_WIDTH.get(c, 0.8) for c in piece)
        total += em * size * scale
    return total * (1.06 if bold else 1.0)


def num(x: float) -> str:
    """A coordinate as the SVG writes it: at most one decimal, no trailing zeros."""
    text = f"{x:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class Canvas:
    """Shapes in the order they are drawn (later on top); ``to_svg`` writes the file."""

    def __init__(self, width: float, height: float) -> None:
        self.width, self.height = width, height
        self._items: list[str] = []
        self._arrow_colours: list[str] = []

    # --- primitives ---------------------------------------------------------------------------

    def rect(self, x: float, y: float, w: float, h: float, *, fill: str = "none", stroke: str | None = INK,
             sw: float = 1.5, rx: float = 0, dash: str | None = None) -> None:
        attrs = f'x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}"'
        attrs += f' rx="{num(rx)}"' if rx else ""
        attrs += f' stroke="{stroke}" stroke-width="{num(sw)}"' if stroke else ""
        attrs += f' stroke-dasharray="{dash}"' if dash else ""
        self._items.append(f"<rect {attrs}/>")

    def circle(self, cx: float, cy: float, r: float, *, fill: str = "none", stroke: str | None = INK,
               sw: float = 1.5) -> None:
        stroke_attrs = f' stroke="{stroke}" stroke-width="{num(sw)}"' if stroke else ""
        self._items.append(f'<circle cx="{num(cx)}" cy="{num(cy)}" r="{num(r)}" fill="{fill}"{stroke_attrs}/>')

    def text(self, x: float, y: float, label: str, *, size: float = SIZE, colour: str = INK, anchor: str = "middle",
             bold: bool = False, italic: bool = False, mono: bool = False, halo: str | None = None) -> None:
        """One line of text whose vertical centre is ``y``; ``anchor``: start, middle or end at ``x``;
        ``halo``: a colour drawn around the letters, so that they read across lines."""
        if size < MIN_SIZE:
            raise ValueError(f"text of {size} px is too small to read (at least {MIN_SIZE} px): {label!r}")
        if _MARKUP.search(label) and size * SCRIPT < MIN_SCRIPT:
            raise ValueError(f"the sub- or superscripts of {label!r} would be {size * SCRIPT:.1f} px: at least "
                             f"{MIN_SCRIPT} px needs a label of {MIN_SCRIPT / SCRIPT:g} px or more")
        attrs = f'x="{num(x)}" y="{num(y + 0.36 * size)}" font-size="{num(size)}" fill="{colour}"'
        attrs += f' text-anchor="{anchor}"' if anchor != "start" else ""
        attrs += ' font-weight="bold"' if bold else ""
        attrs += ' font-style="italic"' if italic else ""
        attrs += f' font-family="{MONO}"' if mono else ""
        attrs += f' stroke="{halo}" stroke-width="5" stroke-linejoin="round" paint-order="stroke"' if halo else ""
        if "  " in label:  # keep runs of spaces (aligned columns): SVG would collapse them
            label = label.replace(" ", "\u00a0")
        body, shift = [], 0.0
        for piece, kind in runs(label):
            target = {"sub": 0.3, "sup": -0.45, "": 0.0}[kind] * size
            dy = target - shift
            shift = target
            if not kind and not dy:
                body.append(esc(piece))
                continue
            small = f' font-size="{num(SCRIPT * size)}"' if kind else ""
            body.append(f'<tspan dy="{num(dy)}"{small}>{esc(piece)}</tspan>')
        self._items.append(f"<text {attrs}>{''.join(body)}</text>")

    def lines(self, x: float, y: float, labels: Sequence[str], *, size: float = SIZE, leading: float = 1.3,
              **style) -> None:
        """Several lines of text centred as a block on ``y``."""
        top = y - (len(labels) - 1) * size * leading / 2
        for k, label in enumerate(labels):
            self.text(x, top + k * size * leading, label, size=size, **style)

    def path(self, d: str, *, colour: str = INK, sw: float = 2, fill: str = "none", arrow: str | None = None,
             dash: str | None = None) -> None:
        """Any SVG path ``d``; ``arrow``: ``"end"``, ``"start"`` or ``"both"`` for arrowheads."""
        attrs = f'd="{d}" fill="{fill}" stroke="{colour}" stroke-width="{num(sw)}"'
        attrs += f' stroke-dasharray="{dash}"' if dash else ""
        if arrow:
            marker = self._marker(colour)
            if arrow in ("end", "both"):
                attrs += f' marker-end="url(#{marker})"'
            if arrow in ("start", "both"):
                attrs += f' marker-start="url(#{marker})"'
        self._items.append(f'<path {attrs} stroke-linejoin="round"/>')

    def line(self, *points: tuple[float, float], colour: str = INK, sw: float = 2, arrow: str | None = "end",
             dash: str | None = None) -> None:
        """A polyline through ``points``, by default with an arrowhead at the last point."""
        d = "M" + " L".join(f"{num(x)},{num(y)}" for x, y in points)
        self.path(d, colour=colour, sw=sw, arrow=arrow, dash=dash)

    def _marker(self, colour: str) -> str:
        if colour not in self._arrow_colours:
            self._arrow_colours.append(colour)
        return f"arrow{self._arrow_colours.index(colour)}"

    # --- composites ---------------------------------------------------------------------------

    def box(self, x: float, y: float, w: float, h: float, label: str | Sequence[str] = "", *, role: Role = DATA,
            size: float = SIZE, bold: bool = False, mono: bool = False, note: str | None = None,
            dash: str | None = None, sw: float = 1.8, rx: float = 7, fill: str | None = None) -> None:
        """A rounded box filled with the role's tint and outlined in its colour; ``label`` (one line or a
        list) centred in it, ``note`` (smaller, grey) as a last line."""
        self.rect(x, y, w, h, fill=fill or role.light, stroke=role.strong, sw=sw, rx=rx, dash=dash)
        labels = [label] if isinstance(label, str) else list(label)
        labels = [t for t in labels if t]
        rows = len(labels) + (1 if note else 0)
        top = y + h / 2 - (rows - 1) * size * 1.3 / 2
        for k, t in enumerate(labels):
            self.text(x + w / 2, top + k * size * 1.3, t, size=size, bold=bold, mono=mono)
        if note:
            note_size = MIN_SCRIPT / SCRIPT if _MARKUP.search(note) else max(MIN_SIZE, size - 2)
            self.text(x + w / 2, top + len(labels) * size * 1.3, note, size=note_size, colour=MUTED,
                      mono=not _MARKUP.search(note))

    def grid(self, x: float, y: float, rows: int, cols: int, cell: float, *, role: Role = DATA,
             fill: Callable[[int, int], str] | None = None, text: Callable[[int, int], str | None] | None = None,
             size: float = MIN_SIZE, sw: float = 1.2) -> None:
        """A matrix drawn as ``rows x cols`` square cells of ``cell`` px; cell ``(i, j)`` filled with
        ``fill(i, j)`` (default the role's tint), holding ``text(i, j)``; outlined in the role's colour."""
        colours = [[fill(i, j) if fill else role.light for j in range(cols)] for i in range(rows)]
        for i in range(rows):  # neighbouring cells of one colour share a rectangle
            j = 0
            while j < cols:
                end = j
                while end + 1 < cols and colours[i][end + 1] == colours[i][j]:
                    end += 1
                self.rect(x + j * cell, y + i * cell, (end - j + 1) * cell, cell, fill=colours[i][j], stroke=None)
                j = end + 1
        inner = [f"M{num(x)},{num(y + i * cell)} h{num(cols * cell)}" for i in range(1, rows)]
        inner += [f"M{num(x + j * cell)},{num(y)} v{num(rows * cell)}" for j in range(1, cols)]
        if inner:
            thin = num(max(1.0, sw * 0.6))
            self._items.append(f'<path d="{" ".join(inner)}" stroke="{role.strong}" stroke-width="{thin}"/>')
        for i in range(rows):
            for j in range(cols):
                label = text(i, j) if text else None
                if label:
                    self.text(x + (j + 0.5) * cell, y + (i + 0.5) * cell, label, size=size,
                              colour=text_on(colours[i][j]))
        self.rect(x, y, cols * cell, rows * cell, stroke=role.strong, sw=sw + 0.6)

    def matrix(self, x: float, y: float, rows: int, cols: int, cell: float, name: str,
               shape: str | Sequence[str] = (), *, role: Role = DATA, name_size: float = 17, **grid) -> None:
        """A named matrix: ``name`` above the grid (bold, in the role's colour), ``shape`` (one line or
        several) under it in grey monospace."""
        self.grid(x, y, rows, cols, cell, role=role, **grid)
        cx = x + cols * cell / 2
        colour = INK if role.name in ("data", "parameter") else role.strong
        self.text(cx, y - 14, name, size=name_size, bold=True, colour=colour)
        for k, line in enumerate([shape] if isinstance(shape, str) else shape):
            self.text(cx, y + rows * cell + 15 + 17 * k, line, size=MIN_SIZE, colour=MUTED, mono=True)

    # --- output -------------------------------------------------------------------------------

    def to_svg(self, title: str, desc: str) -> str:
        """The SVG document: ``title`` and ``desc`` (the alt text) first, for screen readers and search."""
        w, h = num(self.width), num(self.height)
        markers = "".join(
            f'<marker id="arrow{k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" markerHeight="10" '
            f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0.8 L10,5 L0,9.2 z" '
            f'fill="{colour}"/></marker>'
            for k, colour in enumerate(self._arrow_colours)
        )
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'role="img" aria-labelledby="title desc" font-family="{FONT}">'
        )
        lines = [
            head,
            f'<title id="title">{esc(title)}</title>',
            f'<desc id="desc">{esc(desc)}</desc>',
            f"<defs>{markers}</defs>" if markers else "",
            f'<rect x="0.5" y="0.5" width="{num(self.width - 1)}" height="{num(self.height - 1)}" rx="8" '
            f'fill="{PANEL}" stroke="{PANEL_EDGE}"/>',
            *self._items,
            "</svg>",
        ]
        return "\n".join(line for line in lines if line) + "\n"
