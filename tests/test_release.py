"""The student release: everything a student needs and no solution code."""

from __future__ import annotations

import json
import shutil
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
    assert not any(f"course_utils.{room}" in (built / "pyproject.toml").read_text(encoding="utf-8") for room in ("authoring", "studies", "grading"))
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
    _notebook(solutions / "05_a.ipynb", "def a(n):\n" + region.format("    mask = causal_mask(n)\n    out = mask.float().cumsum(-1)\n    return out"))
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
