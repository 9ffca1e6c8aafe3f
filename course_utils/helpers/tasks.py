"""Run All reaches the end of a student notebook, even before its tasks are done.

A student notebook holds task functions whose body is a stub::

    def causal_mask(n):
        raise NotImplementedError("Your turn: replace this line with your code.")

A later cell that *uses* ``causal_mask`` would stop Run All with a traceback. The student
generator (``course_utils.authoring.student_versions``) therefore starts every such cell with a
comment that names what it needs::

    # needs task 1 (causal_mask)
    plot_attention(causal_mask(6))

A notebook switches the check on in its set-up cell (``import course_utils`` does not)::

    from course_utils.helpers.tasks import enable
    enable()

From then on, a cell that starts with such a line is checked before it runs: while a function it
names is still a stub, the cell prints one line instead of running ("Task 1 is not done yet: write
`causal_mask` above, then run this cell again."); when a name is not defined at all (its cell was
not run), the line says to run that cell. When every named function is written, the cell runs
exactly as written, errors and all. Outside IPython, or before ``enable()``, the comment is only a
comment.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

STUB_MESSAGE = "Your turn: replace this line with your code."
NEEDS = re.compile(r"^# needs (task \d+ \(\w+\))(, task \d+ \(\w+\))*$")
NEED = re.compile(r"task (\d+) \((\w+)\)")
WAITING = re.compile(r"(not done yet: write |not defined yet: run )")  # in the line a waiting cell prints


def needs_line(needs: dict[str, int]) -> str:
    """The first line the student generator puts on a cell that uses the task names ``{name: task number}``."""
    return "# needs " + ", ".join(f"task {task} ({name})" for name, task in sorted(needs.items(), key=lambda kv: (kv[1], kv[0])))


def is_stub(obj: object) -> bool:
    """True for a function (or a class with a method) whose body still raises the stub's NotImplementedError."""
    if inspect.isclass(obj):
        return any(is_stub(member) for member in vars(obj).values() if inspect.isfunction(member))
    code = getattr(obj, "__code__", None)
    return code is not None and STUB_MESSAGE in code.co_consts


def unfinished(names: list[str], namespace: dict) -> list[str]:
    """The names that are missing from ``namespace`` or still hold a stub."""
    return [name for name in names if name not in namespace or is_stub(namespace[name])]


def skip_unfinished(lines: list[str], namespace: dict) -> list[str]:
    """Input transformer: replace a ``# needs task N: ...`` cell by a one-line message while a name is unfinished."""
    first = lines[0].rstrip("\n") if lines else ""
    if not NEEDS.match(first):
        return lines
    needs = {name: int(task) for task, name in NEED.findall(first)}
    missing = unfinished(list(needs), namespace)
    return [f"print({waiting_message(missing, needs, namespace)!r})\n"] if missing else lines


def waiting_message(missing: list[str], needs: dict[str, int], namespace: dict) -> str:
    """The one line a cell prints instead of running while the names ``missing`` (of the tasks
    ``needs[name]``) are stubs or not defined."""
    undefined = [name for name in missing if name not in namespace]
    names = undefined or missing
    tasks = sorted({needs[name] for name in names})
    listed = ", ".join(f"`{name}`" for name in names)
    numbers = ", ".join(map(str, tasks))
    if undefined:
        verb, cells = ("is", "the cell") if len(names) == 1 else ("are", "the cells")
        return f"{listed} {verb} not defined yet: run {cells} of task {numbers} above, then this one again."
    which = f"Task {numbers} is" if len(tasks) == 1 else f"Tasks {numbers} are"
    return f"{which} not done yet: write {listed} above, then run this cell again."


def enable(shell=None) -> bool:
    """Register ``skip_unfinished`` with the running IPython shell (once); False outside IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    transforms: list[Callable] = shell.input_transformers_post
    if not any(getattr(t, "_course_task_skipper", False) for t in transforms):

        def transform(lines: list[str]) -> list[str]:
            return skip_unfinished(lines, shell.user_ns)

        transform._course_task_skipper = True
        transforms.append(transform)
    return True
