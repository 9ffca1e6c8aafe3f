"""The course website (docs/): its generated sources, and the built site as a reader sees it.

Build the site first (``docs/requirements.txt`` installed), from the repository root:

    python -m sphinx -W -b html docs docs/_build/html

The first tests check ``course_utils.authoring.site``, which writes the site's pages from the
repository, and need nothing built: an exercise's page is its solved run with the student's
stubs, drawings are copied beside the pages. The others read the built site (docs/_build/html,
or $SITE_DIR): every notebook of notebooks/ has a page with as many figures as its solved run
(outputs and drawings), and none of notebooks/solutions/ does; no page shows a traceback, a
`# needs task` line, a waiting cell's line, `NotImplementedError` outside a stub, a line of a
solution, a widget's raw repr or a path of the machine that built it; launch links open the
student version; nothing is loaded from the network; and a real headless Chromium (Debian's
``chromium``, driven by Playwright, as in tests/test_browser.py) draws a page's figures and its
formulas (MathJax, served locally).

Without a built site (or without Chromium or Playwright, for the browser test) these tests
are skipped on a developer's machine; in CI (environment variable ``CI`` set) they fail:
.ci/site builds the site and installs both.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import nbformat
import pytest

from course_utils.authoring import nbtools, site, site_text
from course_utils.authoring.nbtools import BEGIN, NOTEBOOKS, ROOT, SOLUTIONS, STUB, launch_links, make_student_notebook
from course_utils.authoring.student_versions import END, is_task_cell, solution_lines
from course_utils.helpers.tasks import WAITING

SITE = Path(os.environ.get("SITE_DIR", ROOT / "docs" / "_build" / "html"))
BUILD = "python -m sphinx -W -b html docs docs/_build/html"
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
LAUNCH = re.compile(r"^https://(mybinder\.org/v2/|colab\.research\.google\.com/github/)")
MACHINE_PATH = re.compile(r"(/home/|/work/|/tmp/|/root/|/Users/|site-packages|\\Users\\)")
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^-{20,}\s*$|^\w+(Error|Exception): |Error displaying widget", re.M)
WIDGET_REPR = re.compile(r"\b[A-Z]\w*Box\(children=|\b(Output|Button|Dropdown|IntSlider|FloatSlider)\((layout|description|value)=")
CHROMIUM_FLAGS = [  # as in tests/test_browser.py: root, no GPU, no network but loopback
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT_DIR = Path(os.environ.get("SITE_TEST_SCREENSHOTS", tempfile.gettempdir()))


def _missing(reason: str) -> None:
    """Skip on a developer's machine; fail in CI, where .ci/site builds the site and installs the browser."""
    if IN_CI:
        pytest.fail(f"{reason}, and CI is set: .ci/site must provide it")
    pytest.skip(f"{reason} (in CI this fails instead)")


def student_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


# --- Reading a page ----------------------------------------------------------------------------------------


