"""One drawing: the ``Drawing`` record (name, notebook, title, alt text, the function that draws it) and
the ``@drawing(...)`` decorator that makes one from a drawing function, its alt text written next to the
source. The drawing modules (``attention``, ``lessons``, ...) import this module; ``registry`` imports them
and lists their drawings, so that imports run one way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .svg import Canvas


@dataclass(frozen=True)
class Drawing:
    """One drawing: where it belongs and what it says in words (``alt``, also the SVG's ``<desc>``)."""

    name: str
    notebook: str  # the lesson it belongs to, e.g. "01" or "03/03b"
    section: str  # where in that lesson: what the prose next to it explains
    title: str  # short, the SVG's <title>
    alt: str  # what a reader who cannot see it needs: the structure, in full sentences
    draw: Callable[[], Canvas]

    def svg(self) -> str:
        return self.draw().to_svg(self.title, self.alt)


def drawing(name: str, *, notebook: str, section: str, title: str, alt: str) -> Callable[[Callable[[], Canvas]], Drawing]:
    """Make the decorated function (no arguments, returns a ``Canvas``) drawing ``name``: the module
    attribute becomes the ``Drawing``, which ``registry`` collects."""
    if not name.isidentifier():
        raise ValueError(f"a drawing's name is an identifier (it names a file and a marker), got {name!r}")
    if not alt.strip() or not title.strip():
        raise ValueError(f"drawing {name!r} needs a title and an alt text")

    def make(fn: Callable[[], Canvas]) -> Drawing:
        return Drawing(name, notebook, section, title, " ".join(alt.split()), fn)

    return make
