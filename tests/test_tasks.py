"""`# needs task N (name)` cells: one line while a task is a stub, the cell itself once it is written."""

import pytest
from IPython.core.interactiveshell import InteractiveShell

from course_utils.authoring.student_versions import STUB, add_needs_lines
from course_utils.helpers import tasks


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    assert tasks.enable(sh)
    yield sh
    sh.user_ns.pop("f", None)
    sh.user_ns.pop("Layer", None)
    sh.user_ns.pop("g", None)


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


def test_a_written_function_that_gives_another_answer_prints_one_line_and_run_all_goes_on(shell, capsys):
    shell.run_cell("def f(n):\n    return n + 2", store_history=False)
    source = "# needs task 2 (f)\nprint('before')\nassert f(1) == 2, 'f(1) gives 3, expected 2\\nmore detail'\nprint('after')"
    result, out = _run(shell, source, capsys)
    assert result.success and result.error_in_exec is None  # the kernel's reply is not an error
    assert out == (
        "before\nTask 2 (`f`) gives a different answer here: f(1) gives 3, expected 2. "
        "Its checker above says more; the lesson goes on with the course's function.\n"
    )
    assert "[try again]" not in out  # only the checker cell says it


def test_an_error_raised_by_the_written_function_names_the_tasks_and_the_error(shell, capsys):
    shell.run_cell("def f(n):\n    return 1 / 0", store_history=False)
    shell.run_cell("def g(n):\n    return n", store_history=False)
    result, out = _run(shell, "# needs task 1 (f), task 3 (g)\ny = g(f(3))", capsys)
    assert result.success and "y" not in shell.user_ns
    assert out.startswith("Task 1 (`f`) or task 3 (`g`) fails here with ZeroDivisionError: division by zero. ")
    assert out.count("\n") == 1


def test_a_written_function_that_calls_a_stub_says_so(shell, capsys):
    shell.run_cell(f"def f(n):\n    {STUB}", store_history=False)
    shell.run_cell("def g(n):\n    return f(n) + 1", store_history=False)
    _, out = _run(shell, "# needs task 2 (g)\ng(1)", capsys)
    assert out == "Task 2 (`g`) calls a function whose task is not done yet: write it above, then run this cell again.\n"


def test_a_guarded_cell_that_works_binds_prints_and_displays_as_without_its_line(shell, capsys):
    shell.run_cell("def f(n):\n    return n + 1", store_history=False)
    result, out = _run(shell, "# needs task 2 (f)\nprint(f(1))\ny = f(3)\ny * 2", capsys)
    assert out.startswith("2\n") and result.result == 8 and shell.user_ns.pop("y") == 4
    result, out = _run(shell, "# needs task 2 (f)\nf(1)\nz = 1", capsys)  # no last expression: nothing shown
    assert result.result is None and out == "" and shell.user_ns.pop("z") == 1


def test_a_guarded_cell_that_fails_closes_the_figures_it_opened(shell, capsys):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    before = plt.figure()
    shell.run_cell("def f(n):\n    raise ValueError('no')", store_history=False)
    result, out = _run(shell, "# needs task 1 (f)\nimport matplotlib.pyplot as plt\nplt.figure()\nf(1)", capsys)
    assert result.success and "ValueError: no." in out
    assert plt.get_fignums() == [before.number]
    plt.close("all")


def test_errors_outside_guarded_cells_are_not_hidden(shell):
    result = shell.run_cell("1 / 0", store_history=False)
    assert isinstance(result.error_in_exec, ZeroDivisionError)


def test_a_class_with_a_stubbed_method_counts_as_unwritten(shell, capsys):
    shell.run_cell(f"def f(n):\n    {STUB}", store_history=False)
    shell.run_cell(f"class Layer:\n    def forward(self, x):\n        {STUB}", store_history=False)
    _, out = _run(shell, "# needs task 1 (f), task 3 (Layer)\nLayer().forward(1)", capsys)
    assert out == "Tasks 1, 3 are not done yet: write `f`, `Layer` above, then run this cell again.\n"


def test_a_plain_comment_is_left_alone(shell, capsys):
    _, out = _run(shell, "# needs more thought\nprint('ran')", capsys)
    assert out == "ran\n"