class Page(html.parser.HTMLParser):
    """What a test needs from one HTML page: links, scripts, images, and the text of cell outputs."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path = path
        self.links: list[str] = []  # href of every <a>
        self.assets: list[str] = []  # src of scripts and images, href of stylesheets and icons
        self.output_images: list[str] = []  # src of every <img> inside a cell's output
        self.drawings: list[str] = []  # src of every other <img> of the article (images in the notebook's text)
        self.output_text: list[str] = []
        self.code_text: list[str] = []  # the text of every <pre>
        self.text: list[str] = []  # every text of the page but scripts and styles
        self.title = ""  # the text of <title>
        self.link_texts: list[str] = []  # the text of every <a> (the sidebar's entries among them)
        self.image_alts: list[tuple[str, str | None]] = []  # (src, alt) of every <img> of the article
        self._title = self._link = 0
        self._divs: list[bool] = []  # for each open <div>: does it open a cell output?
        self._pre = self._article = self._hidden = 0
        self.feed(path.read_text(encoding="utf-8"))

    @property
    def in_output(self) -> bool:
        return any(self._divs)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div":
            self._divs.append("cell_output" in (a.get("class") or "").split())
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])
            self.link_texts.append("")
            self._link += 1
        elif tag == "title":
            self._title += 1
        elif tag in ("script", "img") and a.get("src"):
            self.assets.append(a["src"])
            if tag == "img" and self._article:
                self.image_alts.append((a["src"], a.get("alt")))
            if tag == "img" and self.in_output:
                self.output_images.append(a["src"])
            elif tag == "img" and self._article:
                self.drawings.append(a["src"])
        elif tag == "link" and a.get("href") and {"stylesheet", "icon", "preload"} & set((a.get("rel") or "").split()):
            self.assets.append(a["href"])
        elif tag == "pre":
            self._pre += 1
            self.code_text.append("")
        elif tag == "article":
            self._article += 1
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag):
        if tag == "div" and self._divs:
            self._divs.pop()
        elif tag == "pre" and self._pre:
            self._pre -= 1
        elif tag == "article" and self._article:
            self._article -= 1
        elif tag == "a" and self._link:
            self._link -= 1
        elif tag == "title" and self._title:
            self._title -= 1
        elif tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data):
        if self._title:
            self.title += data
        if self._link and self.link_texts:
            self.link_texts[-1] += data
        if self.in_output:
            self.output_text.append(data)
        if self._pre:
            self.code_text[-1] += data
        if not self._hidden:
            self.text.append(data)


def solved_source(notebook: Path) -> Path:
    """The notebook whose run a page shows: the solution twin if there is one."""
    return SOLUTIONS / notebook.name if (SOLUTIONS / notebook.name).is_file() else notebook


def figures_of(nb: nbformat.NotebookNode) -> int:
    """The figures a reader of the solved notebook sees: image outputs (not of task cells, whose page shows
    the stub) and the images of its Markdown (drawings: Markdown or HTML images, attachments; not the badges)."""
    outputs = sum(1 for c in nb.cells if c.cell_type == "code" and not is_task_cell(c.source)
                  for o in c.outputs if set(IMAGE_TYPES) & set(o.get("data", {})))  # fmt: skip
    drawings = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown" and nbtools.BADGES_TAG not in cell.metadata.get("tags", []):
            targets = [m.group("target") for m in site.LINK.finditer(cell.source) if m.group("bang")]
            targets += [m.group("target") for m in site.HTML_IMAGE.finditer(cell.source)]
            drawings += sum(1 for t in targets if not re.match(r"^(https?:)?//", t))
    return outputs + drawings


def published_text() -> str:
    """What the course shows anyway, as one text: the cells of the notebooks in notebooks/ and the
    solutions' lines outside their solution regions (lesson code that a task repeats is no leak)."""
    lines = []
    for path in [*NOTEBOOKS.glob("*.ipynb"), *SOLUTIONS.glob("*.ipynb")]:
        for cell in nbformat.read(path, as_version=4).cells:
            inside = False
            for line in cell.source.splitlines():
                inside = (line.strip() == BEGIN) or (inside and line.strip() != END)
                if not inside:
                    lines.append(line)
    return "\n".join(lines)


def leaked(text: str, secrets: set[str]) -> list[str]:
    """The lines of ``secrets`` that ``text`` (a page's text) contains."""
    return sorted(line for line in secrets if line in text)


@pytest.fixture(scope="module")
def built() -> Path:
    if not (SITE / "index.html").is_file():
        _missing(f"the course website is not built ({SITE / 'index.html'} missing; build it with `{BUILD}`)")
    return SITE


@pytest.fixture(scope="module")
def pages(built) -> dict[str, Page]:
    """Every HTML page of the site, by its path relative to the site's root."""
    return {p.relative_to(built).as_posix(): Page(p) for p in sorted(built.rglob("*.html")) if "_static" not in p.parts}


def _page_of(notebook: Path) -> str:
    return f"{site.PAGES}/{notebook.stem}.html"


# --- The generated sources (nothing built needed) -------------------------------------------------------------


def test_readme_rows_are_read_in_order_and_every_notebook_is_published():
    readme = site.README.read_text(encoding="utf-8")
    rows = site.site_rows(readme)
    listed = [r.path for r in site.readme_rows(readme)]
    assert listed and [r.path for r in rows][: len(listed)] == listed
    assert sorted(r.path for r in rows) == sorted(f"notebooks/{p.name}" for p in student_notebooks())
    assert not any("solutions" in r.path for r in rows)


