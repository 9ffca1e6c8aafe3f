"""Widgets that read well where no kernel runs them (GitHub, the course website, JupyterLab before Run All).

A notebook stores, for each widget it displayed, only a fallback: by default ipywidgets stores
the widget's ``repr``, a raw ``VBox(children=(...))``. ``ReadableVBox`` stores one sentence
instead, as text and as HTML.
"""

from __future__ import annotations

import html

import ipywidgets as widgets


class ReadableVBox(widgets.VBox):
    """A ``VBox`` whose stored fallback is ``fallback`` (a sentence) instead of its repr."""

    fallback = "Interactive widget: run the notebook in Jupyter to use it."

    def __repr__(self) -> str:
        return self.fallback

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.fallback
        bundle["text/html"] = f"<p><i>{html.escape(self.fallback)}</i></p>"
        return bundle
