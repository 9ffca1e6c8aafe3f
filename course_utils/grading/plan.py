"""What ``course-grade`` runs of a submission, decided by reading its cells as text (no student code runs here).

The worker runs only what the tasks need: the top-level statements that define the task objects,
then, transitively, those that define a name any selected statement reads (imports, helper
functions, constants; a function's globals count, found with ``symtable``), those that change
a needed object in place (``X[k] = ...``, ``X.append(...)``), and top-level calls that set a
needed module's global state (``torch.set_default_dtype(...)``, ``torch.manual_seed(...)``).
A cell runs from its start up to the last statement needed from it, as in the notebook (a
statement before a task's ``def`` in its cell that raises leaves the task undefined). Other
cells (plots, trainings, prints, the checker cells) do not run: a lesson cell that fails or
loops costs no task. Cells are first turned into Python the way IPython does
(``%magic`` -> ``get_ipython()...``). A notebook that defines names dynamically (``exec``,
``globals()``, ``import *``, cell magics) and lacks a task's definition runs whole instead.

Also here, on the submitted text alone: the check that an answer hands its work to the course's
own function (the checkers' static check: ``twin_calls``, which refuses plain calls, through
aliases, imports and notebook helpers), and two flags for the instructor (graded on what they
compute; only flagged, see INSTRUCTORS.md): a body that is a copy of the course's code
(``copied_from``), and code that reaches the course's package in a way the static check cannot
follow (``reaches_course``: dynamic code, or a course function or module used as a value).
"""

from __future__ import annotations

import ast
import re
import symtable
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
STAR = "*"  # the "name" a ``from x import *`` binds: it may bind anything
SETTERS = re.compile(r"^(set_\w+|use_\w+|manual_seed|seed)$")
DYNAMIC = re.compile(r"\b(exec|eval|globals|locals|vars|setattr)\s*\(|import \*|run_cell_magic|run_line_magic\('run'")


