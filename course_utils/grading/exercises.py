"""Which notebooks ``course-grade`` can grade, read off the course's own notebooks so that it cannot drift.

A notebook has a task wherever a code cell calls a checker on a notebook object at the top level,
``check_causal_mask(causal_mask)``; the check function comes from the checkers' registry
(``course_utils.helpers.checkers.CHECKS``) or, where a check is not registered, from the
notebook's own import line (``from course_utils.helpers.checkers.attention_heatmaps import
check_offset_share``). The table is built from the student versions in ``notebooks/`` (present
in the container recipe of INSTRUCTORS.md, which leaves out the solutions).

A submission is recognised by its metadata (``course.file``/``course.generated_from``, as
``nbtools students`` writes it), else by the task names it defines and checks.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat

from ..helpers.checkers.registry import Check

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHECKERS = "course_utils.helpers.checkers"
DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*=", re.MULTILINE)


class Invalid(Exception):
    """The file is not a notebook of one of this course's exercises (the message says why)."""


@dataclass(frozen=True)
class Task:
    name: str  # the notebook object the check takes (``causal_mask``, ``CrossAttention``)
    check: str  # the check function (``check_causal_mask``)
    module: str  # where the check function lives


@dataclass(frozen=True)
class Exercise:
    notebook: str  # the notebook's file name without .ipynb (``05_causal_mask``)
    tasks: tuple[Task, ...]


def checker_calls(sources: list[str]) -> list[tuple[str, str]]:
    """(check function, object) of every top-level ``check_x(name)`` statement, first occurrence only."""
    calls: list[tuple[str, str]] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for stmt in tree.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id.startswith("check_")
                    and len(call.args) == 1 and isinstance(call.args[0], ast.Name) and not call.keywords
                    and (call.func.id, call.args[0].id) not in calls):
                calls.append((call.func.id, call.args[0].id))
    return calls


def _imported_from(sources: list[str]) -> dict[str, str]:
    """check function -> the checkers module the notebook imports it from."""
    found = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(CHECKERS):
                found.update({a.asname or a.name: node.module for a in node.names if a.name.startswith("check_")})
    return found


def registry() -> dict[str, Check]:
    """The checkers' registry of checks (``course_utils.helpers.checkers.CHECKS``: loads every checker module)."""
    from ..helpers.checkers import CHECKS

    return dict(CHECKS)


def _module_of(check: str, imported: dict[str, str], checks: dict[str, Check]) -> str:
    """The module of ``check``: the registry's, else the notebook's own import line."""
    entry = checks.get(check)
    return entry.module if entry is not None else imported.get(check, CHECKERS)


def code_sources(nb: nbformat.NotebookNode) -> list[str]:
    return [c.get("source", "") for c in nb.get("cells", []) if c.get("cell_type") == "code"
            and isinstance(c.get("source", ""), str)]


@lru_cache(maxsize=None)
def exercises(folder: Path = NOTEBOOKS) -> dict[str, Exercise]:
    """Every notebook under ``folder`` with at least one checked task, in course order."""
    if not folder.is_dir():
        raise FileNotFoundError(f"course-grade reads the course's notebooks from {folder}, which is missing")
    checks, table = registry(), {}
    for path in sorted(folder.glob("*.ipynb")):
        sources = code_sources(nbformat.read(path, as_version=4))
        imported = _imported_from(sources)
        tasks = tuple(Task(obj, check, _module_of(check, imported, checks)) for check, obj in checker_calls(sources))
        if tasks:
            table[path.stem] = Exercise(path.stem, tasks)
    return table


def load_check(task: Task):
    """The check function of ``task`` (imported in the grader's own process, from the course's package)."""
    return getattr(importlib.import_module(task.module), task.check)


def identify(nb: nbformat.NotebookNode, table: dict[str, Exercise]) -> str:
    """The exercise a notebook is: from its metadata, else from the task names it defines and checks."""
    course = nb.get("metadata", {}).get("course", {})
    named = ""
    if isinstance(course, dict):
        for key in ("generated_from", "file"):
            stem = Path(str(course.get(key) or "")).stem
            if stem in table:
                return stem
            named = named or stem
    sources = code_sources(nb)
    defined = {a or b for a, b in DEFINITION.findall("\n".join(sources))}
    called = set(checker_calls(sources))
    score = {ex: sum((t.name in defined) + ((t.check, t.name) in called) for t in spec.tasks) / len(spec.tasks)
             for ex, spec in table.items()}
    ranked = sorted(score, key=score.get, reverse=True)
    if ranked and score[ranked[0]] >= 1 and (len(ranked) == 1 or score[ranked[1]] < score[ranked[0]]):
        return ranked[0]
    if named:
        raise Invalid(f"notebook {named} is not one of the notebooks with tasks")
    raise Invalid("not an exercise of this course (no course metadata, none of the tasks' functions)")
