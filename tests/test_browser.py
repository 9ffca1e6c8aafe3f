"""A student's view: JupyterLab in a real (headless) browser runs a notebook and shows its widgets.

nbval runs notebooks in a kernel without a front end, so it cannot see a widget that fails
to render in the page (a missing front-end extension, a JavaScript error, a widget that
shows only its text fallback). This test does what a student does on a laptop or on
Binder: start JupyterLab, open a notebook, Run > Run All Cells, and look at the page.

- JupyterLab runs on loopback (127.0.0.1, a free port, a random token), serving a
  temporary copy of the notebooks, so that the repository's files are never touched.
- The browser is Debian's Chromium (/usr/bin/chromium, package ``chromium``), driven by
  Playwright (PyPI package ``playwright``). ``playwright install`` (which downloads a
  browser of its own) is never needed.
- Without Chromium or Playwright the test is skipped on a developer's machine, but in CI
  (environment variable ``CI`` set) it fails: .ci/run installs both.
- It is in the ``slow`` tier (about a minute): the README's ``pytest`` leaves it out, and
  ``pytest -m slow`` (which CI runs) runs it.

To run a course notebook instead of (or besides) the generated demo, add its path
relative to the repository root to ``BROWSER_NOTEBOOKS``, with True if it shows widgets;
to try one by hand, set BROWSER_TEST_NOTEBOOKS (see below). Screenshots of the last state
of each notebook go to $BROWSER_TEST_SCREENSHOTS (default: the temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow  # JupyterLab in Chromium: about a minute; `pytest -m slow`

ROOT = Path(__file__).resolve().parent.parent

# One course notebook with an interactive explorer (its sentence explorer's word buttons), and one
# fresh student notebook: no task done, Run All must still reach its last cell without an error.
STUDENT_NOTEBOOK = "notebooks/05_causal_mask.ipynb"
BROWSER_NOTEBOOKS: list[tuple[str, bool]] = [  # (path, shows widgets)
    ("notebooks/02_attention_heatmaps.ipynb", True),
    (STUDENT_NOTEBOOK, False),
]


def _has_stored_widgets(rel: str) -> bool:
    nb = nbformat.read(ROOT / rel, as_version=4)
    outputs = (o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    return any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)


# Any notebook by hand, e.g. BROWSER_TEST_NOTEBOOKS=notebooks/02_attention_heatmaps.ipynb pytest tests/test_browser.py
# (comma-separated; widgets are expected where the stored outputs have some).
if os.environ.get("BROWSER_TEST_NOTEBOOKS"):
    BROWSER_NOTEBOOKS = [(rel, _has_stored_widgets(rel)) for rel in os.environ["BROWSER_TEST_NOTEBOOKS"].split(",")]

SERVER_START_TIMEOUT = 60  # s until JupyterLab answers
PAGE_TIMEOUT = 60  # s until the notebook is open and its kernel idle
RUN_TIMEOUT = 180  # s for Run All Cells of one notebook
CHROMIUM_FLAGS = [  # what Chromium needs here: root, no GPU, no network but loopback
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT_DIR = Path(os.environ.get("BROWSER_TEST_SCREENSHOTS", tempfile.gettempdir()))
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def _missing_tool(reason: str) -> None:
    """Skip on a developer's machine; fail in CI, where .ci/run must have installed the tool."""
    if IN_CI:
        pytest.fail(f"{reason}, and CI is set: .ci/run must install it")
    pytest.skip(f"{reason} (install it to run the browser test; in CI this fails instead)")


# --- What the test runs --------------------------------------------------------------


