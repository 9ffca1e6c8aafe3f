"""Exercise notebooks: the committed student versions are up to date, hold no solution code,
and read well before anyone runs them (nbval runs them top to bottom with no error allowed):
the transformer that skips a cell of an unfinished task is switched on before the first such
cell, and no task makes more than two cells wait."""

import ast
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from course_utils.authoring.nbtools import BEGIN, END, NOTEBOOKS, ROOT, SOLUTIONS, make_student_notebook
from course_utils.authoring.student_versions import solution_lines
from course_utils.helpers.tasks import NEED, NEEDS

SOLUTION_PATHS = sorted(SOLUTIONS.glob("*.ipynb"))
ids = [p.name for p in SOLUTION_PATHS]


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
    assert student_path.exists(), f"run `python -m course_utils.authoring.nbtools students` to create {student_path.name}"
    expected = make_student_notebook(nbformat.read(solution_path, as_version=4), student_path)
    student = nbformat.read(student_path, as_version=4)
    assert [(c.cell_type, c.source) for c in student.cells] == [(c.cell_type, c.source) for c in expected.cells], (
        f"{student_path.name} is out of date: run `python -m course_utils.authoring.nbtools students`"
    )


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_student_version_contains_no_solution_code(solution_path: Path):
    solution = nbformat.read(solution_path, as_version=4)
    secret = solution_lines(solution)
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


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_student_version_has_the_solutions_cells_in_the_same_order(solution_path: Path):
    solution = nbformat.read(solution_path, as_version=4)
    student = nbformat.read(NOTEBOOKS / solution_path.name, as_version=4)
    assert [c.cell_type for c in student.cells] == [c.cell_type for c in solution.cells], (
        f"{solution_path.name}: run `python -m course_utils.authoring.nbtools execute {solution_path.relative_to(ROOT)}` "
        "(it gives the solution its header), then `nbtools students` on it"
    )


def _guards(student) -> list[str]:
    return [c.source.splitlines()[0] for c in student.cells
            if c.cell_type == "code" and c.source and NEEDS.match(c.source.splitlines()[0])]  # fmt: skip


def _enables(source: str) -> bool:
    """True for a cell that calls ``enable()`` of ``course_utils.helpers.tasks`` (imported as a name or a module)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    imports = any(
        (isinstance(n, ast.ImportFrom) and n.module in ("course_utils.helpers.tasks", "course_utils.helpers"))
        or (isinstance(n, ast.Import) and any(a.name == "course_utils.helpers.tasks" for a in n.names))
        for n in ast.walk(tree)
    )
    calls = any(isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "enable" for n in ast.walk(tree))
    return imports and calls


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_student_version_switches_the_skipping_on_before_its_first_waiting_cell(solution_path: Path):
    """``import course_utils`` does not register the transformer: the set-up cell calls ``enable()``."""
    student = nbformat.read(NOTEBOOKS / solution_path.name, as_version=4)
    code = [c.source for c in student.cells if c.cell_type == "code"]
    first = next((i for i, src in enumerate(code) if src and NEEDS.match(src.splitlines()[0])), None)
    if first is not None:
        assert any(_enables(src) for src in code[:first]), (
            f"{solution_path.name}: add `from course_utils.helpers.tasks import enable` and `enable()` to the set-up cell"
        )


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=ids)
def test_no_task_makes_more_than_two_cells_wait(solution_path: Path):
    """After a task, the lesson goes on with the course's own function (imported under another name):
    only the cells that use the student's function wait for it."""
    student = nbformat.read(NOTEBOOKS / solution_path.name, as_version=4)
    waiting = Counter(f"task {task} ({name})" for line in _guards(student) for task, name in NEED.findall(line))
    too_many = {task: n for task, n in waiting.items() if n > 2}
    assert not too_many, f"{solution_path.name}: cells waiting per task {too_many} (at most 2)"