def test_a_notebook_the_readme_does_not_list_yet_is_published_after_the_others(tmp_path):
    for name in ("01_a.ipynb", "02_b.ipynb", "15_new.ipynb"):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# Title of {name}\n\ntext")])
        nbformat.write(nb, tmp_path / name)
    readme = "| 02 | [B](notebooks/02_b.ipynb) | b | x |\n| 01 | [A](notebooks/01_a.ipynb) | a | x |\n"
    rows = site.site_rows(readme, tmp_path)
    assert [(r.number, r.title, r.path) for r in rows] == [
        ("02", "B", "notebooks/02_b.ipynb"),
        ("01", "A", "notebooks/01_a.ipynb"),
        ("15", "Title of 15_new.ipynb", "notebooks/15_new.ipynb"),
    ]


def test_a_page_drops_tracebacks_widget_views_and_the_colab_cell_and_keeps_fallbacks():
    widget = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    code = nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="before\n"),
        nbformat.v4.new_output("error", ename="NotImplementedError", evalue="Your turn", traceback=["Traceback ..."]),
        nbformat.v4.new_output("display_data", data={site.WIDGET_VIEW: widget, "text/plain": "VBox(children=(HTML(value='Q1'),))"}),
        nbformat.v4.new_output("display_data", data={site.WIDGET_VIEW: widget, "text/plain": "Interactive explorer: run it in Jupyter."}),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
    ])  # fmt: skip
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("badges", metadata={"tags": ["course-badges"]}),
        nbformat.v4.new_markdown_cell("# 99 · A title\n\nIntro."),
        nbformat.v4.new_code_cell("colab", metadata={"tags": ["colab-setup"]}),
        code,
    ])  # fmt: skip
    nb.metadata["widgets"] = {"state": {}}
    path = NOTEBOOKS / "99_example.ipynb"
    page = site.page_notebook(nb, path)
    assert [c.source.splitlines()[0] for c in page.cells] == ["# 99 · A title", "x"]
    binder, colab = launch_links(path)
    assert binder in page.cells[0].source and colab in page.cells[0].source
    outputs = page.cells[1].outputs
    assert [o.output_type for o in outputs] == ["stream", "display_data", "display_data"]
    assert outputs[1].data == {"text/plain": "Interactive explorer: run it in Jupyter."}
    assert "image/png" in outputs[2].data
    assert "widgets" not in page.metadata
    assert len(nb.cells) == 4 and len(code.outputs) == 5, "the notebook itself is left as it was"


def test_links_to_pages_stay_and_other_repository_links_go_to_github():
    pages = {"notebooks/01_a.ipynb"}
    text = "[one](notebooks/01_a.ipynb) [sol](notebooks/solutions/05_x.ipynb) [web](https://example.org) [here](#start)"
    out = site.rewrite_links(text, "", "", pages)
    assert "[one](notebooks/01_a.ipynb)" in out
    assert f"[sol]({site.REPOSITORY_URL}/blob/" in out and out.count("/notebooks/solutions/05_x.ipynb)") == 1
    assert "[web](https://example.org)" in out and "[here](#start)" in out
    assert f"[folder]({site.REPOSITORY_URL}/tree/" in site.rewrite_links("[folder](binder/)", "", "", pages)


def test_titles_are_plain_text():
    assert site_text.plain_title(r"01b · Why $\sqrt{d_k}$, and masks") == "01b · Why √d_k, and masks"
    assert site_text.plain_title(r"without the $n \times m$ matrix, $O(n^2)$") == "without the n × m matrix, O(n²)"
    assert site_text.plain_title(r"$\text{softmax}(x) \le 1$ and $\alpha$") == "softmax(x) ≤ 1 and alpha"


def test_a_plot_gets_alt_text_that_says_what_it_shows():
    new = nbformat.v4
    png = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}
    nb = new.new_notebook(cells=[
        new.new_markdown_cell("# 99 · The $\\sqrt{n}$ example"),
        new.new_markdown_cell("## 1. A plot\n\nThe weights of the first query, one bar per key. More words."),
        new.new_code_cell("plt.bar(range(3), w)\nplt.show()", outputs=[new.new_output("display_data", data=png)]),
        new.new_code_cell('fig.suptitle(f"Loss over {steps} steps")\nax.set_title("head 0")',
                          outputs=[new.new_output("display_data", data=png)]),
        new.new_code_cell("print(1)", outputs=[new.new_output("stream", text="1\n")]),
    ])  # fmt: skip
    page = site.page_notebook(nb, NOTEBOOKS / "99_example.ipynb")
    assert page.cells[0].source.startswith("# 99 · The √n example\n")
    alts = [c.metadata.get("mystnb", {}).get("image", {}).get("alt") for c in page.cells if c.cell_type == "code"]
    assert alts == ["Plot: The weights of the first query, one bar per key.", "Plot: Loss over … steps", None]