def failing_notebook() -> nbformat.NotebookNode:
    """Its second cell raises: the checks below must notice (they are not vacuous)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("x / 0"),
        nbformat.v4.new_code_cell("print('never runs')"),
    ]
    return nb


# --- JupyterLab on loopback ------------------------------------------------------------


@dataclass
class Lab:
    url: str  # http://127.0.0.1:PORT
    token: str
    root: Path  # the server's root_dir, a temporary folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_settings(settings_dir: Path) -> None:
    """User settings of the test's own JupyterLab: every cell in the page, no news pop-up."""
    settings = {
        # Keep every cell in the page (not only those on screen) so that all outputs can be read;
        # start the notebook's kernel without asking (by default a "Select Kernel" dialog asks).
        "notebook-extension/tracker": {"windowingMode": "none", "autoStartDefaultKernel": True},
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    }
    for name, values in settings.items():
        package, plugin = name.split("/")
        path = settings_dir / "@jupyterlab" / package / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _stop(proc: subprocess.Popen) -> None:
    """Stop the JupyterLab we started (it shuts its kernels down); kill its group if it hangs."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # Jupyter asks to confirm on the first SIGINT, not on SIGTERM
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session, started below: only our processes
        proc.wait(timeout=5)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    root.mkdir()
    for rel, _ in BROWSER_NOTEBOOKS:
        # without its stored outputs: whatever the page and the saved file show comes from this run
        nb = nbformat.read(ROOT / rel, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, root / rel)
    # The student notebook once more with its stored outputs: what a student sees before running anything.
    (root / "stored").mkdir()
    shutil.copy(ROOT / STUDENT_NOTEBOOK, root / "stored" / Path(STUDENT_NOTEBOOK).name)
    if (ROOT / "data").is_dir():
        shutil.copytree(ROOT / "data", root / "data")
    nbformat.write(failing_notebook(), root / "failing.ipynb")
    _lab_settings(base / "settings")

    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(base / "config"),  # none of the user's Jupyter configuration,
        JUPYTER_DATA_DIR=str(base / "data"),  # nor kernels: "python3" is this environment's
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        PYTHONUNBUFFERED="1",
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    log_path = base / "jupyterlab.log"
    command = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True",  # CI runs as root
        # Nothing to fetch from the network: no news, no update check, no extension manager.
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]  # fmt: skip
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_TIMEOUT} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)
        yield Lab(url=url, token=token, root=root)
    finally:
        _stop(proc)


# --- Headless Chromium -------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    chromium = _chromium()
    if chromium is None:
        _missing_tool("Chromium is not installed (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing_tool("the Python package playwright is not installed")
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 900}
        )
        try:
            yield context
        finally:
            context.close()


# --- Reading the page --------------------------------------------------------------------

NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"  # the notebook on screen
# Prompts of code cells: "[3]:" after a run, "[*]:" while queued or running, "[ ]:" never run.
PROMPTS_JS = f"() => [...document.querySelectorAll('{NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt')].map(e => e.textContent.trim())"
# Errors (tracebacks) show as stderr outputs; a warning on stderr is not an error.
ERRORS_JS = f"""() => [...document.querySelectorAll(
    '{NOTEBOOK} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map(e => e.textContent).filter(t => /Traceback|Error/.test(t))"""


def _kernel_state(lab: Lab, notebook: str) -> str | None:
    """The execution state ("idle", "busy", "starting", ...) of the notebook's kernel, None if none runs."""
    with urllib.request.urlopen(f"{lab.url}/api/sessions?token={lab.token}", timeout=5) as answer:
        sessions = json.load(answer)
    for session in sessions:
        if session.get("path") == notebook and session.get("kernel"):
            return session["kernel"].get("execution_state")
    return None


def _wait_for(page, condition, timeout: float, what: str, poll: float = 0.25):
    """Call ``condition()`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            shot = SCREENSHOT_DIR / "browser_test_timeout.png"
            page.screenshot(path=str(shot), full_page=True)
            pytest.fail(f"timed out after {timeout} s waiting for {what} (screenshot {shot})")
        time.sleep(poll)


def _run_all_cells(page, lab: Lab, notebook: str) -> dict:
    """Open ``notebook`` in JupyterLab, Run > Run All Cells, wait, save; what the page and file show."""
    page.goto(f"{lab.url}/lab/tree/{notebook}?reset&token={lab.token}")  # reset: no tabs of earlier tests
    page.wait_for_selector(f"{NOTEBOOK} .jp-Cell", timeout=PAGE_TIMEOUT * 1000)
    _wait_for(page, lambda: _kernel_state(lab, notebook) == "idle", PAGE_TIMEOUT, "the notebook's kernel to be idle")

    start = time.monotonic()
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    _wait_for(page, lambda: re.search(r"\[(\*|\d+)\]", " ".join(page.evaluate(PROMPTS_JS))), 10, "Run All Cells to start", 0.05)

    def finished():
        prompts = page.evaluate(PROMPTS_JS)
        return "[*]:" not in prompts and _kernel_state(lab, notebook) == "idle" and prompts

    prompts = _wait_for(page, finished, RUN_TIMEOUT, f"Run All Cells of {notebook} to finish")
    seconds = time.monotonic() - start

    saved_path = lab.root / notebook
    before = saved_path.stat().st_mtime_ns
    page.click(".lm-MenuBar-itemLabel:text-is('File')")
    page.click(".lm-Menu-itemLabel:text-is('Save Notebook')")

    def saved_outputs():  # the file on disk, once the browser has saved it
        if saved_path.stat().st_mtime_ns == before:
            return None
        try:
            nb = nbformat.read(saved_path, as_version=4)
        except (ValueError, OSError):  # caught while the server writes it
            return None
        return nb if any(c.execution_count for c in nb.cells if c.cell_type == "code") else None

    saved = _wait_for(page, saved_outputs, 20, f"{notebook} to be saved with its outputs")
    shot = SCREENSHOT_DIR / f"browser_test_{Path(notebook).stem}.png"
    page.screenshot(path=str(shot), full_page=True)
    return {
        "prompts": prompts,
        "page_errors": page.evaluate(ERRORS_JS),
        "file_errors": [
            f"{o.ename}: {o.evalue}" for c in saved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
        ],
        "seconds": seconds,
        "screenshot": shot,
    }


def _not_run(prompts: list[str]) -> list[int]:
    return [i for i, p in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", p)]


# --- The tests -----------------------------------------------------------------------------


@pytest.mark.parametrize(("notebook", "shows_widgets"), BROWSER_NOTEBOOKS, ids=[n for n, _ in BROWSER_NOTEBOOKS])
def test_notebook_runs_in_jupyterlab_and_widgets_render(browser_context, lab, notebook, shows_widgets):
    page = browser_context.new_page()
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    try:
        result = _run_all_cells(page, lab, notebook)
        print(f"{notebook}: Run All Cells took {result['seconds']:.1f} s; screenshot {result['screenshot']}")
        assert not result["page_errors"], f"error output in the page:\n{result['page_errors'][0][-2000:]}"
        assert not result["file_errors"], f"error output in the saved notebook: {result['file_errors']}"
        assert not _not_run(result["prompts"]), f"code cells not run (prompts {result['prompts']})"

        if shows_widgets:
            outputs = page.locator(f"{NOTEBOOK} .jp-OutputArea-output")
            widgets = outputs.locator(".jupyter-widgets.widget-container")
            assert widgets.count() > 0, "no widget rendered (a text fallback only?)"
            fallback = outputs.filter(has_text=re.compile("Error displaying widget|Loading widget|run the notebook in Jupyter"))
            assert fallback.count() == 0, f"a widget shows its fallback text: {fallback.first.inner_text()!r}"
            figures = widgets.locator(".widget-output img")
            assert figures.count() > 0, "the widget's Output shows no figure"
            assert figures.first.evaluate("img => img.naturalWidth") > 100, "the widget's figure is empty"

            # A click goes to the kernel and back: the figure is redrawn.
            buttons = widgets.first.locator(".widget-toggle-button:not(.mod-active)")
            if buttons.count():
                before = figures.first.get_attribute("src")
                buttons.first.click()
                _wait_for(page, lambda: figures.first.get_attribute("src") not in (None, before), 30,
                          "the widget's figure to be redrawn after a click")  # fmt: skip
                page.screenshot(path=str(result["screenshot"]), full_page=True)
        widget_errors = [e for e in console_errors if "widget" in e.lower()]
        assert not widget_errors, f"the browser console reports widget errors: {widget_errors}"
    finally:
        page.close()


def test_a_fresh_student_notebook_opens_without_tracebacks_or_raw_widget_text(browser_context, lab):
    """Before Run All: the stored outputs, as JupyterLab shows them without a kernel having run anything."""
    page = browser_context.new_page()
    try:
        page.goto(f"{lab.url}/lab/tree/stored/{Path(STUDENT_NOTEBOOK).name}?reset&token={lab.token}")
        page.wait_for_selector(f"{NOTEBOOK} .jp-OutputArea-output", timeout=PAGE_TIMEOUT * 1000)
        outputs = page.locator(f"{NOTEBOOK} .jp-OutputArea-output")
        assert outputs.count() > 5, "the stored outputs are not shown"
        assert not page.evaluate(ERRORS_JS), "a stored traceback is shown"
        raw = outputs.filter(has_text=re.compile(r"VBox\(children|HBox\(children"))
        assert raw.count() == 0, f"a raw widget repr is shown: {raw.first.inner_text()[:80]!r}"
        assert outputs.filter(has_text="not done yet: write").count() > 0, "no cell says which task is missing"
        page.screenshot(path=str(SCREENSHOT_DIR / "browser_test_student_stored.png"), full_page=True)
    finally:
        page.close()


def test_an_error_in_a_notebook_is_noticed(browser_context, lab):
    """The checks above must fail on a notebook that raises, not pass whatever happens."""
    page = browser_context.new_page()
    try:
        result = _run_all_cells(page, lab, "failing.ipynb")
    finally:
        page.close()
    assert any("ZeroDivisionError" in text for text in result["page_errors"]), result["page_errors"]
    assert any(e.startswith("ZeroDivisionError") for e in result["file_errors"]), result["file_errors"]
    assert _not_run(result["prompts"]) == [2], f"Run All stops at the error: prompts {result['prompts']}"


def test_the_course_drawings_show_in_jupyterlab(browser_context, lab):
    """Every drawing, embedded as the drawings tool does it (an <img> with an SVG data: URL under its
    marker), is shown by JupyterLab at its full width, with its alt text."""
    from course_utils.authoring.drawings import drawings
    from course_utils.authoring.drawings import embed as drawing_embed

    registry = drawings()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"Before *{name}*.\n<!-- drawing: {name} -->\nAfter *it*.") for name in registry]
    drawing_embed.embed(nb, registry)
    nbformat.write(nb, lab.root / "drawings.ipynb")
    page = browser_context.new_page()
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{lab.url}/lab/tree/drawings.ipynb?reset&token={lab.token}")
        images = page.locator(f'{NOTEBOOK} .jp-MarkdownCell img[src^="data:image/svg+xml"]')
        _wait_for(page, lambda: images.count() == len(registry), PAGE_TIMEOUT, "every drawing in the page")
        _wait_for(page, lambda: all(images.nth(k).evaluate("i => i.complete") for k in range(images.count())), 30,
                  "the drawings to load")
        shown = images.evaluate_all("imgs => imgs.map(i => [i.alt, i.naturalWidth, i.naturalHeight])")
        assert [alt for alt, _, _ in shown] == [d.alt for d in registry.values()]
        assert all(w == 800 and h > 300 for _, w, h in shown), shown
        assert page.locator(f"{NOTEBOOK} .jp-MarkdownCell em").count() == 2 * len(registry), "Markdown after a drawing"
        page.screenshot(path=str(SCREENSHOT_DIR / "browser_test_drawings.png"))
        assert not [e for e in console_errors if "render" in e.lower()], console_errors
    finally:
        page.close()
