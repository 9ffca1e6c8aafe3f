"""Drawings inside notebooks: a marker line says where, the drawing is stored in the cell right under it.

A notebook owner writes, in a markdown cell (a cell of its own, or the end of the cell whose prose
explains the drawing), the line::

    <!-- drawing: qkv_projection -->

and ``python -m course_utils.authoring.drawings --embed NOTEBOOK`` puts the drawing on the next line,
as an HTML image whose source is the SVG itself (a ``data:`` URL) and whose ``alt`` is the drawing's
alt text from the registry::

    <!-- drawing: qkv_projection -->
    <img src="data:image/svg+xml;base64,PHN2Zy..." alt="Left, the input X: ...">

Run again, it replaces that line with the current drawing and leaves the marker. Why this form:
the notebook carries its drawings, so they show wherever the notebook goes alone (Colab opens one
notebook from GitHub; a student downloads one file; the student versions are copied from the
solutions in another folder, so a relative path would break there); JupyterLab does not show SVG
*attachments* (``![](attachment:x.svg)``: it renders only raster attachments), but shows an
``<img>`` with an SVG ``data:`` URL; GitHub shows it too; and MyST (the course site) passes an HTML
image through as it is, where it would refuse a Markdown image with an SVG ``data:`` URL.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from dataclasses import dataclass

import nbformat

from .drawing import Drawing
from .svg import esc

MARKER = re.compile(r"<!--\s*drawing:\s*([A-Za-z0-9_]+)\s*-->")
IMAGE = re.compile(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]*)" alt="([^"]*)">')


def image_line(d: Drawing, svg: str | None = None) -> str:
    """The HTML line that shows drawing ``d`` (its SVG inline, its alt text)."""
    data = base64.b64encode((svg if svg is not None else d.svg()).encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="{esc(d.alt)}">'


@dataclass(frozen=True)
class Embedded:
    """A drawing found in a notebook: its marker's name, the alt text and SVG of the image under it."""

    cell: int  # index of the markdown cell
    name: str
    alt: str | None  # None when no image follows the marker yet
    svg: str | None


def _marker_name(line: str, where: str) -> str | None:
    """The drawing name if ``line`` is a marker line; ValueError for a marker that shares its line."""
    m = MARKER.search(line)
    if m is None:
        return None
    if line.strip() != m.group(0):
        raise ValueError(f"{where}: put the marker {m.group(0)!r} on a line of its own, got {line.strip()!r}")
    return m.group(1)


def _markdown_lines(nb: nbformat.NotebookNode) -> list[tuple[int, list[str]]]:
    """``(cell index, its lines)`` of every markdown cell of ``nb``."""
    return [(index, cell.source.split("\n")) for index, cell in enumerate(nb.cells) if cell.cell_type == "markdown"]


def find(nb: nbformat.NotebookNode) -> list[Embedded]:
    """Every marker of a notebook, in order, with the drawing stored under it (if any)."""
    found = []
    for index, lines in _markdown_lines(nb):
        for k, line in enumerate(lines):
            name = _marker_name(line, f"cell {index}")
            if name is None:
                continue
            m = IMAGE.fullmatch(lines[k + 1].strip()) if k + 1 < len(lines) else None
            svg = base64.b64decode(m.group(1)).decode("utf-8") if m else None
            found.append(Embedded(index, name, html.unescape(m.group(2)) if m else None, svg))
    return found


def orphans(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of markdown cells holding an embedded drawing whose marker line is gone."""
    return [index for index, lines in _markdown_lines(nb) for k, line in enumerate(lines)
            if IMAGE.fullmatch(line.strip()) and (k == 0 or not MARKER.fullmatch(lines[k - 1].strip()))]


def embed(nb: nbformat.NotebookNode, drawings: Mapping[str, Drawing]) -> list[str]:
    """Insert or refresh the drawing under every marker of ``nb`` (in place); returns the names embedded.

    ValueError for a marker naming no drawing, or sharing its line with other text."""
    done = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or "drawing:" not in cell.source:
            continue
        lines, out, k = cell.source.split("\n"), [], 0
        while k < len(lines):
            line = lines[k]
            out.append(line)
            k += 1
            name = _marker_name(line, f"cell {index}")
            if name is None:
                continue
            if name not in drawings:
                raise ValueError(f"cell {index}: no drawing named {name!r}; the drawings are {sorted(drawings)}")
            if k < len(lines) and IMAGE.fullmatch(lines[k].strip()):
                k += 1  # the old copy: replaced below
            out.append(image_line(drawings[name]))
            if k < len(lines) and lines[k].strip():
                out.append("")  # an HTML block ends at a blank line: the prose after it stays Markdown
            done.append(name)
        cell.source = "\n".join(out)
    return done


def problems(nb: nbformat.NotebookNode, drawings: Mapping[str, Drawing], svgs: Mapping[str, str]) -> list[str]:
    """What is out of date in a notebook: a marker with no drawing under it or an unknown name, a stored
    drawing that differs from ``svgs[name]`` (the generated SVG) or whose alt text is empty or not the
    registry's, an embedded drawing without its marker."""
    found = []
    for e in find(nb):
        where = f"cell {e.cell} ({e.name})"
        if e.name not in drawings:
            found.append(f"{where}: no drawing has this name")
        elif e.svg is None:
            found.append(f"{where}: marker without its drawing")
        else:
            if e.svg != svgs[e.name]:
                found.append(f"{where}: the stored drawing differs from the generated one")
            if not (e.alt or "").strip():
                found.append(f"{where}: empty alt text")
            elif e.alt != drawings[e.name].alt:
                found.append(f"{where}: the alt text differs from the registry's")
    found += [f"cell {i}: an embedded drawing without its marker line" for i in orphans(nb)]
    return found
