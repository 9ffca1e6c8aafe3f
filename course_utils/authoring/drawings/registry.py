"""Which drawings the course has: each one's name, notebook, title and alt text, beside the code that draws it.

A drawing function is registered with ``@drawing(...)``; its alt text is written there, next to the
source. ``NAMES`` fixes the names (notebook owners place ``<!-- drawing: NAME -->`` markers with them)
and their order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .svg import Canvas

NAMES = (
    "qkv_projection",
    "heads_split_merge",
    "decoder_step",
    "causal_mask_sentence",
    "transformer_block",
    "lm_stack",
    "kv_cache",
    "tiled_attention",
    "rope_rotation",
    "grouped_query_attention",
    "induction_circuit",
)


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


_REGISTERED: dict[str, Drawing] = {}


def drawing(name: str, *, notebook: str, section: str, title: str, alt: str):
    """Register the decorated function (no arguments, returns a ``Canvas``) as drawing ``name``."""
    if name not in NAMES:
        raise ValueError(f"unknown drawing name {name!r}; the names are {NAMES}")
    if not alt.strip() or not title.strip():
        raise ValueError(f"drawing {name!r} needs a title and an alt text")

    def register(fn: Callable[[], Canvas]) -> Callable[[], Canvas]:
        _REGISTERED[name] = Drawing(name, notebook, section, title, " ".join(alt.split()), fn)
        return fn

    return register


def drawings() -> dict[str, Drawing]:
    """Every drawing, in the order of ``NAMES``."""
    from . import architectures, attention, circuits, inference, rope  # noqa: F401 (registering imports)

    missing = [n for n in NAMES if n not in _REGISTERED]
    if missing:
        raise RuntimeError(f"drawings without a source: {missing}")
    return {n: _REGISTERED[n] for n in NAMES}
