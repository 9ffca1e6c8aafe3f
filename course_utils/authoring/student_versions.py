"""Student versions of the exercise notebooks, generated from their solutions.

Exercise notebooks have one source of truth, ``notebooks/solutions/NN_name.ipynb``.
Inside its code cells, a solution region is marked like this::

    def causal_mask(n):
        ### BEGIN SOLUTION
        return torch.ones(n, n, dtype=torch.bool).tril()
        ### END SOLUTION

The student version ``notebooks/NN_name.ipynb`` (``student_version``) has each region replaced by
``STUB`` at the marker's indentation, and the same cells in the same order. The function that held
the region is task 1, 2, ... in order. A later cell that needs an unfinished task starts with
``# needs task N (name)``, so that it prints one line instead of a traceback until the task is done
(``course_utils.helpers.tasks``). A cell needs a task when it

- uses the task's function (directly, or through a name that a cell needing the task defined), or
- reads an object that a cell needing the task changed in place: ``xs.append(...)``, ``xs += ...``,
  ``d[k] = ...``, ``obj.attr = ...``, ``d.update(...)``, a tensor's ``w.add_(...)``,
  ``random.shuffle(xs)``, ``train_lm(model, ...)`` (see ``MUTATING_METHODS``); also through a
  function of the notebook that changes a global, or a loop variable of a ``for`` over the object.
  That skipped cell did not change it, so a later cell could fail on it (an ``IndexError``, a
  ``KeyError``) or show something else.

So a lesson that goes on with the course's own reference function after a task (imported under
another name: ``from course_utils.core.multihead import split_heads as course_split_heads``) never
waits for the task. What the analysis cannot see: an object changed through another name bound to
it (``b = a`` then ``b.append(1)`` in a skipped cell: ``a`` is not marked). Cells whose statements
only call ``check_*`` functions with task functions are left alone: the checkers report an
unfinished task themselves.
"""

from __future__ import annotations

import ast
import copy
import symtable

import nbformat

from ..helpers.tasks import STUB_MESSAGE, needs_line

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = f'raise NotImplementedError("{STUB_MESSAGE}")'

# Methods that change the object they are called on (lists, dicts, sets, deques, modules). A method
# whose name ends in "_" (a tensor's add_, zero_, copy_) or starts with "train" or "fit" does too.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault",
    "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
    "sort", "reverse", "appendleft", "extendleft", "popleft", "rotate", "__setitem__", "__delitem__",
    "load_state_dict", "register_buffer", "register_parameter", "add_module",
})  # fmt: skip
# Functions that change their first argument (with those whose name ends in "_", as nn.init.zeros_,
# or starts with "train" or "fit", as train_lm(model, ...)).
MUTATING_FUNCTIONS = frozenset({"shuffle", "heapify", "heappush", "heappop", "heappushpop", "heapreplace",
                                "insort", "insort_left", "insort_right"})  # fmt: skip


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


def is_task_cell(source: str) -> bool:
    """True for a solution cell that holds a solution region (its student version holds the stub)."""
    return any(line.strip() == BEGIN for line in source.splitlines())


def solution_lines(solution: nbformat.NotebookNode) -> set[str]:
    """The distinctive lines of a solution notebook's solution regions, stripped: code lines longer
    than 12 characters that are not comments (what must never be published)."""
    lines = set()
    for cell in solution.cells:
        inside = False
        for line in cell.source.splitlines() if cell.cell_type == "code" else ():
            marker = line.strip()
            if marker in (BEGIN, END):
                inside = marker == BEGIN
            elif inside and len(marker) > 12 and not marker.startswith("#"):
                lines.add(marker)
    return lines


