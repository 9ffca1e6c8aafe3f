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
not run), the line says to run that cell. When every named function is written, the cell runs as
written, with one difference: an error raised in it (an ``AssertionError`` because the student's
function gives another answer than the course's, or any error from inside that function) does not
stop Run All. The cell prints one line that names the task and what differs ("Task 1
(`causal_mask`) gives a different answer here: ... Its checker above says more; the lesson goes on
with the course's function."), closes the figures it had opened, and the kernel reports success.
Otherwise the cell behaves as without its line: its prints print, its plots show, its last
expression is displayed. Only the task's checker cell says ``[try again]``. Outside IPython, or
before ``enable()``, the comment is only a comment (solution notebooks have no such lines).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Callable

STUB_MESSAGE = "Your turn: replace this line with your code."
NEEDS = re.compile(r"^# needs (task \d+ \(\w+\))(, task \d+ \(\w+\))*$")
NEED = re.compile(r"task (\d+) \((\w+)\)")
WAITING = re.compile(r"(not done yet: write |not defined yet: run )")  # in the line a waiting cell prints
# The first line of a cell whose tasks are written, as the input transformer leaves it for ``GuardCell``.
MARKER = "course_utils: this cell needs "


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
    if missing:
        return [f"print({waiting_message(missing, needs, namespace)!r})\n"]
    return [f"{MARKER + first[len('# needs '):]!r}\n", *lines[1:]]  # same line numbers; GuardCell reads it


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
    if not any(isinstance(t, GuardCell) for t in shell.ast_transformers):
        shell.ast_transformers.append(GuardCell())
    return True


# --- A written task that gives another answer: one line, and Run All goes on ---------------------------------


class GuardCell(ast.NodeTransformer):
    """AST transformer: a cell that starts with ``MARKER`` (a ``# needs`` cell whose tasks are all
    written) runs inside ``try``/``except Exception``; the handler prints ``different_answer``'s
    line. A last expression is kept and displayed after the ``try``, as IPython displays it."""

    def visit_Module(self, module: ast.Module) -> ast.Module:
        first = module.body[0] if module.body else None
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str) and first.value.value.startswith(MARKER)):
            return module
        needs, body = first.value.value[len(MARKER):], module.body[1:]
        last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
        if last is not None:
            body.append(ast.Expr(_call("_keep", last.value)))
        handler = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=None,
                                    body=[ast.Expr(_call("_report", ast.Constant(needs)))])
        guarded = [ast.Expr(_call("_begin")), ast.Try(body=body or [ast.Pass()], handlers=[handler], orelse=[], finalbody=[])]
        module.body = guarded + ([ast.Expr(_call("_shown"))] if last is not None else [])
        return ast.fix_missing_locations(module)


def _call(function: str, *args: ast.expr) -> ast.Call:
    """``__import__("course_utils.helpers.tasks", fromlist=["_"]).function(*args)``: no name is added to the notebook."""
    module = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant(__name__)],
                      [ast.keyword("fromlist", ast.List([ast.Constant("_")], ast.Load()))])
    return ast.Call(ast.Attribute(module, function, ast.Load()), list(args), [])


_cell: dict = {"value": None, "figures": set()}  # the guarded cell that runs now


def _begin() -> None:
    pyplot = sys.modules.get("matplotlib.pyplot")
    _cell.update(value=None, figures=set(pyplot.get_fignums()) if pyplot else set())


def _keep(value: object) -> None:
    _cell["value"] = value


def _shown() -> object:
    value, _cell["value"] = _cell["value"], None
    return value


def _report(needs: str) -> None:
    """In the ``except`` of a guarded cell: print the one line, close the figures the cell opened."""
    error = sys.exc_info()[1]
    pyplot = sys.modules.get("matplotlib.pyplot")
    for number in set(pyplot.get_fignums()) - _cell["figures"] if pyplot else ():
        pyplot.close(number)
    _cell["value"] = None
    print(different_answer({name: int(task) for task, name in NEED.findall(needs)}, error))


def different_answer(needs: dict[str, int], error: BaseException) -> str:
    """The line a cell prints when it raised ``error`` with the tasks ``needs`` ({name: task number}) written."""
    named = [f"task {task} (`{name}`)" for name, task in sorted(needs.items(), key=lambda kv: (kv[1], kv[0]))]
    which = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    which = which[0].upper() + which[1:]
    lines = str(error).strip().splitlines()
    detail = lines[0].strip().rstrip(".") if lines else ""
    if isinstance(error, NotImplementedError) and STUB_MESSAGE in str(error):  # it calls another task's stub
        return f"{which} calls a function whose task is not done yet: write it above, then run this cell again."
    if isinstance(error, AssertionError):
        what = f"gives a different answer here: {detail}" if detail else "gives a different answer here"
    else:
        what = f"fails here with {type(error).__name__}" + (f": {detail}" if detail else "")
    return f"{which} {what}. Its checker above says more; the lesson goes on with the course's function."
