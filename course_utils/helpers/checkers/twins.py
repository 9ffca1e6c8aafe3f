"""Does an answer hand its work to the course's own function? A static check of source text.

A task's *twins* are the course's own functions (or classes) that compute what the task asks for,
e.g. ``course_utils.core.masks.causal_mask`` for 05's ``causal_mask``. An answer that calls one is
refused ("calls the course's own causal_mask: write it yourself"); an answer whose body is a copy of
the course's code is not (it computes the right thing: only a grader flags copies).

The check reads source text and runs nothing, so it works under profilers, in threads, for
decorated functions and outside the student's process:

- :func:`find_twin_calls` (for a grader, by check name ``registry.twin_calls("check_causal_mask", cell_sources)``) finds the
  notebook's last definition of the object the check takes (``causal_mask``), follows the
  notebook-level functions and classes it uses, resolves the notebook's imports (aliases,
  ``import course_utils as cu``, attribute chains, ``importlib.import_module("...")``,
  ``getattr(module, "name")``) and returns the twins it reaches, e.g. ``["causal_mask"]``.
- ``answer_source.answer_twin_calls`` (in a notebook or a script): the same for a function or class
  object, read from the notebook's executed cells (IPython's ``In``) or from its source file.

A class inheriting a twin class hands its work over when it keeps the inherited ``forward`` or
calls ``super().<method>`` (other than ``__init__``).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import types
from collections.abc import Iterable, Mapping, Sequence

PACKAGE = "course_utils"
CHECKERS = "course_utils.helpers.checkers"
_SHADOWED = object()  # a name bound to something the analysis does not follow (a local, a loop variable...)


class _Expr:
    """A module-level ``name = <expression>`` binding."""

    def __init__(self, node: ast.AST) -> None:
        self.node = node


@functools.lru_cache(maxsize=512)
def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:  # a notebook cell with IPython syntax (%magic, !command): translate it first
        from IPython.core.inputtransformer2 import TransformerManager

        return ast.parse(TransformerManager().transform_cell(text))
    except Exception:  # noqa: BLE001 - a cell that does not parse cannot define the answer
        return None


@functools.lru_cache(maxsize=1024)
def _resolve(path: str):
    """The object a dotted path names inside the course package, or None (nothing outside it is imported)."""
    parts = path.split(".")
    if parts[0] != PACKAGE:
        return None
    try:
        obj, i = importlib.import_module(PACKAGE), 1
        while i < len(parts) and not hasattr(obj, parts[i]):
            name = ".".join(parts[: i + 1])
            if importlib.util.find_spec(name) is None:
                return None
            obj, i = importlib.import_module(name), i + 1
    except Exception:  # noqa: BLE001 - a path that does not exist names nothing
        return None
    for part in parts[i:]:
        obj = getattr(obj, part, _SHADOWED)
        if obj is _SHADOWED:
            return None
    return obj


def _canonical(obj) -> str | None:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else None


def twin_name(obj, twins: Mapping[str, str]) -> str | None:
    """The display name of the twin ``obj`` is (a twin, a member of a twin class, a subclass of one), or None."""
    paths = {_canonical(c) for c in getattr(obj, "__mro__", ())} if isinstance(obj, type) else set()
    canon = _canonical(obj)
    paths.add(canon)
    for display, path in twins.items():
        if path in paths or (canon and canon.startswith(path + ".")):
            return display
    if canon and canon.startswith(CHECKERS + ".") and not isinstance(obj, types.ModuleType):
        return next(iter(twins), None)  # the checkers' own reference answers count as the course's
    return None


def _cell_magic_body(node: ast.AST) -> str | None:
    """The body of ``get_ipython().run_cell_magic(name, line, body)`` (how IPython translates ``%%name``)."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run_cell_magic"
            and len(node.args) == 3 and isinstance(node.args[2], ast.Constant) and isinstance(node.args[2].value, str)):
        return node.args[2].value
    return None


