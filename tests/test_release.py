"""The student release: everything a student needs and no solution code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from course_utils.tooling import release

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "course"
    assert release.main([str(out)]) == 0
    return out


def test_release_has_what_a_student_needs(built):
    for path in ("README.md", "pyproject.toml", "requirements.txt", "course_utils/__init__.py",
                 "course_utils/helpers/checkers/causal_mask.py", "notebooks/05_causal_mask.ipynb",
                 "notebooks/01_scaled_dot_product_attention.ipynb"):
        assert (built / path).is_file(), path
    assert any((built / "data").iterdir())
    for path in ("LICENSE", "CITATION.cff"):
        assert (built / path).is_file() == (ROOT / path).is_file(), path


def test_release_has_no_solutions_tests_or_tooling(built):
    assert not (built / "notebooks" / "solutions").exists()
    assert not (built / "tests").exists() and not (built / "course_utils" / "tooling").exists()
    assert "course_utils.tooling" not in (built / "pyproject.toml").read_text(encoding="utf-8")
    nb = json.loads((built / "notebooks" / "05_causal_mask.ipynb").read_text(encoding="utf-8"))
    assert nb["metadata"]["course"]["role"] == "student"
    assert "NotImplementedError" in "".join("".join(c["source"]) for c in nb["cells"])


def test_no_solution_line_in_the_release(built):
    secret = sum(len(lines) for lines in release.solution_lines().values())
    assert secret >= 40  # the check has something to look for
    assert release.leaks(built) == []


def test_leak_check_finds_a_solution(built, tmp_path):
    copy = tmp_path / "leaky"
    shutil.copytree(built, copy)
    shutil.copy(ROOT / "notebooks" / "solutions" / "07_head_patterns.ipynb", copy / "notebooks" / "07_head_patterns.ipynb")
    found = release.leaks(copy)
    assert found and all(f.startswith("notebooks/07_head_patterns.ipynb: ") for f in found)
