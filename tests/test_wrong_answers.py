"""A student who answers a task wrong still reaches the end of the notebook with Run All.

For every solution notebook, its student version is run top to bottom (nbclient, one kernel per
notebook) with every task answered *wrong*: the solution's code pasted in, then the function
wrapped so that it returns a wrong value of the same type (tensors * 1.5 + 1, numbers + 1, bools
negated, ...; a class's ``forward`` likewise). The notebook must reach its last cell with no error
(the kernel never replies with an error, so JupyterLab's Run All would not stop), every cell that
uses the student's function must be one the generator marked (its ``# needs`` line names the task)
or a checker cell, and a marked cell that found the wrong answer prints one line
(``course_utils.helpers.tasks.different_answer``), never a traceback. Slow tier: ``pytest -m slow``.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import textwrap
from pathlib import Path

import nbformat
import pytest

from course_utils.authoring.nbtools import NOTEBOOKS, ROOT, SOLUTIONS, execute
from course_utils.authoring.student_versions import _only_checks, _parse, _stubbed, is_task_cell, student_source
from course_utils.helpers.tasks import NEED, NEEDS

pytestmark = pytest.mark.slow
SOLUTION_PATHS = sorted(p for p in SOLUTIONS.glob("*.ipynb") if (NOTEBOOKS / p.name).exists())
CALLS = "__SKEWED_CALLS__ "
ONE_LINE = re.compile(r"^Tasks? \d+ \(`\w+`\).*(gives a different answer here|fails here with \w+).*"
                      r"Its checker above says more; the lesson goes on with the course's function\.$")  # fmt: skip


def skew_helpers():  # its body runs in the notebook's kernel, as the first cell
    import functools

    __skewed_calls__, __running__, __depth__ = [], [""], [0]
    get_ipython().events.register("pre_run_cell", lambda info: __running__.__setitem__(0, info.raw_cell))  # noqa: F821

    def __skew_value__(value):
        import sys

        torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
        if isinstance(value, bool):
            return not value
        if isinstance(value, (int, float)):
            return value + 1
        if isinstance(value, str):
            return value + " (wrong)"
        if torch is not None and isinstance(value, torch.Tensor):
            if value.dtype == torch.bool:
                return ~value
            return value * 1.5 + 1 if value.is_floating_point() else value + 1
        if np is not None and isinstance(value, np.ndarray):
            return ~value if value.dtype == bool else value * 1.5 + 1
        if isinstance(value, (tuple, list)):
            items = [__skew_value__(v) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, dict):
            return {k: __skew_value__(v) for k, v in value.items()}
        return value

    def __skew_task__(task):
        def call(function, *args, **kwargs):  # records the calls a cell makes, not one task's calls of another
            if __depth__[0] == 0:
                __skewed_calls__.append([__running__[0], task.__name__])
            __depth__[0] += 1
            try:
                return __skew_value__(function(*args, **kwargs))
            finally:
                __depth__[0] -= 1

        if isinstance(task, type):
            original = task.forward

            def forward(self, *args, **kwargs):
                return call(original, self, *args, **kwargs)

            return type(task.__name__, (task,), {"forward": forward, "__module__": task.__module__,
                                                 "__qualname__": task.__qualname__})  # fmt: skip

        @functools.wraps(task)
        def skewed(*args, **kwargs):
            return call(task, *args, **kwargs)

        return skewed


def wrong_answers_notebook(solution: nbformat.NotebookNode, student: nbformat.NotebookNode) -> tuple:
    """The student version with every task answered wrong, and {task function: its task number}."""
    nb = nbformat.from_dict(student)
    solved = [c for c in solution.cells if c.cell_type == "code"]
    tasks: dict[str, int] = {}
    for mine, theirs in zip([c for c in nb.cells if c.cell_type == "code"], solved, strict=True):
        if is_task_cell(theirs.source):
            names = sorted(_stubbed(_parse(student_source(theirs.source))))
            tasks.update({name: max(tasks.values(), default=0) + 1 for name in names})
            mine.source = theirs.source + "".join(f"\n{name} = __skew_task__({name})" for name in names)
    helpers = textwrap.dedent(inspect.getsource(skew_helpers).split("\n", 1)[1])
    nb.cells.insert(0, nbformat.v4.new_code_cell(helpers))
    nb.cells.append(nbformat.v4.new_code_cell(f"print({CALLS!r} + __import__('json').dumps(__skewed_calls__))"))
    return nb, tasks


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


@pytest.mark.parametrize("solution_path", SOLUTION_PATHS, ids=[p.name for p in SOLUTION_PATHS])
def test_every_task_answered_wrong_the_notebook_still_runs_to_its_last_cell(solution_path: Path, monkeypatch):
    solution = nbformat.read(solution_path, as_version=4)
    nb, tasks = wrong_answers_notebook(solution, nbformat.read(NOTEBOOKS / solution_path.name, as_version=4))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    execute(nb, NOTEBOOKS, timeout=300)  # CellExecutionError if a cell raised: Run All would stop there

    calls = json.loads(_text(nb.cells[-1]).split(CALLS, 1)[1])
    unmarked = set()
    for source, name in calls:
        first = source.splitlines()[0] if source else ""
        marked = NEEDS.match(first) and (str(tasks[name]), name) in NEED.findall(first)
        if not (marked or _only_checks(_parse(source)) or is_task_cell(source)):
            unmarked.add((name, first))
    assert not unmarked, f"cells use a task's function without a `# needs` line for it: {sorted(unmarked)}"
    assert {name for _, name in calls} == set(tasks), "a task's function was never called: nothing checked it"
    for cell in nb.cells:
        if cell.cell_type == "code" and NEEDS.match(cell.source.splitlines()[0] if cell.source else ""):
            text = _text(cell)
            ours = [line for line in text.splitlines() if line.startswith(("Task ", "Tasks "))]
            assert len(ours) <= 1 and all(ONE_LINE.match(line) for line in ours), text
            assert "Traceback" not in text and "[try again]" not in text, text
