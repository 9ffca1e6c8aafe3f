"""The registry of checks: for every ``check_x``, the notebook object it takes and what it is.

Each checker module names its notebook (``NOTEBOOK = "05_causal_mask"``) and registers its checks
with :func:`register`. A grader reads :data:`CHECKS` (through :func:`checks`) to learn, from a
notebook cell ``check_causal_mask(causal_mask)``, which check to run on which object, and which
course functions an answer must not hand its work to (``twins``, for ``twins.twin_calls``)::

    from course_utils.helpers.checkers import CHECKS, checks_in_cell
    CHECKS["check_causal_mask"]   # Check(takes="causal_mask", kind="function", notebook="05_causal_mask", ...)
    checks_in_cell("check_causal_mask(causal_mask)")   # [("check_causal_mask", "causal_mask")]

The checker modules are a fixed list, :data:`CHECKER_MODULES`: a new one is added there (a test
says so when a module of this package is neither listed nor :data:`MACHINERY`). Nothing is found by
scanning the folder, so a file that appears in a checkout is never imported by a grader.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .answer_source import answer_twin_calls
from .report import CheckResult, report
from .twins import find_twin_calls

PACKAGE = __name__.rsplit(".", 1)[0]
MACHINERY = frozenset({"answer_source", "attention_mistakes", "compare", "fixtures", "registry", "report", "transport",
                       "twins"})
KINDS = ("function", "class")
CHECKER_MODULES = (
    "attention_cost", "attention_heatmaps", "attention_vs_no_attention", "causal_mask", "cross_attention",
    "dates_to_iso8601", "explore_head_count", "explore_longer_training", "explore_scaling_and_sparsity",
    "head_patterns", "induction_heads", "induction_heads_in_text", "kv_cache", "multi_head_attention", "next_token_predictor",
    "online_softmax_and_tiled_attention", "positional_encoding", "pytorch_multihead", "rotary_position_embeddings",
    "scaled_dot_product_attention", "scaling_and_masks", "seq2seq_with_attention", "transformer_block")


@dataclass(frozen=True)
class Check:
    """One registered check.

    - ``name``: the check function's name, ``"check_causal_mask"``;
    - ``takes``: the notebook object it is called with, ``"causal_mask"`` (a cell reads ``check_x(takes)``);
    - ``kind``: ``"function"`` (the task is a function) or ``"class"`` (the task is a class, e.g. 06's
      ``CrossAttention``: the check constructs it, calls instances, reads ``state_dict()``);
    - ``task``: the name the printed verdict uses;
    - ``notebook``: the notebook the task belongs to, ``"05_causal_mask"``;
    - ``module``: the checker module, ``"course_utils.helpers.checkers.causal_mask"``;
    - ``twins``: ``(display name, dotted path)`` of the course's own functions that compute the task;
    - ``function``: the check itself, ``function(answer, seed=None) -> CheckResult``.
    """

    name: str
    takes: str
    kind: str
    task: str
    notebook: str
    module: str
    twins: tuple[tuple[str, str], ...]
    function: Callable[..., CheckResult]


_FOUND: dict[str, Check] = {}


def register(task: str, *, takes: str | None = None, kind: str = "function",
             twins: Mapping[str, str] | None = None) -> Callable:
    """Decorate ``def check_x(answer, seed): ...`` (the judging: raise ``Hint``s, call the answer with
    ``report.call``) into the public ``check_x(answer, seed=None) -> CheckResult``, and register it.

    The public check first refuses an answer that hands its work to one of ``twins`` (read from its
    source, see ``answer_source.answer_twin_calls``), then runs the judging under ``report.report``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    twin_items = tuple((twins or {}).items())

    def decorate(judge: Callable[[object, int], None]) -> Callable[..., CheckResult]:
        module = sys.modules[judge.__module__]
        entry_takes = takes or task

        @functools.wraps(judge)
        def check(answer, seed: int | None = None) -> CheckResult:
            def run(s: int) -> None:
                refuse_twins(answer, entry_takes, dict(twin_items))
                judge(answer, s)

            return report(task, run, seed)

        del check.__wrapped__  # the public signature is check(answer, seed=None)
        _FOUND[judge.__name__] = Check(judge.__name__, entry_takes, kind, task, module.NOTEBOOK, module.__name__,
                                       twin_items, check)
        return check

    return decorate


def refuse_twins(answer, takes: str, twins: Mapping[str, str]) -> None:
    """Raise a Hint if the answer only calls the course's own version of the task."""
    from .report import Hint

    found = answer_twin_calls(answer, takes, twins) if twins else []
    if found:
        raise Hint(f"calls the course's own {found[0]}: write it yourself (the course's version is what your "
                   "function is checked against).")


def checker_modules() -> list[str]:
    """The full names of the checker modules (:data:`CHECKER_MODULES`; never a scan of the folder)."""
    return [f"{PACKAGE}.{name}" for name in CHECKER_MODULES]


def checks() -> dict[str, Check]:
    """Every registered check by name (imports every checker module the first time)."""
    for name in checker_modules():
        importlib.import_module(name)
    return dict(sorted(_FOUND.items()))


def find_check(name: str) -> Check:
    """A check by its name (``"check_causal_mask"``) or by the object it takes (``"causal_mask"``)."""
    found = checks()
    if name in found:
        return found[name]
    matches = [c for c in found.values() if c.takes == name]
    if len(matches) != 1:
        raise KeyError(f"no single check takes {name!r}: {[c.name for c in matches] or 'none'}")
    return matches[0]


def checks_in_cell(source: str) -> list[tuple[str, str]]:
    """``(check name, object name)`` for every ``check_x(name)`` call in a notebook cell, in order
    (also inside ``summarize(...)``); calls of unknown checks or with other arguments are left out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a NUL byte
        return []
    known = checks()
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id in known and len(n.args) == 1 and isinstance(n.args[0], ast.Name)),
                   key=lambda n: (n.lineno, n.col_offset))
    return list(dict.fromkeys((n.func.id, n.args[0].id) for n in calls))


def twin_calls(task: str, cell_sources: list[str], twins: Mapping[str, str] | None = None) -> list[str]:
    """The course functions that a notebook's answer to ``task`` hands its work to (``[]``: none).

    ``task``: a check's name (``"check_causal_mask"``) or the name of the object it takes
    (``"causal_mask"``); ``twins`` (display name -> dotted path) overrides the check's registered
    twins, and then ``task`` is the name of the object to read (``twins.find_twin_calls``)."""
    name = task
    if twins is None:
        check = find_check(task)
        twins, name = dict(check.twins), check.takes
    return find_twin_calls(name, cell_sources, twins)
