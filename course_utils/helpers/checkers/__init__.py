"""Instant feedback for the tasks of the lessons: one checker module per notebook, named after it
without its number (``05_causal_mask`` -> ``causal_mask.py``), on shared machinery:

- ``report``: the one-line verdicts and the :class:`CheckResult` record every check returns;
- ``registry``: :data:`CHECKS`, every check with the notebook object it takes (for a grader);
- ``twins``: the static check that an answer does not only call the course's own function;
- ``compare``: answers judged across all cases, so that a hint names only a mistake really made;
- ``fixtures``: objects handed to student code that describe themselves as plain data.

Every check is importable from here: ``from course_utils.helpers.checkers import check_causal_mask``.
The checker modules are imported on first use.

**The contract with the grader** (Contract A). ``course-grade`` runs a student's functions in a
sandboxed worker and the checks in its own process, handing a check a stand-in
(``transport.Remote``) for the student's function or class. So every check obeys these rules
(``tests/test_checkers_contract.py`` runs each check through such a stand-in):

1. it reaches student code only by calling what it was given (or instances that returned), never
   by introspecting it (``__code__``, ``inspect``, ``__wrapped__``; ``__name__`` may be read);
2. it passes student code plain data only (tensors, NumPy arrays and scalars, Python scalars,
   ``str``, ``None``, ``torch.Size``, ``torch.dtype``, tuples, lists and dicts of these) or fixtures
   (``fixtures.py``, rebuilt in the worker from their spec); a tensor's ``requires_grad`` crosses with
   it, both ways (a check may ask that a result keeps autograd, e.g. 03's ``split_heads``); anything
   else (a function, a module, an object of the checker) arrives there as an inert ``Opaque``:
   nothing of the grader's process can be called from the worker;
3. it gives a clear hint for a result of an unexpected type (an ``Opaque`` stand-in) and never
   crashes on one;
4. it may rely on in-place changes of its tensor arguments being copied back, and on a student's
   exception coming back with the same class name and message; so it computes its reference from
   copies it kept before the call, never from the arguments it handed over;
5. of a student's class it uses only construction with plain arguments, calls of an instance,
   ``instance.state_dict()``, plain attributes and callable sub-modules;
6. whether an answer only calls the course's own function is read from its source (``twins``),
   never traced at run time.
"""

from .registry import Check, checks, checks_in_cell, find_check, twin_calls
from .report import CheckResult, summarize

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