def test_enable_registers_once(shell):
    tasks.enable(shell)
    assert sum(getattr(t, "_course_task_skipper", False) for t in shell.input_transformers_post) == 1
    assert sum(isinstance(t, tasks.GuardCell) for t in shell.ast_transformers) == 1


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
        "def show(z):\n    return z\nshow(z)",  # a parameter named like a tainted global: the cell still reads z
        "def later():\n    return f(1)",  # a function body that calls the task
    )]
    add_needs_lines(cells)
    firsts = [c.source.splitlines()[0] for c in cells]
    assert firsts[1] == "check_f(f)"
    assert firsts[2] == firsts[3] == firsts[4] == "# needs task 1 (f)"
    assert not firsts[5].startswith("# needs") and not firsts[6].startswith("# needs")
    assert firsts[7] == firsts[8] == "# needs task 1 (f)"


def test_a_cell_whose_task_function_was_never_defined_says_to_run_its_cell(shell, capsys):
    shell.user_ns.pop("f", None)
    _, out = _run(shell, "# needs task 2 (f)\nprint(f(3))", capsys)
    assert out == "`f` is not defined yet: run the cell of task 2 above, then this one again.\n"


# --- The generator: which cells wait ----------------------------------------------------------------------------


def _firsts(sources: list[str]) -> list[str]:
    import nbformat

    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    add_needs_lines(cells)
    return [c.source.splitlines()[0] for c in cells]


@pytest.mark.parametrize(("source", "changed"), [
    ("xs.append(1)", {"xs"}),
    ("xs.extend([1])\nd.update(a=1)", {"xs", "d"}),
    ("d[k] = 1", {"d"}),
    ("d['a']['b'] = 1", {"d"}),
    ("del d['a']", {"d"}),
    ("obj.attr = 1", {"obj"}),
    ("obj.attr += 1", {"obj"}),
    ("history['loss'].append(0.5)", {"history"}),
    ("w.add_(1)", {"w"}),
    ("model.load_state_dict(state)", {"model"}),
    ("np.random.shuffle(xs)", {"xs"}),
    ("nn.init.zeros_(layer.weight)", {"layer"}),
    ("train_lm(model, steps=3)", {"model"}),
    ("for row in rows:\n    row.append(0)", {"row", "rows"}),
    ("for key, values in table.items():\n    values.append(key)", {"values", "table"}),
    ("[xs.append(i) for i in range(3)]", {"xs"}),
    ("print(xs[0], d['a'], obj.attr)", set()),
    ("torch.manual_seed(0)\nplt.plot(xs)\nax.set_title('t')", set()),
    ("def helper():\n    xs.append(1)", set()),  # only when it is called (see below)
])  # fmt: skip
def test_what_a_cell_changes_in_place(source, changed):
    import ast

    from course_utils.authoring.student_versions import _changed

    assert _changed(ast.parse(source).body, modules={"np", "nn", "torch", "plt"}) == changed


def test_functions_of_the_notebook_that_change_globals():
    import ast

    from course_utils.authoring.student_versions import _global_changes

    source = (
        "def record(v):\n    history.append(v)\n    local = []\n    local.append(v)\n"
        "def count():\n    global total\n    total = total + 1\n"
        "def pure(xs):\n    xs.append(1)\n    return xs\n"
    )
    assert _global_changes(ast.parse(source), modules=set()) == {"record": {"history"}, "count": {"total"}, "pure": set()}


def test_readers_of_an_object_a_skipped_cell_changed_wait_too():
    firsts = _firsts([
        f"def f(n):\n    {STUB}",
        "xs, table, rows, log = [], {}, [[0]], []\ndef record(v):\n    log.append(v)",
        "xs.append(f(1))",  # uses f: waits, and so xs never gets its item
        "table['a'] = f(2)\nfor row in rows:\n    row.append(f(3))\nrecord(f(4))",
        "print(xs[0])",  # would be an IndexError
        "print(table['a'])",  # a KeyError
        "print(rows[0][1])",  # changed through the loop variable
        "print(log[0])",  # changed by a function of the notebook
        "ys = [1]\nys.append(2)\nprint(ys[1])",  # its own list: runs
        "xs = []\nprint(len(xs))",  # rebinds xs: runs
        "print(xs)",  # the new xs
    ])  # fmt: skip
    assert firsts[2] == firsts[3] == "# needs task 1 (f)"
    assert firsts[4] == firsts[5] == firsts[6] == firsts[7] == "# needs task 1 (f)"
    assert [s.startswith("# needs") for s in firsts[8:]] == [False, False, False]


