"""Exercise notebooks: the committed student versions are up to date, hold no solution
code, and run top to bottom with NotImplementedError as their only errors."""

from pathlib import Path

import nbformat
import pytest

from course_utils.tooling.nbtools import BEGIN, END, NOTEBOOKS, SOLUTIONS, execute, make_student_notebook

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
def test_student_version_runs_with_only_not_implemented_errors(solution_path: Path):
    student_path = NOTEBOOKS / solution_path.name
    nb = execute(nbformat.read(student_path, as_version=4), student_path.parent, allow_errors=True)
    errors = [o.ename for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors, "a student version should stop at its stubs with NotImplementedError"
    assert set(errors) == {"NotImplementedError"}, f"unexpected errors: {errors}"
