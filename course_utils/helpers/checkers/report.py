"""The reporting core every checker shares.

A checker runs the student's answer on fixed and hidden random cases and prints ONE line that
starts with ``[correct]``, ``[try again]`` or ``[not yet]``. It returns a :class:`CheckResult`:

- truthy only for a correct answer (``if check_causal_mask(causal_mask): ...``);
- displays nothing as a cell's ``Out[]`` (``_ipython_display_`` shows nothing), so a checker
  cell shows only the printed line;
- a machine-readable record of the verdict that a grader reads (``course-grade``).

``CheckResult`` fields (all plain ``str`` / ``int``, frozen):

- ``task``: the task's name as printed, e.g. ``"causal_mask"``;
- ``status``: one of :data:`STATUSES`:
  ``"correct"``; ``"wrong"`` (a recognised mistake or a wrong value: ``hint`` says which);
  ``"not done"`` (the stub still raises ``NotImplementedError``); ``"crashed"`` (the student's
  code raised an exception: ``error`` holds it); ``"checker error"`` (the checker itself failed:
  a bug in the course, never held against the student);
- ``hint``: one line naming the mistake (``""`` when correct or not done);
- ``case``: the failing case, e.g. ``"Q (2, 5, 3), K (2, 7, 3), ... largest error 0.31"``
  (``""`` when none applies);
- ``error``: ``"TypeError: ..."`` (one line) for ``crashed`` and ``checker error``, else ``""``;
- ``seed``: the seed of the hidden random cases of this run; pass it back as
  ``check_x(answer, seed=...)`` to repeat the very same cases;
- ``message``: the line that was printed.

Writing a checker: ``report(task, check, seed)`` calls ``check(seed)``. Inside, call the student's
code only through :func:`call` (which tells the student's errors from the checker's, and watches
for answers that only call the course's own function: ``twins``), raise :class:`Hint` for a
recognised mistake, and wrap a case in ``with failing_case("..."):`` so that a hint names it.
Any other exception escaping ``check`` is a bug in the checker and is reported as such.
"""

from __future__ import annotations

import inspect
import secrets
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

STATUSES = ("correct", "wrong", "not done", "crashed", "checker error")


class Hint(Exception):
    """A specific, recognised mistake, explained to the student. ``case`` names the failing case."""

    def __init__(self, message: str, case: str = "") -> None:
        super().__init__(message)
        self.case = case


class StudentCrash(Exception):
    """The student's code raised ``error`` (``tip``: what probably caused it)."""

    def __init__(self, error: BaseException, case: str = "", tip: str = "") -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error, self.case, self.tip = error, case, tip


