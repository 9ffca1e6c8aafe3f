"""Sphinx configuration of the course website.

Build it from the repository root (``docs/requirements.txt`` installed):

    python -m sphinx -W -b html docs docs/_build/html

The pages are generated from the repository before Sphinx reads them
(``course_utils.authoring.site.prepare``): docs/index.md from README.md, docs/notebooks/
from notebooks/ (an exercise's page from its solution's outputs, with the student's stubs;
never a solution), docs/instructors.md from INSTRUCTORS.md when there is one. Edit those, not
the generated files (git-ignored).
"""

import importlib
import sys
import types
from pathlib import Path

DOCS = Path(__file__).resolve().parent


def _tooling(name: str) -> types.ModuleType:
    """Import course_utils.authoring.NAME without course_utils/__init__.py, which imports
    PyTorch and Matplotlib for the notebooks (seconds of the build, and nothing it needs)."""
    if "course_utils" not in sys.modules:
        package = types.ModuleType("course_utils")
        package.__path__ = [str(DOCS.parent / "course_utils")]
        sys.modules["course_utils"] = package
    return importlib.import_module(f"course_utils.authoring.{name}")


# jsonschema (through nbformat) builds dozens of URI grammars at import when rfc3987_syntax is
# installed (JupyterLab's dependencies bring it): about 2 s of a 10 s build, for a format check
# that notebooks never use. Without it, jsonschema skips that check.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
nbtools = _tooling("nbtools")
_tooling("site").prepare(DOCS)

project = "Attention Mechanisms"
author = "the course's authors"
html_show_copyright = False

extensions = [
    "myst_nb",  # notebooks and Markdown pages
    "sphinx-mathjax-offline",  # (the package is named so) MathJax 3 served from _static/, not from a CDN
]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "requirements.txt", "_static"]

# Notebooks are shown with the outputs they store (an exercise with its solution's): nbval (`pytest`) checks those.
nb_execution_mode = "off"
nb_merge_streams = True
# html_image: an <img src="figures/x.svg" width=...> in a notebook is an image Sphinx copies, as ![alt](figures/x.svg) is.
myst_enable_extensions = ["dollarmath", "amsmath", "html_image"]
myst_heading_anchors = 3  # GitHub-style anchors: links such as notebooks/01_x.ipynb#setup work on the site too

html_theme = "sphinx_book_theme"
html_title = project
html_theme_options = {
    "repository_url": f"https://github.com/{nbtools.REPOSITORY}",
    "repository_branch": nbtools.BRANCH,
    # The notebook pages sit in docs/notebooks/ as the notebooks sit in notebooks/: the launch
    # buttons open notebooks/NN_name.ipynb, the same links as nbtools.launch_links.
    "path_to_docs": "",
    "use_repository_button": True,
    "launch_buttons": {
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab",
    },
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
}


# course.css: long code lines scroll, long output lines wrap (never cut off). search_snippets.js: a
# search result's snippet starts with the page's text, not the theme's buttons.
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_js_files = ["search_snippets.js"]


def _remove_stale_pages(app, exception) -> None:
    """A notebook (or INSTRUCTORS.md) that is gone leaves no page behind in an incremental build."""
    if exception is None and app.builder.format == "html":
        out = Path(app.outdir)
        for page in [*out.glob("notebooks/*.html"), out / "instructors.html"]:
            if page.is_file() and page.relative_to(out).with_suffix("").as_posix() not in app.env.found_docs:
                page.unlink()


def setup(app):
    app.connect("build-finished", _remove_stale_pages)