def _exercise(name: str = "98_exercise.ipynb", solutions: Path = SOLUTIONS) -> nbformat.NotebookNode:
    """A small solved exercise: a task, its checker, a cell that uses the student's function (with a
    figure), the lesson going on with the course's function, and a cell that prints after a mutation."""
    new, md, out = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell, nbformat.v4.new_output
    nb = nbformat.v4.new_notebook(cells=[
        md("# 98 · An exercise\n\nIntro."),
        new("from course_utils.helpers.tasks import enable\n\nenable()", outputs=[]),
        new("def double(x):\n    ### BEGIN SOLUTION\n    twice_the_input = x + x\n    return twice_the_input\n"
            "    ### END SOLUTION\n\ncheck_double(double)",
            outputs=[out("stream", name="stdout", text="[correct] double: every case passed.\n")]),
        new("check_double(double)", outputs=[out("stream", name="stdout", text="[correct] double: every case passed.\n")]),
        new("values = [double(i) for i in range(3)]\nplot(values)", outputs=[
            out("stream", name="stdout", text="[0, 2, 4]\n"),
            out("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]),
        new("print(course_double(4))", outputs=[out("stream", name="stdout", text="8\n")]),
    ], metadata={"course": {"file": name}, "language_info": {"name": "python"}})  # fmt: skip
    nbtools.add_header(nb, solutions / name)
    return nb


def test_an_exercise_page_shows_the_solved_run_with_the_students_stubs():
    solution = _exercise()
    path = NOTEBOOKS / "98_exercise.ipynb"
    student = make_student_notebook(solution, path)
    assert student.cells[6].source.startswith("# needs task 1 (double)")
    page = site.page_notebook(student, path, solution)
    sources = [c.source for c in page.cells]
    assert len(page.cells) == len(solution.cells) - 2, "the badges and the Colab cell are left out"
    assert sources[0].startswith("# 98 · An exercise") and "finished run" in sources[0]
    binder, colab = launch_links(path)
    assert binder in sources[0] and colab in sources[0] and "solutions" not in sources[0]
    task = page.cells[2]
    assert task.source == f"def double(x):\n    {STUB}\n\ncheck_double(double)" and task.outputs == []
    assert "[correct]" in page.cells[3].outputs[0].text
    assert sources[4].startswith("values = [double(i)") and "image/png" in page.cells[4].outputs[1].data
    assert not [src for src in sources if "# needs" in src or "twice_the_input" in src]
    assert page.metadata["course"]["role"] == "student"


def test_a_lesson_without_a_twin_shows_no_guard_line_and_no_line_about_an_unfinished_task():
    stub = nbformat.v4.new_code_cell(f"def f(n):\n    {STUB}\n\ncheck_f(f)", outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="[not yet] f: not implemented yet. Replace the `raise NotImplementedError` line.\n")])
    waiting = nbformat.v4.new_code_cell("# needs task 1 (f)\nprint(f(2))\nprint('after')", outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="before\nTask 1 is not done yet: write `f` above, then run this cell again.\n")])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 97 · A lesson"), stub, waiting])
    page = site.page_notebook(nb, NOTEBOOKS / "97_lesson.ipynb")
    assert "finished run" not in page.cells[0].source, "the note is for pages of a solved run"
    assert page.cells[1].outputs == []
    assert page.cells[2].source == "print(f(2))\nprint('after')" and page.cells[2].outputs[0].text == "before\n"


SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="240" height="60" role="img"><title>t</title>'
       '<rect width="240" height="60" fill="#0072B2"/></svg>')