# --- What a cell reads, binds and changes --------------------------------------------------------------------


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:  # IPython syntax (%magic, !shell): not analysed
        return None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SCOPES = (*_DEFS, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk(nodes: list, into: tuple = _DEFS) -> list[ast.AST]:
    """Every node under ``nodes`` except inside the scopes ``into`` names (function and class bodies)."""
    found, todo = [], list(nodes)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, into):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _defined(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace: assignments, loop targets, defs, classes and
    imports at its top level (not names local to a function, class or comprehension)."""
    names = set()
    for node in _walk(tree.body, _SCOPES):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _imported(tree: ast.Module) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for node in _walk(tree.body, _SCOPES)
            if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}  # fmt: skip


def _used(source: str) -> set[str]:
    """Names a cell takes from earlier cells: read at its top level, or as globals inside its functions
    and comprehensions, and not bound at its top level (``symtable`` knows each scope's names)."""
    table = symtable.symtable(source, "<cell>", "exec")
    top = {s.get_name(): s for s in table.get_symbols()}
    bound = {name for name, s in top.items() if s.is_assigned() or s.is_imported()}
    used = {name for name, s in top.items() if s.is_referenced()}
    todo = list(table.get_children())
    while todo:
        scope = todo.pop()
        used |= {s.get_name() for s in scope.get_symbols() if s.is_referenced() and s.is_global()}
        todo.extend(scope.get_children())
    return used - bound


def _root(node: ast.AST) -> str | None:
    """The name at the root of ``x``, ``x.a``, ``x[i].b``: the object that changes when they do."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _changes_its_object(method: str) -> bool:
    return method in MUTATING_METHODS or _changes_its_argument(method)


def _changes_its_argument(function: str) -> bool:
    return ((function.endswith("_") and not function.startswith("__")) or function.startswith(("train", "fit"))
            or function in MUTATING_FUNCTIONS)  # fmt: skip


def _changed(nodes: list, modules: set[str], nested: bool = False) -> set[str]:
    """Names whose objects the statements ``nodes`` change in place (inside function bodies only if
    ``nested``). ``modules``: names bound by imports; ``np.random.shuffle(xs)`` changes ``xs``, not ``np``."""
    found = set()
    for node in _walk(nodes, () if nested else _DEFS):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                found |= {_root(t) for t in ast.walk(target) if isinstance(t, (ast.Subscript, ast.Attribute))
                          and isinstance(t.ctx, (ast.Store, ast.Del))}  # fmt: skip
        elif isinstance(node, ast.Call):
            func = node.func
            owner = _root(func.value) if isinstance(func, ast.Attribute) else None
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if owner is not None and owner not in modules and _changes_its_object(name):
                found.add(owner)
            elif (isinstance(func, ast.Name) or owner in modules) and node.args and _changes_its_argument(name):
                found.add(_root(node.args[0]))
        elif isinstance(node, (ast.For, ast.AsyncFor)):  # for row in table: row.append(0) changes table
            loop = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            if loop & _changed(node.body, modules, nested):
                found |= {n.id for n in ast.walk(node.iter) if isinstance(n, ast.Name)} - modules
    return found - {None}


def _global_changes(tree: ast.Module, modules: set[str]) -> dict[str, set[str]]:
    """For each function a cell defines: the notebook's names that calling it changes
    (objects changed in place that are not its own locals, and names it declares ``global``)."""
    found = {}
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = list(ast.walk(fn))
        declared = {name for n in nodes if isinstance(n, ast.Global) for name in n.names}
        stored = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        args = fn.args
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        local |= stored - declared
        found[fn.name] = (_changed(fn.body, modules, nested=True) - local) | (declared & stored)
    return found


def _stubbed(tree: ast.Module) -> set[str]:
    """Top-level functions and classes of a student cell that contain the stub."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and any(isinstance(n, ast.Constant) and n.value == STUB_MESSAGE for n in ast.walk(node))
    }


def _is_check_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")


def _only_checks(tree: ast.Module) -> bool:
    """True for a cell that only runs checkers: calls of ``check_*`` functions, or one
    ``summarize(check_a(a), check_b(b), ...)`` of them (a notebook's "check everything" cell),
    besides the imports of those names."""
    calls = 0
    for s in tree.body:
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            continue
        call = s.value if isinstance(s, ast.Expr) else None
        summary = (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "summarize"
                   and call.args and not call.keywords and all(_is_check_call(a) for a in call.args))
        if not (_is_check_call(call) or summary):
            return False
        calls += 1
    return calls > 0


# --- The needs lines and the student notebook ------------------------------------------------------------------


def add_needs_lines(cells: list) -> None:
    """Number the tasks and start every cell that needs one with its ``# needs`` line (in place).

    See the module's docstring for when a cell needs a task.
    """
    depends: dict[str, dict[str, int]] = {}  # name -> the task functions it needs
    changes: dict[str, set[str]] = {}  # a function of the notebook -> the names calling it changes
    modules: set[str] = set()
    task_functions: set[str] = set()
    task = 0
    for cell in cells:
        tree = _parse(cell.source) if cell.cell_type == "code" else None
        if tree is None:
            continue
        modules |= _imported(tree)
        defined = _defined(tree)
        changes = {name: found for name, found in changes.items() if name not in defined} | _global_changes(tree, modules)
        stubbed = _stubbed(tree)
        if stubbed:
            task += 1
            for name in stubbed:
                depends[name] = {name: task}
            task_functions |= stubbed
            continue
        used = _used(cell.source)
        needs: dict[str, int] = {}
        for name in used & depends.keys():
            needs.update(depends[name])
        if not needs or (_only_checks(tree) and used & depends.keys() <= task_functions):
            for name in defined:  # a name redefined without a task no longer depends on one
                depends.pop(name, None)
                task_functions.discard(name)
            continue
        cell.source = needs_line(needs) + "\n" + cell.source
        for name in defined:
            depends[name] = dict(needs)
            task_functions.discard(name)
        changed = _changed(tree.body, modules).union(*(changes[name] for name in used & changes.keys()))
        for name in changed - modules:  # skipped, so it did not change them: their readers wait too
            depends[name] = {**depends.get(name, {}), **needs}


def student_version(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of a solution notebook, cell for cell: stubs instead of solutions,
    ``# needs`` lines, outputs cleared, marked ``role: student``. (``nbtools.make_student_notebook``
    adds the header with the student version's own launch links.)"""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = student_source(cell.source)
            cell.outputs, cell.execution_count = [], None
    add_needs_lines(nb.cells)
    name = solution.metadata.get("course", {}).get("file", "")
    nb.metadata["course"] = {"role": "student", "generated_from": f"solutions/{name}"}
    return nb