@lru_cache(maxsize=1024)
def to_python(source: str) -> str:
    """A cell's source as plain Python (IPython's own transformation of magics and ``!`` lines); each
    cell is transformed once, however many of the plan's readers ask."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - leave it to the parser to report
        return source


@dataclass
class Statement:
    cell: int  # the position of its cell among the notebook's code cells
    index: int  # its position in the cell
    binds: set[str]
    touches: set[str]  # names whose items or attributes it assigns (X[k] = ..., X.a = ...)
    calls_on: set[str]  # names it calls a method on, at the top level (X.append(...)): it may change them
    setter_of: set[str]  # modules whose global state it sets
    reads: set[str]


@dataclass
class Plan:
    cells: list[tuple[int, str, list[int] | None]] = field(default_factory=list)  # (cell, code, statements or all)
    broken: dict[int, str] = field(default_factory=dict)  # cell -> "SyntaxError: ..." (it defines nothing)
    broken_defines: dict[str, int] = field(default_factory=dict)  # name -> the broken cell that seems to define it
    whole: bool = False  # runs every cell (dynamic definitions)

    def to_message(self) -> dict:
        return {"cells": [list(c) for c in self.cells]}


def _reads(stmt: ast.stmt) -> set[str]:
    """Global names the statement reads when it runs, or when a function/class it defines is used."""
    table, names = symtable.symtable(ast.unparse(stmt), "<cell>", "exec"), set()
    stack = [(table, True)]
    while stack:
        t, top = stack.pop()
        names |= {s.get_name() for s in t.get_symbols() if (s.is_referenced() if top else s.is_global())}
        stack += [(c, False) for c in t.get_children()]
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _binds(stmt: ast.stmt) -> set[str]:
    names, stack = set(), [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            stack += node.decorator_list + ([] if isinstance(node, ast.ClassDef) else [node.args])
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {STAR if a.name == "*" else (a.asname or a.name.split(".")[0]) for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        stack += list(ast.iter_child_nodes(node))
    return names


def analyse(cell: int, index: int, stmt: ast.stmt) -> Statement:
    touches, setter_of = set(), set()  # a method call on an imported module counts only if it sets state
    targets = stmt.targets if isinstance(stmt, (ast.Assign, ast.Delete)) else (
        [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else [])
    touches |= {_root(t) for t in targets if isinstance(t, (ast.Attribute, ast.Subscript))} - {None}
    call, calls_on = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None, set()
    if call is not None and isinstance(call.func, ast.Attribute) and _root(call.func):
        (setter_of if SETTERS.match(call.func.attr) else calls_on).add(_root(call.func))
    return Statement(cell, index, _binds(stmt), touches, calls_on, setter_of, _reads(stmt))


def make_plan(sources: list[str], names: list[str]) -> Plan:
    """The cells and statements to run so that ``names`` exist as the whole notebook would leave them."""
    plan, statements, codes, imported = Plan(), [], {}, set()
    for cell, source in enumerate(sources):
        code = codes[cell] = to_python(source)
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:  # ValueError: a NUL byte
            plan.broken[cell] = f"{type(err).__name__}: {err.msg if isinstance(err, SyntaxError) else err}"
            from .exercises import DEFINITION

            for a, b in DEFINITION.findall(code):
                plan.broken_defines.setdefault(a or b, cell)
            continue
        for index, stmt in enumerate(tree.body):
            try:
                statements.append(analyse(cell, index, stmt))
            except (RecursionError, MemoryError, SyntaxError, ValueError):  # too deep to read (a long sum):
                statements.append(Statement(cell, index, set(), set(), set(), set(), set()))  # runs only if before
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                imported |= statements[-1].binds
    bound = set().union(*(s.binds for s in statements))
    if any(n not in bound and n not in plan.broken_defines for n in names) and any(
            DYNAMIC.search(c) for c in codes.values()):
        plan.whole = True
        plan.cells = [(cell, code, None) for cell, code in codes.items() if cell not in plan.broken]
        return plan
    needed, chosen = set(names), set()
    while True:
        new = [s for s in statements if (s.cell, s.index) not in chosen and (
            s.binds & (needed | {STAR}) or s.setter_of & needed or s.touches & needed or (s.calls_on & needed) - imported)]
        if not new:
            break
        for s in new:  # a cell runs from its start: what comes before a needed statement in its cell runs too
            for before in statements:
                if before.cell == s.cell and before.index <= s.index and (s.cell, before.index) not in chosen:
                    chosen.add((s.cell, before.index))
                    needed |= before.reads
    for cell in sorted({c for c, _ in chosen}):
        plan.cells.append((cell, codes[cell], sorted(i for c, i in chosen if c == cell)))
    return plan


# -- static checks on the submitted text ----------------------------------------------------------

def definitions(sources: list[str], name: str) -> list[ast.stmt]:
    """Every top-level definition of ``name`` (def or class) in the notebook, in order."""
    found = []
    for source in sources:
        try:
            tree = ast.parse(to_python(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        found += [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and s.name == name]
    return found


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The function's statements without its docstring."""
    first = fn.body[0] if fn.body else None
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    return fn.body[1:] if docstring else fn.body


