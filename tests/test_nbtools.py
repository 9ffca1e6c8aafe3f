"""Student versions are made by replacing solution regions with a stub."""

import nbformat
import pytest

from course_utils.nbtools import STUB, make_student_notebook, student_source


def test_solution_region_becomes_an_indented_stub():
    source = "def f(n):\n    '''doc'''\n    ### BEGIN SOLUTION\n    x = n + 1\n    return x\n    ### END SOLUTION\n\nprint(1)"
    assert student_source(source) == f"def f(n):\n    '''doc'''\n    {STUB}\n\nprint(1)"


def test_two_regions_in_one_cell():
    source = "a = 1\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION\nc = 3\n### BEGIN SOLUTION\nd = 4\n### END SOLUTION"
    assert student_source(source) == f"a = 1\n{STUB}\nc = 3\n{STUB}"


@pytest.mark.parametrize(
    "source",
    ["### BEGIN SOLUTION\nx = 1", "x = 1\n### END SOLUTION", "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION"],
)
def test_unbalanced_markers_are_an_error(source):
    with pytest.raises(ValueError):
        student_source(source)


def test_student_notebook_clears_outputs_and_is_marked():
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION")
    code.outputs = [nbformat.v4.new_output("stream", text="42\n")]
    code.execution_count = 3
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), code]
    student = make_student_notebook(nb)
    assert student.metadata["course"]["role"] == "student"
    assert student.cells[1].source == f"def f():\n    {STUB}"
    assert student.cells[1].outputs == [] and student.cells[1].execution_count is None
    assert "return 42" in nb.cells[1].source  # the solution notebook itself is untouched
