"""The student release: everything a student needs and no solution code."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.authoring import release

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "course"
    assert release.main([str(out)]) == 0
    return out


@pytest.mark.slow  # builds a whole release (seconds): the slow tier
def test_release_has_what_a_student_needs(built):
    for path in ("README.md", "pyproject.toml", "requirements.txt", "course_utils/__init__.py",
                 "course_utils/helpers/checkers/causal_mask.py", "notebooks/05_causal_mask.ipynb",
                 "notebooks/01_scaled_dot_product_attention.ipynb"):
        assert (built / path).is_file(), path
    assert any((built / "data").iterdir())
    for path in ("LICENSE", "CITATION.cff"):
        assert (built / path).is_file() == (ROOT / path).is_file(), path


@pytest.mark.slow  # builds a whole release (seconds): the slow tier
def test_release_has_no_solutions_tests_or_tooling(built):
    assert not (built / "notebooks" / "solutions").exists()
    assert not (built / "tests").exists()
    assert not any((built / "course_utils" / room).exists() for room in ("authoring", "studies", "grading"))
    assert not (built / "docs").exists(), "the website's sources need the tooling, which is not released"
    pyproject = (built / "pyproject.toml").read_text(encoding="utf-8")
    assert not any(f"course_utils.{room}" in pyproject for room in ("authoring", "studies", "grading"))
    nb = json.loads((built / "notebooks" / "05_causal_mask.ipynb").read_text(encoding="utf-8"))
    assert nb["metadata"]["course"]["role"] == "student"
    assert "NotImplementedError" in "".join("".join(c["source"]) for c in nb["cells"])


@pytest.mark.slow  # builds a whole release (seconds): the slow tier
def test_no_solution_line_in_the_release(built):
    secret = sum(len(lines) for lines in release.region_lines().values())
    assert secret >= 40  # the check has something to look for
    assert release.leaks(built) == []


@pytest.mark.slow  # builds a whole release (seconds): the slow tier
def test_leak_check_finds_a_solution(built, tmp_path):
    copy = tmp_path / "leaky"
    shutil.copytree(built, copy)
    shutil.copy(ROOT / "notebooks" / "solutions" / "07_head_patterns.ipynb", copy / "notebooks" / "07_head_patterns.ipynb")
    found = release.leaks(copy)
    assert found and all(f.startswith("notebooks/07_head_patterns.ipynb: ") for f in found)


def _notebook(path: Path, *sources: str) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def test_a_course_where_every_task_has_a_twin_releases_cleanly(tmp_path):
    """Many twins: every one is left out, and lines the lessons or other exercises show anyway
    (also inside a longer line, or as short as `return out`) are not taken for leaks."""
    import nbformat

    from course_utils.authoring.student_versions import student_version

    root = tmp_path / "course"
    (root / "course_utils" / "core").mkdir(parents=True)
    (root / "README.md").write_text("# Course\n", encoding="utf-8")
    (root / "course_utils" / "__init__.py").write_text("", encoding="utf-8")
    (root / "course_utils" / "core" / "masks.py").write_text("def causal_mask(n):\n    return torch.ones(n, n).tril()\n", encoding="utf-8")
    solutions = root / "notebooks" / "solutions"
    region = "    ### BEGIN SOLUTION\n{}\n    ### END SOLUTION"
    _notebook(solutions / "05_a.ipynb",
              "def a(n):\n" + region.format("    mask = causal_mask(n)\n    out = mask.float().cumsum(-1)\n    return out"))
    _notebook(solutions / "06_b.ipynb", "big_mask = causal_mask(n)", "def b(x):\n" + region.format("    return torch.ones(n, n).tril()"))
    _notebook(solutions / "02_c.ipynb", "def c(w):\n" + region.format("    share = w.diagonal(offset=1).mean()\n    return share"))
    for path in solutions.glob("*.ipynb"):
        nbformat.write(student_version(nbformat.read(path, as_version=4)), root / "notebooks" / path.name)
    _notebook(root / "notebooks" / "01_lesson.ipynb", "print('return out')")
    out = tmp_path / "release"
    files = release.build(out, root)
    assert not [f for f in files if "solutions" in f] and len(list((out / "notebooks").glob("*.ipynb"))) == 4
    assert release.leaks(out, root) == []
    shutil.copy(solutions / "02_c.ipynb", out / "notebooks" / "02_c.ipynb")  # a solution in the student's place
    found = release.leaks(out, root)
    assert found == ["notebooks/02_c.ipynb: return share", "notebooks/02_c.ipynb: share = w.diagonal(offset=1).mean()"]


MAINTAINERS_ROOMS = ("authoring", "studies", "grading", "tooling")
ROOM_IMPORT = re.compile(r"^\s*(?:from|import)\s+course_utils\.(?:%s)\b[\w.]*" % "|".join(MAINTAINERS_ROOMS), re.M)


def _code(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "code")


def test_room_import_pattern_finds_what_it_should():
    assert ROOM_IMPORT.search("import torch\nfrom course_utils.studies.dates_study import train_dates\n")
    assert ROOM_IMPORT.search("  import course_utils.authoring.release as r")
    assert not ROOM_IMPORT.search("from course_utils.models.dates import X\n# python -m course_utils.studies.x")


@pytest.mark.slow  # builds a whole release (seconds): the slow tier
def test_no_released_notebook_imports_a_maintainers_room(built):
    notebooks = sorted((built / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 20
    found = [f"{p.name}: {m.group(0).strip()}" for p in notebooks for m in ROOM_IMPORT.finditer(_code(p))]
    assert found == [], "the release leaves these rooms out, so these cells fail for a student"
    package = built / "course_utils"
    assert not [p for p in package.rglob("*.py") if ROOM_IMPORT.search(p.read_text(encoding="utf-8"))]


def _student_venv(release_dir: Path, where: Path) -> Path:
    """A new virtual environment (no system site-packages) whose course_utils is the release's own,
    installed from the release's pyproject.toml; the third-party packages (torch, nbclient, ...) come
    from the environment running this test, through a path file, because a test cannot download
    them. Returns the new environment's python."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    # plain lines, not `import site` lines: this environment's own .pth files (an editable course_utils
    # pointing at the maintainers' checkout) are not processed, so only the release's course_utils exists
    (Path(site) / "_third_party.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    # With setuptools here, the build needs nothing from the network; without it (a venv made by a recent
    # Python has none), pip fetches the build backend pyproject.toml names, as a student's pip would.
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *offline, "-e", str(release_dir)],
                   check=True, env=_clean_env(), cwd=where)
    return python


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["MPLBACKEND"] = "Agg"
    return env


