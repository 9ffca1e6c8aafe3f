"""`# needs task N (name)` cells: one line while a task is a stub, the cell itself once it is written."""

import pytest
from IPython.core.interactiveshell import InteractiveShell

from course_utils.helpers import tasks
from course_utils.tooling.student_versions import STUB, add_needs_lines


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    assert tasks.enable(sh)
    yield sh
    sh.user_ns.pop("f", None)
    sh.user_ns.pop("Layer", None)


def _run(shell, source, capsys):
    result = shell.run_cell(source, store_history=False)
    return result, capsys.readouterr().out


def test_a_cell_needing_an_unwritten_function_prints_one_line(shell, capsys):
    shell.run_cell(f"def f(n):\n    {STUB}", store_history=False)
    result, out = _run(shell, "# needs task 2 (f)\nprint(f(3))", capsys)
    assert result.success and result.error_in_exec is None
    assert out == "Task 2 is not done yet: write `f` above, then run this cell again.\n"


def test_the_cell_runs_as_written_once_the_function_is_written(shell, capsys):
    shell.run_cell("def f(n):\n    return n + 1", store_history=False)
    result, out = _run(shell, "# needs task 2 (f)\nprint(f(3))\nf(4)", capsys)
    assert out.startswith("4\n") and result.result == 5  # output and Out[] as without the line


def test_errors_of_a_written_function_are_not_hidden(shell, capsys):
    shell.run_cell("def f(n):\n    return 1 / 0", store_history=False)
    result, _ = _run(shell, "# needs task 1 (f)\nf(3)", capsys)
    assert isinstance(result.error_in_exec, ZeroDivisionError)


def test_a_class_with_a_stubbed_method_counts_as_unwritten(shell, capsys):
    shell.run_cell(f"class Layer:\n    def forward(self, x):\n        {STUB}", store_history=False)
    _, out = _run(shell, "# needs task 1 (f), task 3 (Layer)\nLayer().forward(1)", capsys)
    assert out == "Tasks 1, 3 are not done yet: write `f`, `Layer` above, then run this cell again.\n"


def test_a_plain_comment_is_left_alone(shell, capsys):
    _, out = _run(shell, "# needs more thought\nprint('ran')", capsys)
    assert out == "ran\n"


def test_enable_registers_once(shell):
    tasks.enable(shell)
    assert sum(getattr(t, "_course_task_skipper", False) for t in shell.input_transformers_post) == 1


def test_the_generator_marks_cells_that_use_a_task_directly_or_through_names():
    import nbformat

    cells = [nbformat.v4.new_code_cell(s) for s in (
        f"def f(n):\n    {STUB}",
        "check_f(f)",  # a checker reports an unfinished task itself
        "y = f(2)\nz = [i for i in range(3)]",
        "print(y)",  # uses f through y
        "print(z)",  # z comes from a dependent cell too
        "y = 1\nprint(y)",  # binds y itself: independent
        "for name in ['a']:\n    print(name)",  # a loop variable of its own
    )]
    add_needs_lines(cells)
    firsts = [c.source.splitlines()[0] for c in cells]
    assert firsts[1] == "check_f(f)"
    assert firsts[2] == firsts[3] == firsts[4] == "# needs task 1 (f)"
    assert not firsts[5].startswith("# needs") and not firsts[6].startswith("# needs")
