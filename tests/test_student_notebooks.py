"""Exercise notebooks: the committed student versions are up to date, hold no solution code,
and read well before anyone runs them (nbval runs them top to bottom with no error allowed)."""

from pathlib import Path

import nbformat
import pytest

from course_utils.helpers.tasks import NEEDS
from course_utils.tooling.nbtools import BEGIN, END, NOTEBOOKS, SOLUTIONS, make_student_notebook

SOLUTION_PATHS = sorted(SOLUTIONS.glob("*.ipynb"))
ids = [p.name for p in SOLUTION_PATHS]


def _solution_lines(solution) -> set[str]:
    """The non-trivial lines inside solution regions."""
    lines, inside = set(), False
    for cell in solution.cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in (BEGIN, END):
                inside = marker == BEGIN
            elif inside and len(marker) > 12 and not marker.startswith("#"):
                lines.add(marker)
    return lines


def _paste_solutions(student, solution):
    """The student notebook with every stub replaced by the solution cell it came from."""
    pasted = nbformat.from_dict(student)
    code = [c for c in solution.cells if c.cell_type == "code"]
    student_code = [c for c in pasted.cells if c.cell_type == "code"]
    assert len(code) == len(student_code)
    for mine, theirs in zip(student_code, code):
        if BEGIN in theirs.source:
            mine.source = theirs.source
    return pasted


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_student_version_is_committed_and_up_to_date(solution_path: Path):
    student_path = NOTEBOOKS / solution_path.name
    assert student_path.exists(), f"run `python -m course_utils.tooling.nbtools students` to create {student_path.name}"
    expected = make_student_notebook(nbformat.read(solution_path, as_version=4), student_path)
    student = nbformat.read(student_path, as_version=4)
    assert [(c.cell_type, c.source) for c in student.cells] == [(c.cell_type, c.source) for c in expected.cells], (
        f"{student_path.name} is out of date: run `python -m course_utils.tooling.nbtools students`"
    )


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_student_version_contains_no_solution_code(solution_path: Path):
    solution = nbformat.read(solution_path, as_version=4)
    secret = _solution_lines(solution)
    assert secret, f"{solution_path.name} has no solution regions"
    student = nbformat.read(NOTEBOOKS / solution_path.name, as_version=4)
    text = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    assert BEGIN not in text and END not in text
    leaked = [line for line in secret if line in text]
    assert not leaked, f"solution lines in the student version: {leaked}"


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_fresh_student_version_says_which_task_is_missing_instead_of_failing(solution_path: Path):
    student = nbformat.read(NOTEBOOKS / solution_path.name, as_version=4)
    code = [c for c in student.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code if c.source.strip()), "stored without a full run"
    guarded = [c for c in code if NEEDS.match(c.source.splitlines()[0] if c.source else "")]
    assert guarded, "no cell uses a task function: the generator found no dependent cell"
    for cell in guarded:
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "not done yet: write `" in text, f"a cell that needs a task printed {text!r}"
    checks = [c for c in code if c.source.startswith("check_")]
    assert checks and all("[not yet]" in "".join(o.get("text", "") for o in c.outputs) for c in checks)


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_student_version_with_the_solutions_pasted_in_is_the_solution_notebook(solution_path: Path):
    """With every task done, the `# needs` lines are inert (tests/test_tasks.py), so the pasted notebook
    runs as the solution notebook does: nbval runs that one, where every checker must pass."""
    solution = nbformat.read(solution_path, as_version=4)
    pasted = _paste_solutions(nbformat.read(NOTEBOOKS / solution_path.name, as_version=4), solution)
    strip = lambda src: "\n".join(line for line in src.splitlines() if not NEEDS.match(line))  # noqa: E731
    ours = [strip(c.source) for c in pasted.cells if c.cell_type == "code"]
    theirs = [c.source for c in solution.cells if c.cell_type == "code"]
    assert ours == theirs
    checks = [c for c in solution.cells if c.cell_type == "code" and c.source.startswith("check_")]
    assert checks, "the solution notebook runs no checker"
    for cell in checks:
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "[correct]" in text and "[try again]" not in text, f"{cell.source!r} printed {text!r}"