class _NotDone(Exception):
    """The student's function still raises NotImplementedError."""


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one checker run (see the module docstring for the fields)."""

    task: str
    status: str
    hint: str = ""
    case: str = ""
    error: str = ""
    seed: int = 0
    message: str = ""

    def __bool__(self) -> bool:
        return self.status == "correct"

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    def _ipython_display_(self) -> None:  # the printed line is the whole feedback: no Out[] echo
        return None

    def __repr__(self) -> str:
        return f"CheckResult(task={self.task!r}, status={self.status!r})"


def new_seed() -> int:
    """An unpredictable seed for the hidden random cases (reported, so a failure can be repeated)."""
    return secrets.randbelow(2**31)


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


_KNOWN_ERRORS = (  # (part of PyTorch's message, what it means for the student)
    ("is ambiguous", "a tensor with several values is neither True nor False: `if mask:` (or `and`/`or`/`not` "
                     "on a tensor) cannot decide. Test `mask is not None`, and combine masks with & | ~ or "
                     "torch.where."),
    ("Boolean value of Tensor", "a tensor with several values is neither True nor False: `if mask:` (or `and`/`or` "
                                "on a tensor) cannot decide. Test `mask is not None`, and combine masks with & | ~."),
    ("bitwise_not", "~ works on bool (and integer) tensors only: make the mask bool first (mask.bool())."),
    ("must match the size", "two tensors' shapes do not fit: print the shapes of the tensors you combine."),
    ("cannot be multiplied", "a matrix product got mismatched shapes: (..., n, d) @ (..., d, m) -> (..., n, m)."),
)


def error_tip(err: BaseException, shapes: bool = True) -> str:
    """What a known PyTorch error means (``shapes=False``: only for errors that are not about shapes)."""
    text = str(err)
    known = _KNOWN_ERRORS if shapes else _KNOWN_ERRORS[:3]
    return next((tip for part, tip in known if part in text), "")


class _Watch:
    """Record whether any of ``codes`` runs while active (sys.setprofile; restores the old profiler)."""

    def __init__(self, codes: set) -> None:
        self.codes, self.seen = codes, None

    def _hook(self, frame, event, arg):
        if event == "call" and self.seen is None and frame.f_code in self.codes:
            self.seen = frame.f_code
        if self._previous is not None:
            self._previous(frame, event, arg)

    def __enter__(self):
        self._previous = sys.getprofile()
        if self.codes:
            sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        if self.codes:
            sys.setprofile(self._previous)


def _code_of(fn: Any):
    fn = getattr(fn, "__func__", fn)
    fn = getattr(fn, "forward", fn) if isinstance(fn, type) else fn
    return getattr(fn, "__code__", None)


def call(fn: Callable, *args, case: str = "", twins: Iterable[tuple[str, Callable]] = (), **kwargs):
    """Run the student's ``fn(*args, **kwargs)`` and return its result.

    - ``NotImplementedError`` -> the task is not done yet;
    - any other exception -> :class:`StudentCrash` (the student's error, with ``case``);
    - ``twins``: ``(name, function)`` pairs of the course's own code for this task; if one of
      them runs during the call, the answer only hands the work over: :class:`Hint`.
    """
    names = {}
    for name, twin in twins:
        code = _code_of(twin)
        if code is not None:
            names[code] = name
    with _Watch(set(names)) as watch:
        try:
            result = fn(*args, **kwargs)
        except NotImplementedError:
            error = _NotDone()
        except Exception as err:  # noqa: BLE001 - the student's code: any error is theirs
            error = StudentCrash(err, case)
        else:
            error = None
    if watch.seen is not None:
        name = names[watch.seen]
        raise Hint(f"calls the course's own {name}: write it yourself (the course's version is what your "
                   "function is checked against).", case)
    if error is not None:
        raise error
    return result


class failing_case:
    """``with failing_case("Q (2, 5, 3) ..."):`` attaches the case to a Hint or crash raised inside."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __enter__(self) -> failing_case:
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if isinstance(err, (Hint, StudentCrash)) and not err.case:
            err.case = self.description
        return False


def report(task: str, check: Callable[[int], None] | Callable[[], None], seed: int | None = None) -> CheckResult:
    """Run ``check(seed)`` (or ``check()``, for a check without hidden random cases); print one
    line; return the :class:`CheckResult`."""
    seed = new_seed() if seed is None else int(seed)
    again = f" (hidden cases: seed={seed})"
    # A check written as ``check()`` calls the student's code directly (not through ``call``): an
    # exception escaping it is then taken as the student's, as the crash of their code.
    direct = not inspect.signature(check).parameters
    try:
        if direct:
            try:
                check()
            except (Hint, _NotDone, StudentCrash):
                raise
            except NotImplementedError:
                raise _NotDone() from None
            except Exception as err:  # noqa: BLE001
                raise StudentCrash(err) from None
        else:
            check(seed)
    except _NotDone:
        result = CheckResult(task, "not done", seed=seed, message=(
            f"[not yet] {task}: not implemented yet. Replace the `raise NotImplementedError` line with your code "
            "and run the cell again."))
    except Hint as hint:
        text, case = one_line(hint, 600), one_line(hint.case, 300)
        where = f" Failing case: {case}." if case else ""
        result = CheckResult(task, "wrong", hint=text, case=case, seed=seed,
                             message=f"[try again] {task}: {text}{where}{again}")
    except StudentCrash as crash:
        error, case = one_line(crash), one_line(crash.case, 300)
        tip = crash.tip or error_tip(crash.error)
        where = f" with {case}" if case else ""
        text = f"your code raised {error}{where}." + (f" {tip}" if tip else "")
        result = CheckResult(task, "crashed", hint=one_line(text, 600), case=case, error=error, seed=seed,
                             message=f"[try again] {task}: {one_line(text, 900)}{again}")
    except Exception as err:  # noqa: BLE001 - anything else is the checker's own fault
        error = one_line(f"{type(err).__name__}: {err}")
        result = CheckResult(task, "checker error", error=error, seed=seed, message=(
            f"[not yet] {task}: this is a bug in the checker, not your code: {error}. Your answer could not be "
            f"judged; please report it (with seed={seed})."))
    else:
        result = CheckResult(task, "correct", seed=seed,
                             message=f"[correct] {task}: well done, every check passed.")
    print(result.message)
    return result


def summarize(*results: CheckResult) -> None:
    """Print one line for a notebook's "check everything" cell: how many of its tasks pass, and which do not."""
    passed = sum(bool(r) for r in results)
    if passed == len(results):
        print(f"[correct] all {len(results)} tasks of this notebook pass.")
        return
    left = ", ".join(f"{r.task} ({r.status})" for r in results if not r)
    marker = "[not yet]" if all(r.status == "not done" for r in results if not r) else "[try again]"
    print(f"{marker} {passed} of {len(results)} tasks pass; still to do: {left}.")


def expect_tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        kind = "a NumPy array" if type(value).__module__ == "numpy" else type(value).__name__
        raise Hint(f"{what} should be a torch.Tensor, got {kind}.")
    return value


def as_float(value, what: str, verb: str = "should be") -> float:
    """A number from a Python/NumPy scalar, a 0-d array or a one-element tensor (never a bool or a string)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise Hint(f"{what} returned a tensor of shape {tuple(value.shape)}: return one number.")
        if value.dtype == torch.bool:
            raise Hint(f"{what} should be a number, got a bool tensor.")
        return float(value.item())
    if isinstance(value, (bool, str, bytes, np.bool_, np.str_)):
        raise Hint(f"{what} {verb} a number (a float), got {type(value).__name__}.")
    shape = getattr(value, "shape", ())
    if shape not in ((), (1,)):
        raise Hint(f"{what} returned an array of shape {tuple(shape)}: return one number.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise Hint(f"{what} {verb} a number (a float), got {type(value).__name__}.") from None
