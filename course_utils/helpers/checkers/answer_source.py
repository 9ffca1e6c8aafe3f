"""Where a live answer's source text is: the answer object handed to a check, read back as text for the
static twin check (``twins``). In a notebook (IPython), the cells it ran give the imports and the
definitions; in a script or a test module, the file that defines the answer. This is the only place a
checker looks at the answer object itself, and only for plain Python functions and classes: a remote
stand-in (a grader's proxy) is never read; a grader runs ``registry.twin_calls`` on the notebook instead.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import sys
import types
from collections.abc import Mapping

from .twins import Analysis, parse, twin_name


def _ipython():
    module = sys.modules.get("IPython")
    return module.get_ipython() if module is not None and hasattr(module, "get_ipython") else None


def _notebook_cells() -> list[str]:
    """The cells this IPython session ran, in order: its input history, or (history not stored) the cells
    IPython compiled into ``linecache``; ``[]`` outside IPython."""
    ip = _ipython()
    if ip is None:
        return []
    cells = [c for c in ip.user_ns.get("In", []) if isinstance(c, str) and c]
    if cells:
        return cells
    return ["".join(entry[2]) for name, entry in list(linecache.cache.items())  # a lazy entry is a 1-tuple: skipped
            if len(entry) == 4 and (name.startswith("<ipython-input-") or "ipykernel_" in name)]


@functools.lru_cache(maxsize=256)
def _definitions(text: str) -> dict[int, list[ast.AST]]:
    """The definitions (def, class, lambda) of a source text by the lines they start on (decorators too)."""
    found: dict[int, list[ast.AST]] = {}
    for node in ast.walk(parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for line in {node.lineno, *(d.lineno for d in node.decorator_list)}:
                found.setdefault(line, []).append(node)
        elif isinstance(node, ast.Lambda):
            found.setdefault(node.lineno, []).append(node)
    return found


def _nodes_at(text: str, line: int, name: str, params: list[str]) -> list[ast.AST]:
    """The definitions (def, class, lambda) that start on ``line``; for lambdas, those with these parameters."""
    found = []
    for node in _definitions(text).get(line, []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found.append(node)
        elif isinstance(node, ast.Lambda) and name == "<lambda>":
            found.append(node)
    lambdas = [n for n in found if isinstance(n, ast.Lambda) and [a.arg for a in n.args.args] == params[: len(n.args.args)]]
    return lambdas or found


def _classes_named(tree: ast.Module, qualname: str) -> list[ast.ClassDef]:
    """The class definitions of ``qualname`` (``Outer.Inner``; ``<locals>`` parts may be any function)."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    found = []

    def visit(node, path):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                here = path + [child.name]
                if isinstance(child, ast.ClassDef) and here[-len(parts):] == parts and child.name == parts[-1]:
                    found.append(child)
                visit(child, here)
            else:
                visit(child, path)

    visit(tree, [])
    return found


def _source_of(target) -> tuple[str, int]:
    """The text of the file (or notebook cell) that defines a function or class, and its first line
    (0 for a class: found by name); ``("", 0)`` when there is none."""
    code = getattr(target, "__code__", None)
    try:
        filename = code.co_filename if code is not None else inspect.getsourcefile(target)
    except (TypeError, OSError):
        return "", 0
    text = "".join(linecache.getlines(filename)) if filename else ""
    return text, code.co_firstlineno if code is not None else 0


def answer_twin_calls(answer, takes: str, twins: Mapping[str, str]) -> list[str]:
    """The twins that a function or class object hands its work to, read from its source (in a
    notebook: every executed cell, for the imports). ``[]`` when nothing is found or the source
    cannot be read (e.g. a remote stand-in: a grader runs :func:`twin_calls` on the notebook instead)."""
    if not isinstance(answer, (types.FunctionType, types.MethodType, type, functools.partial)):
        return []  # a remote stand-in or another callable object: nothing to read here
    if isinstance(answer, functools.partial):
        answer = answer.func
    try:
        direct = twin_name(answer, twins)
        if direct is not None:
            return [direct]
        target = inspect.unwrap(answer) if callable(answer) else answer
        name = getattr(target, "__name__", "")
        cells = _notebook_cells()
        in_notebook = bool(cells) and getattr(answer, "__module__", None) == "__main__"
        text, line = _source_of(target)
        tree = parse(text) if text else None
        params = list(inspect.signature(target).parameters) if callable(target) and not isinstance(target, type) else []
        if tree is None:
            nodes = []
        elif isinstance(target, type):
            nodes = _classes_named(tree, getattr(target, "__qualname__", name))[-1:]
        else:
            nodes = _nodes_at(text, line, name, params)
        analysis = Analysis([*cells, text] if in_notebook else [text], twins)
        for node in nodes:
            analysis.node(node)
        if in_notebook and not all(node in tree.body for node in nodes):
            # not a notebook-level definition (e.g. the inner function of a decorator without functools.wraps):
            # read the definition the notebook binds to the name instead
            key = name if name.isidentifier() and name in analysis.ns and nodes == [] else takes
            analysis.name(key)
        return list(analysis.found)
    except Exception:  # noqa: BLE001 - never block a student's check on this; a grader runs twin_calls itself
        return []