# A kernel manager given makes nbclient use the blocking client: its asyncio client can miss a reply's wake-up
# and then waits out the cell timeout (as nbtools.execute says).
RUN_ALL = r"""
import re, sys, pathlib, nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
def run(nb, folder="."):
    NotebookClient(nb, km=KernelManager(kernel_name="python3"), timeout=600,
                   resources={"metadata": {"path": str(folder)}}).execute(cleanup_kc=True)
probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "import sys, course_utils; print(sys.prefix); print(course_utils.__file__)")])
run(probe)
print("KERNEL:" + repr(probe.cells[0].outputs[0]["text"].split()), flush=True)
failed = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.ipynb")):
    nb = nbformat.read(path, as_version=4)
    try:
        run(nb, path.parent)
        print("ran", path.name, flush=True)
    except CellExecutionError as err:
        failed.append(f"{path.name}: " + re.sub(r"\x1b\[[0-9;]*m", "", str(err).strip().splitlines()[-1]))
        print("FAILED", path.name, flush=True)
print("FAILURES:" + repr(failed))
"""


@pytest.mark.slow  # a fresh environment and every student notebook, one after the other (many minutes)
def test_the_release_runs_every_notebook_to_the_end_in_a_fresh_environment(built, tmp_path):
    """As a student gets it: the release installed from its own files into a new environment, and
    every notebook run from its first cell to its last (a task left undone waits; nothing fails)."""
    python = _student_venv(built, tmp_path)
    where = subprocess.run([str(python), "-c", "import course_utils, sys; print(course_utils.__file__); print(sys.prefix)"],
                           capture_output=True, text=True, check=True, env=_clean_env(), cwd=tmp_path).stdout.split()
    assert Path(where[0]).resolve().is_relative_to(built.resolve()), where
    assert Path(where[1]).resolve() == (tmp_path / "venv").resolve()
    done = subprocess.run([str(python), "-c", RUN_ALL, str(built / "notebooks")], capture_output=True, text=True,
                          env=_clean_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    prefix, package = ast.literal_eval(done.stdout.split("KERNEL:", 1)[1].splitlines()[0])  # the notebooks' kernel, not this driver
    assert Path(prefix).resolve() == (tmp_path / "venv").resolve() and Path(package).resolve().is_relative_to(built.resolve())
    ran = [line for line in done.stdout.splitlines() if line.startswith("ran ")]
    failed = done.stdout.rsplit("FAILURES:", 1)[-1].strip()
    assert failed == "[]", failed
    assert len(ran) == len(list((built / "notebooks").glob("*.ipynb"))) >= 20