@pytest.fixture
def tiny_course(tmp_path, monkeypatch):
    """A course of two notebooks in tmp_path: a lesson showing a drawing of notebooks/figures/ as a Markdown
    image, as an HTML image and as a cell attachment; an exercise with its solution twin."""
    import base64

    (tmp_path / "notebooks" / "figures").mkdir(parents=True)
    (tmp_path / "notebooks" / "solutions").mkdir()
    (tmp_path / "notebooks" / "figures" / "tiny.svg").write_text(SVG, encoding="utf-8")
    (tmp_path / "notebooks" / "figures" / "unused.svg").write_text(SVG, encoding="utf-8")
    lesson = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 01 · A lesson\n\n![A tiny blue box](figures/tiny.svg)"),
        nbformat.v4.new_markdown_cell('<img src="figures/tiny.svg" alt="The box again" width="120">'),
        nbformat.v4.new_markdown_cell("![An attached box](attachment:box.svg)",
                                      attachments={"box.svg": {"image/svg+xml": base64.b64encode(SVG.encode()).decode()}}),
        nbformat.v4.new_markdown_cell("[a solution](solutions/02_exercise.ipynb)"),
    ])  # fmt: skip
    nbformat.write(lesson, tmp_path / "notebooks" / "01_lesson.ipynb")
    for module in (site, nbtools):
        monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(site, "NOTEBOOKS", tmp_path / "notebooks")
    for module in (site, nbtools):
        monkeypatch.setattr(module, "SOLUTIONS", tmp_path / "notebooks" / "solutions")
    monkeypatch.setattr(site, "README", tmp_path / "README.md")
    monkeypatch.setattr(site, "INSTRUCTORS", tmp_path / "INSTRUCTORS.md")
    solution = _exercise("02_exercise.ipynb", tmp_path / "notebooks" / "solutions")
    nbformat.write(solution, tmp_path / "notebooks" / "solutions" / "02_exercise.ipynb")
    student = tmp_path / "notebooks" / "02_exercise.ipynb"
    nbformat.write(make_student_notebook(solution, student), student)
    (tmp_path / "README.md").write_text("# Course\n\nIntro.\n\n## The notebooks\n\n| # | notebook | what | launch |\n"
                                        "| --- | --- | --- | --- |\n| 01 | [A lesson](notebooks/01_lesson.ipynb) | a | x |\n",
                                        encoding="utf-8")
    return tmp_path


def test_drawings_are_copied_beside_the_pages_and_attachments_become_files(tiny_course):
    docs = tiny_course / "docs"
    rows = site.prepare(docs)
    assert [r.path for r in rows] == ["notebooks/01_lesson.ipynb", "notebooks/02_exercise.ipynb"]
    assert (docs / "notebooks" / "figures" / "tiny.svg").read_text(encoding="utf-8") == SVG
    assert not (docs / "notebooks" / "figures" / "unused.svg").exists(), "only the images a page shows"
    page = nbformat.read(docs / "notebooks" / "01_lesson.ipynb", as_version=4)
    assert "![A tiny blue box](figures/tiny.svg)" in page.cells[0].source, "a drawing stays a relative image"
    assert '<img src="figures/tiny.svg"' in page.cells[1].source
    attached = page.cells[2]
    assert "attachments" not in attached and attached.source == "![An attached box](attachments/01_lesson-2-box.svg)"
    assert (docs / "notebooks" / "attachments" / "01_lesson-2-box.svg").read_text(encoding="utf-8") == SVG
    assert f"{site.REPOSITORY_URL}/blob/" in page.cells[3].source, "a solution is linked on GitHub, not published"
    exercise = nbformat.read(docs / "notebooks" / "02_exercise.ipynb", as_version=4)
    assert "[correct]" in exercise.cells[3].outputs[0].text and "twice_the_input" not in nbformat.writes(exercise)
    # A drawing the lesson no longer shows leaves the site at the next build.
    lesson = nbformat.read(tiny_course / "notebooks" / "01_lesson.ipynb", as_version=4)
    lesson.cells = lesson.cells[:1] + lesson.cells[3:]
    lesson.cells[0].source = "# 01 · A lesson"
    nbformat.write(lesson, tiny_course / "notebooks" / "01_lesson.ipynb")
    site.prepare(docs)
    assert not (docs / "notebooks" / "figures").exists() and not (docs / "notebooks" / "attachments").exists()


