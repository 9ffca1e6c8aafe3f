"""Which notebooks ``course-grade`` can grade, read off the course's own notebooks so that it cannot drift.

A notebook has a task wherever a code cell calls a checker on a notebook object at the top level,
``check_causal_mask(causal_mask)`` (read with the checkers' own parser, ``checks_in_cell``); the
check function comes from the checkers' registry (``course_utils.helpers.checkers.CHECKS``; every
check is registered). The table is built from the student versions in ``notebooks/`` (present
in the container recipe of INSTRUCTORS.md, which leaves out the solutions).

A submission is recognised by its metadata (``course.file``/``course.generated_from``, as
``nbtools students`` writes it), else by the task names it defines and checks.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import nbformat

from ..helpers.checkers.registry import Check, checks_in_cell

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)|^([A-Za-z_]\w*)[ \t]*=", re.MULTILINE)
# (``[ \t]``, not ``\s``: a run of blank lines is read once, not once per line)


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
    """(check function, object) of every ``check_x(name)`` call of the cells, first occurrence only."""
    return list(dict.fromkeys(pair for source in sources for pair in checks_in_cell(source)))


def registry() -> dict[str, Check]:
    """The checkers' registry of checks (``course_utils.helpers.checkers.CHECKS``: loads every checker module)."""
    from ..helpers.checkers import CHECKS

    return dict(CHECKS)


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
        tasks = tuple(Task(obj, check, checks[check].module) for check, obj in checker_calls(sources))
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
