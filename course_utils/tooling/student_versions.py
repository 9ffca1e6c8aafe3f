"""Student versions of the exercise notebooks, generated from their solutions.

Exercise notebooks have one source of truth, ``notebooks/solutions/NN_name.ipynb``.
Inside its code cells, a solution region is marked like this::

    def causal_mask(n):
        ### BEGIN SOLUTION
        return torch.ones(n, n, dtype=torch.bool).tril()
        ### END SOLUTION

The student version ``notebooks/NN_name.ipynb`` has each region replaced by ``STUB`` at the
marker's indentation. The function that held the region is task 1, 2, ... in order. Every later
cell that uses a task's function (directly, or through names a cell using it defined) starts with
``# needs task N (name)``, so that it prints one line instead of a traceback until the task is done
(``course_utils.helpers.tasks``). Cells that only call ``check_*`` functions are left alone: the
checkers report an unfinished task themselves.
"""

from __future__ import annotations

import ast
import copy

import nbformat

from ..helpers.tasks import STUB_MESSAGE, needs_line

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = f'raise NotImplementedError("{STUB_MESSAGE}")'


def student_source(source: str) -> str:
    """Replace every solution region of one cell's source with the stub."""
    out, inside = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in cell:\n{source}")
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + STUB)
        elif marker == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r} in cell:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r} in cell:\n{source}")
    return "\n".join(out)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:  # IPython syntax (%magic, !shell): not analysed
        return None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _defined(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace: assignments, loop targets, defs, classes and
    imports at its top level (not names local to a function, class or comprehension)."""
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
    return names


def _used(tree: ast.Module) -> set[str]:
    """Names a cell reads and does not bind anywhere itself: what it takes from earlier cells."""
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | _defined(tree)
    return loaded - bound


def _stubbed(tree: ast.Module) -> set[str]:
    """Top-level functions and classes of a student cell that contain the stub."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and any(isinstance(n, ast.Constant) and n.value == STUB_MESSAGE for n in ast.walk(node))
    }


def _only_checks(tree: ast.Module) -> bool:
    """True for a cell whose statements are all calls of ``check_*`` functions."""
    return bool(tree.body) and all(
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
        and s.value.func.id.startswith("check_")
        for s in tree.body
    )


def add_needs_lines(cells: list) -> None:
    """Number the tasks and start every cell that depends on one with its ``# needs`` line (in place)."""
    depends: dict[str, dict[str, int]] = {}  # name -> the task functions it needs
    task = 0
    for cell in cells:
        tree = _parse(cell.source) if cell.cell_type == "code" else None
        if tree is None:
            continue
        stubbed = _stubbed(tree)
        if stubbed:
            task += 1
            for name in stubbed:
                depends[name] = {name: task}
            continue
        used = _used(tree)
        needs: dict[str, int] = {}
        for name in used & depends.keys():
            needs.update(depends[name])
        if not needs or _only_checks(tree):
            for name in _defined(tree):  # a name redefined without a task no longer depends on one
                depends.pop(name, None)
            continue
        cell.source = needs_line(needs) + "\n" + cell.source
        for name in _defined(tree):
            depends[name] = dict(needs)


def make_student_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of a solution notebook: stubs instead of solutions, ``# needs`` lines,
    outputs cleared, marked ``role: student``. (nbtools adds the header for its own path.)"""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = student_source(cell.source)
            cell.outputs, cell.execution_count = [], None
    add_needs_lines(nb.cells)
    name = solution.metadata.get("course", {}).get("file", "")
    nb.metadata["course"] = {"role": "student", "generated_from": f"solutions/{name}"}
    return nb
