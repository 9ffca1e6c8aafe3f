"""The grading step that ``course-grade`` runs inside a submission's kernel, after the notebook.

This file is not imported by the kernel: the grader reads its source and runs it in a fresh
namespace (the notebook's own names cannot shadow anything here), then calls ``grade``. It
imports nothing from ``course_utils`` at module level, because the point of ``grade`` is to
drop every ``course_utils`` module the notebook loaded (and perhaps patched) and load the
checkers again from the course's files on disk.

``verdict`` is the one place that reads what a checker said; it understands both kinds of
checker: the printed line (``[correct] ...``, ``[try again] task: hint``, ``[not yet] ...``)
with a truthy return value only when correct, and a result object with ``status`` and
``hint`` attributes.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import signal
import sys


class TaskTimeout(BaseException):
    """Raised by the alarm when one task's check runs too long (BaseException: a student's
    ``except Exception`` cannot swallow it)."""


def verdict(result: object, printed: str) -> tuple[str, str]:
    """(status, hint) from what one check function returned and printed.

    status is "correct", "wrong" or "not done"; hint is the checker's explanation (empty when correct).
    """
    status = getattr(result, "status", None)
    if isinstance(status, str):  # a result object with machine-readable fields
        hint = str(getattr(result, "hint", "") or "")
        if result:
            return "correct", ""
        return ("not done" if "not" in status.lower() else "wrong"), hint
    lines = [line.strip() for line in printed.splitlines() if line.strip().startswith("[")]
    line = lines[-1] if lines else ""
    if result and line.startswith("[correct]"):
        return "correct", ""
    hint = line.split("]", 1)[-1].strip()
    head, sep, rest = hint.partition(": ")
    if sep and " " not in head.strip():  # drop the "task: " prefix
        hint = rest
    if line.startswith("[not yet]"):
        return "not done", hint
    if result:  # truthy without the [correct] line: trust neither
        return "wrong", "the checker's answer could not be read"
    return "wrong", hint or "the checker printed no explanation"


def _fresh_checkers(root: str, module: str):
    """Import ``module`` again from the course at ``root``, not from anything the notebook loaded."""
    for name in [n for n in sys.modules if n == "course_utils" or n.startswith("course_utils.")]:
        del sys.modules[name]
    cwd = os.getcwd()
    sys.path[:] = [root] + [p for p in sys.path if p not in ("", ".", cwd, root)]
    importlib.invalidate_caches()
    loaded = importlib.import_module(module)
    if not os.path.abspath(loaded.__file__).startswith(os.path.join(root, "course_utils") + os.sep):
        raise ImportError(f"the checkers loaded from {loaded.__file__}, not from the course")
    return loaded


def _alarm(signum, frame):
    raise TaskTimeout


def grade(user_ns: dict, root: str, module: str, tasks: list[tuple[str, str, str]], limit: int) -> dict:
    """Run each task's checker on the notebook's object of that name.

    tasks: (task, name the notebook defines, check function in ``module``).
    Returns {"tasks": {task: [status, detail]}} with status "correct", "wrong", "not done",
    "missing" (the notebook defined no such name) or "timed out"; or {"error": ...}.
    """
    try:
        checkers = _fresh_checkers(root, module)
    except BaseException as err:  # noqa: BLE001 - any failure here is the grader's to report
        return {"error": f"could not load the checkers: {type(err).__name__}: {err}"}
    results = {}
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for task, name, check in tasks:
            if name not in user_ns:
                results[task] = ["missing", ""]
                continue
            printed = io.StringIO()
            try:
                signal.alarm(limit)
                with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                    result = getattr(checkers, check)(user_ns[name])
                signal.alarm(0)
                results[task] = list(verdict(result, printed.getvalue()))
            except TaskTimeout:
                results[task] = ["timed out", f"the check ran longer than {limit} s"]
            except BaseException as err:  # noqa: BLE001 - e.g. SystemExit or KeyboardInterrupt from student code
                signal.alarm(0)
                results[task] = ["crashed", f"{type(err).__name__}: {err}"]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return {"tasks": results}


def report(nonce: str, outcome: dict) -> None:
    """Send the outcome as one JSON line behind a marker the notebook could not have known:
    as display data (which does not pass through ``sys.stdout``, in case the notebook replaced
    it) and printed."""
    line = f"{nonce}{json.dumps(outcome, sort_keys=True)}"
    with contextlib.suppress(Exception):
        from IPython.display import publish_display_data

        publish_display_data({"text/plain": line})
    with contextlib.suppress(Exception):
        print(line, flush=True)