def _bind(statements: Iterable[ast.stmt], ns: dict) -> None:
    """Record the module-level bindings of ``statements`` in ``ns`` (later bindings win)."""
    for st in statements:
        if isinstance(st, ast.Import):
            for alias in st.names:
                ns[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(st, ast.ImportFrom):
            for alias in st.names:
                if st.level or not st.module:
                    ns[alias.asname or alias.name] = _SHADOWED
                elif alias.name == "*":
                    module = _resolve(st.module)
                    for name in getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]:
                        ns[name] = f"{st.module}.{name}"
                else:
                    ns[alias.asname or alias.name] = f"{st.module}.{alias.name}"
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            ns[st.name] = st
        elif isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        ns[node.id] = _Expr(st.value) if isinstance(target, ast.Name) else _SHADOWED
        elif isinstance(st, ast.Expr) and _cell_magic_body(st.value) is not None:
            tree = parse(_cell_magic_body(st.value))  # %%time, %%capture...: the cell body runs as code
            _bind(tree.body if tree is not None else [], ns)
        elif isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)):
            if isinstance(st, (ast.For, ast.AsyncFor)):
                for node in ast.walk(st.target):
                    if isinstance(node, ast.Name):
                        ns[node.id] = _SHADOWED
            for part in ("body", "orelse", "finalbody"):
                _bind(getattr(st, part, []), ns)
            for handler in getattr(st, "handlers", []):
                _bind(handler.body, ns)


def _local_names(node: ast.AST) -> set[str]:
    """Every name bound inside a function, lambda or class (parameters, assignments, imports, loops...)."""
    names, declared_global = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in sub.names if a.name != "*")
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
            names.add(sub.name)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
        elif isinstance(sub, ast.Global):
            declared_global.update(sub.names)
    return names - declared_global


def _aliases(root: ast.AST) -> dict[str, ast.AST]:
    """A function's or class's own ``name = <expression>`` assignments (a name assigned once: an alias)."""
    found: dict[str, list] = {}
    for node in ast.walk(root):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, []).append(node.value)
    return {name: values[0] for name, values in found.items() if len(values) == 1}