def _shape(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The function's body as tokens, without docstring and comments; every local name is the same token."""
    body = _body(fn)
    local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    local |= {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    tokens = []
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                tokens.append("_" if node.id in local else node.id)
            elif isinstance(node, ast.Attribute):
                tokens.append("." + node.attr)
            elif isinstance(node, ast.Constant):
                tokens.append(repr(node.value)[:20])
            else:
                tokens.append(type(node).__name__)
    return tokens


def _grams(tokens: list[str], k: int = 5) -> set[int]:
    return {zlib.crc32("\x1f".join(tokens[i:i + k]).encode()) for i in range(max(1, len(tokens) - k + 1))}


@lru_cache(maxsize=1)
def course_functions() -> list[tuple[str, int, set[int], str]]:
    """(qualified name, token count, 5-grams, exact shape) of every function of the package a student could copy:
    not the maintainers' rooms (authoring, studies, grading), and not the checkers, whose reference answers are
    what a right answer naturally looks like."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if {"authoring", "studies", "grading", "checkers"} & set(path.parts) or "__pycache__" in path.parts:
            continue
        module = ".".join(("course_utils", *path.relative_to(PACKAGE).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(_body(node)) >= 2:
                tokens = _shape(node)
                found.append((f"{module}.{node.name}", len(tokens), _grams(tokens), "\x1f".join(tokens)))
    return found


def copied_from(sources: list[str], name: str) -> str:
    """The course function whose code the last definition of ``name`` copies ('' if none): for bodies of
    25 tokens or more, the same body (up to the names of locals, docstring and comments) with two
    statements or more, or one that holds 80 % of the course function's token 5-grams, which make up
    60 % of its own. Short right answers look alike by nature: they are never flagged."""
    defs = definitions(sources, name)
    if not defs:
        return ""
    last = defs[-1]
    functions = [last] if not isinstance(last, ast.ClassDef) else [
        n for n in last.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for fn in functions:
        tokens, statements = _shape(fn), len(_body(fn))
        grams, exact = _grams(tokens), "\x1f".join(tokens)
        for qualified, size, course, course_exact in course_functions():
            if exact == course_exact and statements >= 2 and size >= 25:
                return qualified
            shared = len(grams & course)
            if min(size, len(tokens)) >= 25 and shared >= 0.8 * len(course) and shared >= 0.6 * len(grams):
                return qualified
    return ""


def twin_calls(task, sources: list[str]) -> list[str]:
    """The course functions the answer to ``task`` (a ``grading.exercises.Task``) hands its work to: the
    checkers' static check on the notebook's cells (``course_utils.helpers.checkers.twin_calls``, the
    contract's rule 6; every graded check is registered). A definition nested too deeply to read is not
    refused here: it is graded on what it computes."""
    from ..helpers.checkers import twin_calls as checkers_twin_calls

    try:
        return list(checkers_twin_calls(task.check, sources))
    except ValueError:
        return []


DISGUISES = re.compile(r"__import__|\bimportlib\b|\bsys\.modules\b|(?<![.\w])(?:vars|globals|locals|exec|eval|compile|getattr)\s*\("
                       r"|\battrgetter\b|\binspect\b|\bbase64\b|\bcodecs\b|__dict__")


def _course_names(stmt: ast.stmt) -> set[str]:
    """The names an import statement binds to the course's package or to something in it."""
    if isinstance(stmt, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in stmt.names if a.name.split(".")[0] == "course_utils"}
    if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").split(".")[0] == "course_utils" and not stmt.level:
        return {a.asname or a.name for a in stmt.names}
    return set()


def _value_use(stmt: ast.stmt, names: set[str]) -> str:
    """A name of ``names`` that ``stmt`` uses other than as the head of a call (``f(...)``, ``m.f(...)``)."""
    heads = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            heads.add(id(func))
    return next((n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in names and not n.id.isupper()
                 and isinstance(n.ctx, ast.Load) and id(n) not in heads), "")  # UPPER_CASE: a constant


def reaches_course(sources: list[str], name: str) -> str:
    """How the code that defines ``name`` (its definition and every statement the plan runs for it) reaches the
    course's package in a way the static check cannot follow, for the instructor ('' if it does not):
    dynamic code (``__import__``, ``getattr``, ``sys.modules``, ``exec``...) or a course function or module
    used as a value (in a dict, a tuple, a loop, a walrus...; an UPPER_CASE constant does not count)."""
    try:
        plan, course, statements = make_plan(sources, [name]), set(), []
        for _, code, indices in plan.cells:
            body = ast.parse(code).body
            for index in indices if indices is not None else range(len(body)):
                found = _course_names(body[index])
                course |= found
                if not found and not isinstance(body[index], (ast.Import, ast.ImportFrom)):
                    statements.append(body[index])
        for stmt in statements:
            match = DISGUISES.search(ast.unparse(stmt))
            if match:
                return f"dynamic code ({match.group(0).rstrip('( ')})"
            used = _value_use(stmt, course)
            if used:
                return f"the course's {used} used as a value"
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "code too deeply nested to read"
    return ""