def test_changes_keep_every_task_they_come_from():
    firsts = _firsts([
        f"def f(n):\n    {STUB}",
        f"def g(n):\n    {STUB}",
        "xs = []",
        "xs.append(f(1))",
        "xs.append(g(1))",
        "print(xs)",
    ])  # fmt: skip
    assert firsts[3:] == ["# needs task 1 (f)", "# needs task 1 (f), task 2 (g)", "# needs task 1 (f), task 2 (g)"]


def test_a_check_cell_waits_only_when_it_is_given_more_than_a_task_function():
    firsts = _firsts([
        f"def f(n):\n    {STUB}",
        "y = f(2)",
        "check_f(f)",
        "check_y(y)",  # y was never computed: the checker would meet a NameError
    ])  # fmt: skip
    assert firsts[2] == "check_f(f)" and firsts[3] == "# needs task 1 (f)"


def test_a_check_everything_cell_does_not_wait():
    firsts = _firsts([
        f"def f(n):\n    {STUB}",
        f"def g(n):\n    {STUB}",
        "from course_utils.helpers.checkers import summarize\n\nsummarize(check_f(f), check_g(g))",
        "summarize(check_f(f), check_g(g), f(1))",  # runs a task function itself: it waits
    ])  # fmt: skip
    assert firsts[2].startswith("from course_utils") and firsts[3] == "# needs task 1 (f), task 2 (g)"


def _lesson_with_changes():
    """A solution notebook whose skipped cells (no task done) would have changed objects later cells read."""
    import nbformat

    new = nbformat.v4.new_code_cell
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A lesson"),
        new("import random\n\nfrom course_utils.helpers.tasks import enable\n\nenable()"),
        new("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
        new("results, table, rows, history, n = [], {}, [[1], [2]], [], 2\n"
            "class Box:\n    pass\nbox = Box()\nbox.items = []\n"
            "def record(value):\n    history.append(value)"),
        new("results.append(double(1))\ntable['a'] = double(2)\nfor row in rows:\n    row.append(double(3))\n"
            "box.items.append(double(4))\nrecord(double(5))\nrandom.shuffle(rows)"),
        new("print(results[0], table['a'], rows[0][1])"),
        new("print(box.items[0], history[-1])"),
        new("print('the lesson goes on:', n)"),
    ])  # fmt: skip


WAITING = "Task 1 is not done yet: write `double` above, then run this cell again.\n"


def test_a_student_version_runs_to_the_end_with_no_task_done(shell, capsys):
    """Run All of a generated student version in an IPython shell whose set-up cell switches the
    transformer on: no error, and every cell that reads what a skipped cell would have changed waits."""
    from course_utils.authoring.nbtools import make_student_notebook

    solution = _lesson_with_changes()
    student = make_student_notebook(solution)
    assert [c.cell_type for c in student.cells] == [c.cell_type for c in solution.cells]
    printed = []
    try:
        for cell in student.cells[1:]:
            result, out = _run(shell, cell.source, capsys)
            assert result.success, f"{cell.source!r} raised {result.error_in_exec!r}"
            printed.append(out)
    finally:
        shell.reset(new_session=False)
    assert printed[3:] == [WAITING, WAITING, WAITING, "the lesson goes on: 2\n"]


@pytest.mark.slow
def test_a_student_version_runs_to_the_end_in_a_kernel_with_no_task_done(tmp_path):
    """The same in a real kernel (nbclient, as `nbtools students` runs it): no cell raises."""
    from course_utils.authoring.nbtools import execute, make_student_notebook

    student = make_student_notebook(_lesson_with_changes())
    execute(student, tmp_path)  # allow_errors=False: an error in any cell raises
    printed = ["".join(o.get("text", "") for o in c.outputs) for c in student.cells if c.cell_type == "code"]
    assert printed[3:] == [WAITING, WAITING, WAITING, "the lesson goes on: 2\n"]