@pytest.mark.slow
def test_drawings_show_on_a_built_page(tiny_course):
    """Sphinx with myst-nb, configured as docs/conf.py: each form of drawing is an <img> whose file is in the site."""
    pytest.importorskip("myst_nb")
    from sphinx.cmd.build import build_main

    docs = tiny_course / "docs"
    site.prepare(docs)
    conf = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    extensions = re.search(r"^myst_enable_extensions = .*$", conf, re.M).group(0)
    (docs / "conf.py").write_text(f"extensions = ['myst_nb']\nnb_execution_mode = 'off'\n{extensions}\n"
                                  "html_theme = 'sphinx_book_theme'\n", encoding="utf-8")
    out = tiny_course / "html"
    assert build_main(["-q", "-W", "-b", "html", str(docs), str(out)]) == 0
    page = Page(out / "notebooks" / "01_lesson.html")
    assert len(page.drawings) == 3
    for src in page.drawings:
        assert (page.path.parent / src).resolve().read_text(encoding="utf-8") == SVG
    assert 'alt="A tiny blue box"' in page.path.read_text(encoding="utf-8")


def test_the_leak_check_finds_a_solution_line_in_highlighted_code(tmp_path):
    line = "twice_the_input = x + x"
    highlighted = '<pre><span class="n">twice_the_input</span> <span class="o">=</span> <span class="n">x</span> + x</pre>'
    (tmp_path / "p.html").write_text(f"<html><body><article>{highlighted}</article></body></html>", encoding="utf-8")
    assert leaked("".join(Page(tmp_path / "p.html").text), {line, "never shown anywhere"}) == [line]


