"""Instant feedback for the tasks of the lessons: one checker module per notebook, named after it
without its number (``05_causal_mask`` -> ``causal_mask.py``), on shared machinery:

- ``report``: the one-line verdicts and the :class:`CheckResult` record every check returns;
- ``registry``: :data:`CHECKS`, every check with the notebook object it takes (for a grader);
- ``twins``: the static check that an answer does not only call the course's own function;
- ``compare``: answers judged across all cases, so that a hint names only a mistake really made;
- ``fixtures``: objects handed to student code that describe themselves as plain data.

Every check is importable from here: ``from course_utils.helpers.checkers import check_causal_mask``.
The checker modules are imported on first use.
"""

from .registry import Check, checks, checks_in_cell, find_check
from .report import CheckResult, summarize
from .twins import twin_calls

__all__ = ["CHECKS", "Check", "CheckResult", "checks", "checks_in_cell", "find_check", "summarize", "twin_calls"]


def __getattr__(name: str):
    if name == "CHECKS":
        return checks()
    if name.startswith("check_"):
        found = checks()
        if name in found:
            return found[name].function
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *checks()})
