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
  ``"not done"`` (the function still raises ``NotImplementedError``, for every case or for the
  one named in ``case``); ``"crashed"`` (the student's code raised an exception: ``error`` holds
  it); ``"checker error"`` (the checker itself failed: a bug in the course, never held against
  the student);
- ``hint``: one line naming the mistake (``""`` when correct or not started);
- ``case``: the failing case, e.g. ``"Q (2, 5, 3), K (2, 7, 3), ... largest error 0.31"``
  (``""`` when none applies);
- ``error``: ``"TypeError: ..."`` (one line) for ``crashed``, ``not done`` in one case, and
  ``checker error``, else ``""``;
- ``seed``: the seed of the hidden random cases of this run; pass it back as
  ``check_x(answer, seed=...)`` to repeat the very same cases (the printed line never shows it,
  except in a "bug in the checker" line, for reporting);
- ``message``: the line that was printed.

Writing a checker (see ``registry.register``): the check receives the student's function or
class and the seed. It reaches the student's code only through :func:`call` (which tells the
student's errors from the checker's), raises :class:`Hint` for a recognised mistake, and wraps a
case in ``with failing_case("..."):`` so that a hint names it. Any other exception escaping the
check is a bug in the checker and is reported as such. The first case of every checker is an
ordinary one, so that a function that raises ``NotImplementedError`` there is "not done", and one
that raises it only later is told which case it has not finished.
"""

from __future__ import annotations

import contextvars
import inspect
import secrets
from collections.abc import Callable
from dataclasses import dataclass

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


class NotDone(Exception):
    """The student's function raised NotImplementedError: on the first call (``error`` None: not started),
    or after earlier calls worked (``error`` set: not finished for ``case``)."""

    def __init__(self, error: BaseException | None = None, case: str = "") -> None:
        super().__init__(f"{type(error).__name__}: {error}" if error is not None else "not implemented")
        self.error, self.case = error, case


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
    """An unpredictable seed for the hidden random cases (kept in the result, so a run can be repeated)."""
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


class _Run:
    """One checker run: how many calls of the student's code have returned so far, and the answers
    collected so far (``compare.Answers``, so that a crash in a later case does not hide an earlier mistake)."""

    def __init__(self) -> None:
        self.returned, self.answers = 0, []


def current_run() -> _Run | None:
    return _RUN.get()


def _earlier_mistake(run: _Run, explained_only: bool = False) -> Hint | None:
    """The hint for answers that were already wrong before a later case crashed (or broke a rule of its
    own): the known mistake they show, or (``explained_only=False``) their neutral message; else None."""
    for answers in run.answers:
        if answers.wrong and answers.otherwise is not None:
            if explained_only and answers.explained_by() is None:
                continue
            try:
                answers.verdict()
            except Hint as hint:
                return hint
    return None


_RUN: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("checker_run", default=None)


def call(fn: Callable, *args, case: str = "", **kwargs):
    """Run the student's ``fn(*args, **kwargs)`` and return its result.

    - ``NotImplementedError`` -> :class:`NotDone` (not started, or not finished for ``case``);
    - any other exception -> :class:`StudentCrash` (the student's error, with ``case``);
    - a result holding a tensor on another device than the inputs, or a float tensor with less precision
      than every float input (float16 out of float32) -> :class:`Hint` naming it (issue 33: such a result
      cannot be compared, and a value hint would name a mistake that was not made).

    ``fn`` may be a remote stand-in (the grader's proxies): nothing but calling it is done here.
    """
    run = _RUN.get()
    try:
        result = fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - the student's code: any error is theirs
        if isinstance(err, NotImplementedError) or type(err).__name__ == "NotImplementedError":
            raise NotDone(err if run is not None and run.returned else None, case) from None
        raise StudentCrash(err, case) from None
    if run is not None:
        run.returned += 1
    _same_device(result, args, kwargs, case)
    _no_precision_lost(result, args, kwargs, case)
    return result


def _tensors(value, depth: int = 0):
    """The tensors in a result or in arguments (inside tuples, lists and dicts)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)) and depth < 3:
        for v in value:
            yield from _tensors(v, depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for v in value.values():
            yield from _tensors(v, depth + 1)


def _same_device(result, args: tuple, kwargs: dict, case: str) -> None:
    """A Hint if the student's result holds a tensor on another device than their inputs (every input a
    checker passes is on the CPU, or on the device it names): the result cannot be compared, and would
    not mix with the inputs in the next cell."""
    given = {t.device for t in _tensors((args, kwargs))} | {a for a in (*args, *kwargs.values())
                                                           if isinstance(a, torch.device)}
    given = given or {torch.empty(0).device}
    for t in _tensors(result):
        if t.device not in given:
            where = ", ".join(sorted(f"'{d}'" for d in map(str, given)))
            raise Hint(f"your result is on device '{t.device}', the inputs on {where}: create every new tensor on the "
                       "inputs' device (device=x.device, torch.zeros_like(x), x.new_zeros(...)) and do not move the "
                       "result (no .to(...), .cuda() or .cpu())."
                       + (" A 'meta' tensor holds no values at all." if t.device.type == "meta" else ""), case)


def _no_precision_lost(result, args: tuple, kwargs: dict, case: str) -> None:
    """A Hint if a float tensor of the result has less precision than every float input (float16 out of
    float32 inputs): its values then miss by more than any tolerance, and a value hint would name a mistake
    that was not made. (Whether float64 out of float32 is fine depends on the task: its checker decides.)"""
    given = [t.dtype for t in _tensors((args, kwargs)) if t.is_floating_point()]
    if not given:
        return
    coarsest = max(given, key=lambda d: torch.finfo(d).eps)
    for t in _tensors(result):
        if t.is_floating_point() and torch.finfo(t.dtype).eps > torch.finfo(coarsest).eps:
            raise Hint(f"your result has dtype {t.dtype}, the inputs {coarsest}: keep the inputs' dtype (no .half(), "
                       ".bfloat16() or torch.tensor(...) copies; create new tensors with dtype=x.dtype). In "
                       f"{t.dtype} the values are off by more than the checks allow.", case)


def call_setup(fn: Callable, *args, case: str = "", **kwargs):
    """``call(fn, *args, **kwargs)`` for a call that only prepares (the student's constructor, an instance's
    ``state_dict``): that it works does not make a forward that raises NotImplementedError "not finished"."""
    run = _RUN.get()
    before = run.returned if run is not None else 0
    result = call(fn, *args, case=case, **kwargs)
    if run is not None:
        run.returned = before
    return result


class failing_case:
    """``with failing_case("Q (2, 5, 3) ..."):`` attaches the case to a hint, crash or unfinished case raised inside."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __enter__(self) -> failing_case:
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if isinstance(err, (Hint, StudentCrash, NotDone)) and not err.case:
            err.case = self.description
        return False


def _verdict(task: str, seed: int, outcome: BaseException | None) -> CheckResult:
    if outcome is None:
        return CheckResult(task, "correct", seed=seed, message=f"[correct] {task}: well done, every check passed.")
    if isinstance(outcome, NotDone) and outcome.error is None:
        return CheckResult(task, "not done", seed=seed, message=(
            f"[not yet] {task}: not implemented yet. Replace the `raise NotImplementedError` line with your code "
            "and run the cell again."))
    if isinstance(outcome, NotDone):
        error, case = one_line(outcome), one_line(outcome.case or "one of the cases", 300)
        text = (f"your function is not finished for {case}: it raised {error}. The cases before it work; handle this "
                "one too.")
        return CheckResult(task, "not done", hint=one_line(text, 600), case=one_line(outcome.case, 300), error=error,
                           seed=seed, message=f"[not yet] {task}: {one_line(text, 900)}")
    if isinstance(outcome, Hint):
        text, case = one_line(outcome, 600), one_line(outcome.case, 300)
        where = f" Failing case: {case}." if case else ""
        return CheckResult(task, "wrong", hint=text, case=case, seed=seed, message=f"[try again] {task}: {text}{where}")
    if isinstance(outcome, StudentCrash):
        error, case = one_line(outcome), one_line(outcome.case, 300)
        tip = outcome.tip or error_tip(outcome.error)
        where = f" with {case}" if case else ""
        text = f"your code raised {error}{where}." + (f" {tip}" if tip else "")
        return CheckResult(task, "crashed", hint=one_line(text, 600), case=case, error=error, seed=seed,
                           message=f"[try again] {task}: {one_line(text, 900)}")
    error = one_line(f"{type(outcome).__name__}: {outcome}")
    return CheckResult(task, "checker error", error=error, seed=seed, message=(
        f"[not yet] {task}: this is a bug in the checker, not your code: {error}. Your answer could not be "
        f"judged; please report it (with seed={seed})."))


def report(task: str, check: Callable[[int], None] | Callable[[], None], seed: int | None = None) -> CheckResult:
    """Run ``check(seed)`` (or ``check()``, for a check without random cases); print one line; return the
    :class:`CheckResult`. Only exceptions raised through :func:`call` (or a :class:`Hint`) are the
    student's; any other exception escaping ``check`` is the checker's own bug."""
    seed = new_seed() if seed is None else int(seed)
    run = _Run()
    token = _RUN.set(run)
    try:
        check(seed) if inspect.signature(check).parameters else check()
    except StudentCrash as crash:
        result = _verdict(task, seed, _earlier_mistake(run) or crash)
    except Hint as hint:  # a rule a later case broke: an earlier, recognised mistake is named first
        result = _verdict(task, seed, hint if getattr(hint, "verdict", False) else _earlier_mistake(run, True) or hint)
    except NotDone as outcome:
        result = _verdict(task, seed, outcome)
    except Exception as err:  # noqa: BLE001 - anything else is the checker's own fault
        result = _verdict(task, seed, err)
    else:
        result = _verdict(task, seed, None)
    finally:
        _RUN.reset(token)
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


def kind_of(value) -> str:
    """A short name of a value's type for a hint ("a NumPy array", "a Python list", "str")."""
    if type(value).__module__ == "numpy":
        return "a NumPy array" if isinstance(value, np.ndarray) else f"a NumPy {type(value).__name__}"
    if isinstance(value, (list, tuple, dict)):
        return f"a Python {type(value).__name__}"
    return type(value).__name__


def expect_tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {kind_of(value)}.")
    return value


def as_float(value, what: str, verb: str = "should be") -> float:
    """A number from a Python/NumPy scalar, a 0-d array or a one-element tensor (never a bool or a string)."""
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta":
            raise Hint(f"{what} returned a tensor on the 'meta' device, which holds no values: compute it from the "
                       "inputs, on their device.")
        if value.numel() != 1:
            raise Hint(f"{what} returned a tensor of shape {tuple(value.shape)}: return one number.")
        if value.dtype == torch.bool or value.is_complex():
            raise Hint(f"{what} {verb} one number (a float), got a {value.dtype} tensor.")
        return float(value.item())
    if isinstance(value, (bool, str, bytes, np.bool_, np.str_, np.bytes_)):
        raise Hint(f"{what} {verb} one number (a float), got {type(value).__name__} {value!r}.")
    if isinstance(value, (list, tuple, dict)):
        raise Hint(f"{what} {verb} one number (a float), got {kind_of(value)}.")
    shape = getattr(value, "shape", ())
    if shape not in ((), (1,)):
        raise Hint(f"{what} returned an array of shape {tuple(shape)}: return one number.")
    if isinstance(value, np.ndarray) and value.dtype.kind not in "iuf":
        raise Hint(f"{what} {verb} one number (a float), got an array of {value.dtype}.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise Hint(f"{what} {verb} one number (a float), got {kind_of(value)}.") from None