def test_instructors_page_only_when_the_repository_has_one(tmp_path, monkeypatch):
    guide = tmp_path / "INSTRUCTORS.md"
    guide.write_text("# Teaching it\n\nSee [the solution](notebooks/solutions/05_causal_mask.ipynb) "
                     "and [notebook 01](notebooks/01_scaled_dot_product_attention.ipynb).\n", encoding="utf-8")
    monkeypatch.setattr(site, "INSTRUCTORS", guide)
    docs = tmp_path / "docs"
    site.prepare(docs)
    page = (docs / "instructors.md").read_text(encoding="utf-8")
    assert f"({site.REPOSITORY_URL}/blob/" in page and "(notebooks/01_scaled_dot_product_attention.ipynb)" in page
    assert "\ninstructors\n" in (docs / "index.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in (docs / "notebooks").glob("*.ipynb")) == [p.name for p in student_notebooks()]
    guide.unlink()
    site.prepare(docs)
    assert not (docs / "instructors.md").exists() and "\ninstructors\n" not in (docs / "index.md").read_text(encoding="utf-8")


# --- The built site --------------------------------------------------------------------------------------------


def test_every_notebook_has_a_page_in_the_readme_order(pages):
    missing = [_page_of(p) for p in student_notebooks() if _page_of(p) not in pages]
    assert not missing, f"notebooks without a page: {missing}; rebuild the site with `{BUILD}`"
    index = [link.split("#")[0] for link in pages["index.html"].links]
    order = [r.path for r in site.site_rows(site.README.read_text(encoding="utf-8"))]
    linked = [f"notebooks/{Path(p).stem}.html" for p in order]
    first = [index.index(page) for page in linked]
    assert first == sorted(first), "the landing page does not list the notebooks in the README's order"


@pytest.mark.parametrize("notebook", student_notebooks(), ids=lambda p: p.stem)
def test_a_notebook_page_shows_the_figures_of_its_solved_run(pages, built, notebook):
    page = pages.get(_page_of(notebook))
    assert page is not None, f"no page for {notebook.name}; rebuild the site with `{BUILD}`"
    solved = solved_source(notebook)
    stored = figures_of(nbformat.read(solved, as_version=4))
    assert stored > 0, f"{solved.name} stores no figure"
    shown = page.output_images + page.drawings
    assert len(shown) == stored, f"{notebook.name}: {stored} figures in {solved.relative_to(ROOT)}, {len(shown)} on its page"
    for src in shown:
        if src.startswith("data:image/"):  # a drawing stored in the page itself (authoring/drawings --embed)
            assert len(src) > 200, f"{notebook.name}: an empty drawing"
            continue
        image = (page.path.parent / src).resolve()
        assert image.is_file() and image.stat().st_size > 100, f"{notebook.name}: figure {src} missing or empty"


def test_no_page_shows_a_waiting_cell_or_an_unfinished_task(pages):
    bad = {}
    for name, page in pages.items():
        output = "".join(page.output_text)
        stub_lines = [line for code in page.code_text for line in code.splitlines() if "NotImplementedError" in line]
        stub_lines = [line for line in stub_lines if not re.match(r'\s*raise NotImplementedError\("Your turn', line)]
        if m := re.search(r"# needs task \d+", "".join(page.text)):
            bad[name] = f"a guard line: {m.group(0)!r}"
        elif m := WAITING.search(output) or re.search("NotImplementedError|Traceback", output):
            bad[name] = f"an output about an unfinished task: {output[max(0, m.start() - 100) : m.end() + 60]!r}"
        elif stub_lines:
            bad[name] = f"NotImplementedError outside a stub: {stub_lines}"
    assert not bad, f"pages that show what a reader should not see: {bad}"


def test_no_page_shows_a_line_of_a_solution(built, pages):
    shown = published_text()
    secrets = {path.name: {line for line in solution_lines(nbformat.read(path, as_version=4)) if line not in shown}
               for path in SOLUTIONS.glob("*.ipynb")}  # fmt: skip
    assert sum(map(len, secrets.values())) >= 20, "the check has too few solution lines to look for"
    secret = set().union(*secrets.values())
    found = {name: hits for name, page in pages.items() if (hits := leaked("".join(page.text), secret))}
    for path in built.rglob("*.ipynb"):  # the pages' sources, which the site offers for download
        nb = nbformat.read(path, as_version=4)
        outputs = [o.get("text", "") + "".join(str(v) for v in o.get("data", {}).values()) for c in nb.cells for o in c.get("outputs", [])]
        text = "\n".join([c.source for c in nb.cells] + outputs)
        if hits := leaked(text, secret):
            found[path.relative_to(built).as_posix()] = hits
    assert not found, f"solution code on the site: {found}"


def test_no_page_shows_a_traceback_or_a_widget_repr(pages):
    bad = {}
    for name, page in pages.items():
        text = "".join(page.output_text)
        found = TRACEBACK.search(text) or WIDGET_REPR.search(text)
        html_text = page.path.read_text(encoding="utf-8")
        if found:
            bad[name] = text[max(0, found.start() - 100) : found.end() + 100]
        elif re.search(r'class="[^"]*\btraceback\b|application/vnd\.jupyter\.widget-(view|state)\+json', html_text):
            bad[name] = "a traceback block or a widget view in the HTML"
    assert not bad, f"pages that show an error or a raw widget: {bad}"


def test_no_page_shows_a_path_of_the_machine_that_built_it(built):
    files = [p for p in built.rglob("*") if p.suffix in (".html", ".js", ".txt", ".ipynb") and "_static" not in p.parts]
    bad = {}
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if m := MACHINE_PATH.search(text):
            bad[path.relative_to(built).as_posix()] = text[max(0, m.start() - 80) : m.end() + 80]
    assert not bad, f"machine paths in the site: {bad}"


@pytest.mark.parametrize("notebook", student_notebooks(), ids=lambda p: p.stem)
def test_launch_links_open_this_very_notebook(pages, notebook):
    page = pages[_page_of(notebook)]
    launch = [link for link in page.links if LAUNCH.match(link)]
    expected = set(launch_links(notebook))
    assert set(launch) == expected, f"{notebook.name}: launch links {sorted(set(launch))}, expected {sorted(expected)}"
    assert all(launch.count(url) >= 2 for url in expected), "each link should be in the header's launch menu and under the title"


def test_the_landing_page_launches_every_notebook(pages):
    launch = {link for link in pages["index.html"].links if LAUNCH.match(link)}
    assert launch == {url for nb in student_notebooks() for url in launch_links(nb)}


def test_solutions_are_not_published(built, pages):
    assert not [p for p in built.rglob("*") if "solutions" in p.relative_to(built).parts], "a solutions folder in the site"
    for solution in sorted(SOLUTIONS.glob("*.ipynb")):
        # The exercise's page shows one stub where the solution has each answer.
        regions = sum(c.source.count(BEGIN) for c in nbformat.read(solution, as_version=4).cells)
        code = "\n".join(pages[_page_of(solution)].code_text)
        assert code.count(STUB) == regions, f"the page of {solution.name} does not show one stub per task"


RAW_LATEX = re.compile(r"\$|\\(sqrt|times|text|frac|mathrm|cdot|le|ge)\b")
FILE_NAME = re.compile(r"(^|/)[\w.-]+\.(png|svg|jpe?g|gif|webp)$", re.I)


def test_no_page_title_sidebar_entry_or_search_entry_shows_raw_latex(built, pages):
    """Titles are text everywhere (the browser's tab, the sidebar, search results), where no formula is drawn."""
    bad = {name: page.title for name, page in pages.items() if RAW_LATEX.search(page.title)}
    for name in ("index.html", "search.html", "genindex.html"):  # pages without MathJax: their sidebar is text
        bad |= {f"{name} link": t for t in pages[name].link_texts if RAW_LATEX.search(t)} if name in pages else {}
    assert not bad, f"raw LaTeX in page titles or links: {bad}"
    index = (built / "searchindex.js").read_text(encoding="utf-8")
    titles = re.search(r'"titles":\s*(\[[^\]]*\])', index)
    assert titles and not RAW_LATEX.search(titles.group(1)), f"raw LaTeX in the search index's titles: {titles and titles.group(1)}"


def test_no_image_has_a_file_name_for_alt_text(pages):
    bad = {name: (src, alt) for name, page in pages.items() for src, alt in page.image_alts
           if not (alt or "").strip() or FILE_NAME.search(alt.strip()) or alt.strip() == src}  # fmt: skip
    assert not bad, f"images whose alt text is missing or a file name: {bad}"


def test_search_snippets_skip_the_theme_buttons_and_long_lines_are_not_cut_off(built, pages):
    page = pages["search.html"]
    assert any("search_snippets.js" in a for a in page.assets) and (built / "_static" / "search_snippets.js").is_file()
    assert any("course.css" in a for a in pages["index.html"].assets)
    css = (built / "_static" / "course.css").read_text(encoding="utf-8")
    assert "pre-wrap" in css and "overflow-x: auto" in css


def test_nothing_is_loaded_from_the_network(built, pages):
    remote = {name: a for name, page in pages.items() for a in page.assets if re.match(r"^(https?:)?//", a)}
    assert not remote, f"pages that load scripts, styles or images from the network: {remote}"
    assert (built / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not served by the site"


# --- In a real browser --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(built):
    """The built site over HTTP on loopback (127.0.0.1, a free port), as a web server would serve it."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = next((shutil.which(c) for c in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser") if c and shutil.which(c)), None)
    if chromium is None:
        _missing("Chromium is not installed (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the Python package playwright is not installed")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 900}
        )
        try:
            yield context
        finally:
            context.close()


def test_a_page_draws_its_figures_and_formulas_in_chromium(browser, server):
    notebook = student_notebooks()[0]
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(f"{server}/{_page_of(notebook)}", wait_until="load")
        # MathJax typesets after the page has loaded: one <mjx-container> per formula.
        try:
            page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
        except Exception:  # noqa: BLE001 (playwright's TimeoutError: the formulas are counted below)
            pass
        page.wait_for_load_state("networkidle")
        formulas = page.locator("mjx-container").count()
        figures = page.locator("div.cell_output img")
        widths = figures.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
        unrendered = page.locator("div.math, span.math").filter(has_not=page.locator("mjx-container")).count()
        page.screenshot(path=str(SCREENSHOT_DIR / f"site_test_{notebook.stem}.png"))
        if widths:
            figures.first.scroll_into_view_if_needed()
            page.screenshot(path=str(SCREENSHOT_DIR / f"site_test_{notebook.stem}_figure.png"))
    finally:
        page.close()
    assert formulas > 0, "MathJax rendered no formula"
    assert unrendered == 0, f"{unrendered} formulas left as TeX source"
    assert widths and all(w > 0 for w in widths), f"figures not drawn (natural widths {widths})"
    remote = [url for url in requests if not url.startswith(server)]
    assert not remote, f"the page fetched from the network: {remote}"