class Analysis:
    """The twins that definitions in ``sources`` (notebook cells or one module, in order) reach."""

    def __init__(self, sources: Sequence[str], twins: Mapping[str, str]) -> None:
        self.twins, self.ns = dict(twins), {}
        for text in sources:
            tree = parse(text)
            if tree is not None:
                _bind(tree.body, self.ns)
        self.found: list[str] = []
        self.seen: set[int] = set()

    # --- resolving expressions ------------------------------------------------------------------

    def _path(self, node: ast.AST, local: set[str], depth: int = 0, aliases: dict | None = None) -> str | None:
        """The dotted path an expression stands for (a course module, function, class...), if any;
        ``aliases``: the function's own ``name = <expression>`` assignments."""
        if depth > 20:
            return None
        if isinstance(node, ast.Name):
            if aliases and node.id in aliases:
                return self._path(aliases[node.id], local, depth + 1, aliases)
            if node.id in local:
                return None
            bound = self.ns.get(node.id)
            if isinstance(bound, str):
                return bound
            if isinstance(bound, _Expr):
                return self._path(bound.node, set(), depth + 1)
            return None
        if isinstance(node, ast.Attribute):
            base = self._path(node.value, local, depth + 1, aliases)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            func = self._path(node.func, local, depth + 1, aliases) if not isinstance(node.func, ast.Name) else (
                None if node.func.id in local else self._builtin_or_path(node.func.id))
            text = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if func == "importlib.import_module" and len(node.args) == 1 and text:
                return text[0]
            if func == "__import__" and node.args and text and node.args[0].__class__ is ast.Constant:
                return text[0] if len(node.args) >= 4 or node.keywords else text[0].split(".")[0]
            if func == "getattr" and len(node.args) in (2, 3) and isinstance(node.args[1], ast.Constant) and text:
                base = self._path(node.args[0], local, depth + 1, aliases)
                return f"{base}.{node.args[1].value}" if base else None
        return None

    def _builtin_or_path(self, name: str) -> str | None:
        bound = self.ns.get(name)
        if bound is None:
            return name  # a builtin such as getattr or __import__
        return bound if isinstance(bound, str) else None

    def _note(self, path: str | None) -> None:
        if path:
            name = twin_name(_resolve(path), self.twins) if path.split(".")[0] == PACKAGE else None
            if name and name not in self.found:
                self.found.append(name)

    # --- walking definitions ----------------------------------------------------------------------

    def name(self, name: str) -> list[str]:
        """The twins reached by the module-level binding of ``name``."""
        self._follow(self.ns.get(name))
        return self.found

    def node(self, node: ast.AST) -> list[str]:
        self._walk(node)
        return self.found

    def _follow(self, bound) -> None:
        """Follow a module-level binding: an import, an alias (``f = course_utils.causal_mask``), a
        lambda, a wrapped function (``partial(f, ...)``, ``cache(f)``), or a definition. A VALUE computed
        by a course function (``mask = causal_mask(5)``) is data, not handed-over work."""
        if isinstance(bound, str):
            self._note(bound)
        elif isinstance(bound, _Expr):
            node = bound.node
            self._note(self._path(node, set()))
            if isinstance(node, ast.Lambda):
                self._walk(node)
            elif isinstance(node, ast.Call):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Lambda):
                        self._walk(arg)
                    elif isinstance(arg, ast.Name):
                        self._follow(self.ns.get(arg.id))
                    elif isinstance(arg, ast.Attribute):
                        self._note(self._path(arg, set()))
        elif isinstance(bound, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._walk(bound)

    def _walk(self, root: ast.AST) -> None:
        if id(root) in self.seen:
            return
        self.seen.add(id(root))
        local = _local_names(root) if isinstance(root, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else set()
        aliases = _aliases(root)
        skip = set()
        if isinstance(root, ast.ClassDef):
            local = _local_names(root)
            skip = {id(n) for base in [*root.bases, *(k.value for k in root.keywords)] for n in ast.walk(base)}
            self._inherited(root)
        for node in ast.walk(root):
            if id(node) in skip or node is root:
                continue
            if isinstance(node, (ast.ImportFrom, ast.Import)):
                for alias in node.names:
                    module = node.module if isinstance(node, ast.ImportFrom) else None
                    if not (isinstance(node, ast.ImportFrom) and (node.level or alias.name == "*")):
                        self._note(f"{module}.{alias.name}" if module else alias.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
                self._follow(self.ns.get(node.id))
            elif isinstance(node, (ast.Attribute, ast.Call)):
                self._note(self._path(node, local, aliases=aliases))

    def _inherited(self, cls: ast.ClassDef) -> None:
        """A class that inherits a twin class hands its work over if it keeps its forward or calls super()'s."""
        for base in cls.bases:
            name = twin_name(_resolve(self._path(base, set()) or ""), self.twins)
            if name is None:
                continue
            methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            calls_super = any(isinstance(n, ast.Attribute) and n.attr != "__init__" and isinstance(n.value, ast.Call)
                              and isinstance(n.value.func, ast.Name) and n.value.func.id == "super"
                              for n in ast.walk(cls))
            if calls_super or "forward" not in methods:
                if name not in self.found:
                    self.found.append(name)


def find_twin_calls(name: str, cell_sources: Sequence[str], twins: Mapping[str, str]) -> list[str]:
    """Which of ``twins`` (display name -> dotted path) the notebook's definition of ``name`` hands its work
    to (``[]``: none). ``cell_sources``: the notebook's code cells, in order (IPython syntax is fine).
    Nothing is run or imported but ``course_utils``'s own modules (to resolve names); a definition nested
    beyond Python's recursion limit is a ValueError. By check name: ``registry.twin_calls``."""
    try:
        return list(Analysis(cell_sources, twins).name(name))
    except RecursionError:
        raise ValueError(f"the definition of {name!r} is nested too deeply to read") from None
