"""Comparing a student's answers with the expected ones and with known mistakes, across every case.

A hint names a mistake only when the WHOLE answer is that mistake: :class:`Answers` collects the
student's answer to every case first, then names the first known mistake that reproduces the answer
on every case where the mistake applies (and where it does not apply, the answer must be right).
A coincidence on one case never names a mistake; an answer no mistake explains gets a neutral,
factual "expected ..., got ..." message for its first failing case.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .report import Hint, call, current_run, kind_of


def close(a, b, atol: float = 1e-5, rtol: float = 1e-4, nan_ok: bool = False) -> bool:
    """Two tensors of the same shape with values within tolerance (compared in float64, any dtypes)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape:
        return False
    if a.is_complex() or b.is_complex():
        return False
    return torch.allclose(a.detach().cpu().double(), b.detach().cpu().double(), atol=atol, rtol=rtol, equal_nan=nan_ok)


def largest_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| (NaN and inf count as an infinite difference)."""
    diff = (a.detach().cpu().double() - b.detach().cpu().double()).abs()
    return diff.nan_to_num(math.inf, math.inf, math.inf).max().item() if diff.numel() else 0.0


def difference(got, want: torch.Tensor, what: str) -> str:
    """What differs between ``got`` and ``want``: the type, the shape, the dtype, the device, or the values."""
    if not isinstance(got, torch.Tensor):
        return f"{what} should be a torch.Tensor, got {kind_of(got)}"
    if got.shape != want.shape:
        return f"{what} should have shape {tuple(want.shape)}, got {tuple(got.shape)}"
    if got.dtype != want.dtype:
        return f"{what} should have dtype {want.dtype}, got {got.dtype}"
    if got.device != want.device:
        return f"{what} should be on the inputs' device ({want.device}), got {got.device}"
    if got.isnan().any() and not want.isnan().any():
        return f"{what} contains NaN"
    return f"{what} has the right shape and dtype but differs by up to {largest_difference(got, want):.3g}"


def two_numbers(want: float, got: float) -> tuple[str, str]:
    """``want`` and ``got`` printed with as many digits as it takes to tell them apart (4, 6 or 9 significant),
    so that a hint never reads "expected 0.1667, got 0.1667"."""
    for digits in (4, 6, 9):
        a, b = f"{want:.{digits}g}", f"{got:.{digits}g}"
        if a != b:
            break
    return a, b


def fraction_close(a: float, b: float, tol: float = 1e-6) -> bool:
    return a is not None and b is not None and not math.isnan(a) and abs(a - b) <= tol


def as_int(value) -> int:
    """A whole number from a Python/NumPy integer or a one-element integer tensor; TypeError otherwise
    (bools, floats and strings are not integers)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.dtype.is_floating_point or value.is_complex() or value.dtype == torch.bool:
            raise TypeError
        return int(value.item())
    return operator.index(value)


@dataclass
class Case:
    """One case of a task: the student's answer, the expected one, and a bank of known mistakes."""

    description: str
    got: Any
    expected: Any
    ok: bool
    bank: Callable[[], Iterable[tuple]] | Iterable[tuple] = ()
    info: dict = field(default_factory=dict)  # what else a message about this case needs (its inputs)
    table: dict = field(default_factory=dict)


class Answers:
    """The student's answers to every case of a task, judged together.

    ``add(description, got, expected, bank, **info)``: ``bank`` (or a function returning it, evaluated
    only if some answer is wrong) lists the known mistakes of this case as ``(hint, value)`` or
    ``(key, hint, value)``; ``value`` may be a function (evaluated lazily; one that raises means
    "does not apply here") or ``None`` (does not apply). Mistakes with the same key are the same
    mistake in different cases (the hint may name this case's sizes). :meth:`verdict` raises a
    :class:`Hint`: the first mistake that explains every case, else ``otherwise(first wrong case)``.
    If the student's code crashes in a later case after some answers were wrong, ``report`` names the
    earlier mistake (this verdict over the cases so far) instead of the crash.
    """

    def __init__(self, same: Callable[[Any, Any], bool], otherwise: Callable[[Case], str] | None = None) -> None:
        self.same, self.otherwise, self.cases = same, otherwise, []
        run = current_run()
        if run is not None:
            run.answers.append(self)  # a crash in a later case then names an earlier mistake first

    def add(self, description: str, got, expected, bank=(), **info) -> bool:
        ok = bool(self.same(got, expected))
        self.cases.append(Case(description, got, expected, ok, bank, info))
        return ok

    @property
    def wrong(self) -> list[Case]:
        return [case for case in self.cases if not case.ok]

    def _fill(self, case: Case) -> None:
        bank = case.bank() if callable(case.bank) else case.bank
        for entry in bank:
            key, hint, value = entry if len(entry) == 3 else (entry[0], entry[0], entry[1])
            if key in case.table:
                continue
            if callable(value):
                try:
                    value = value()
                except Exception:  # noqa: BLE001 - a mistake that cannot run on this case does not apply
                    value = None
            case.table[key] = (hint, value)

    def explained_by(self) -> tuple[str, Case] | None:
        """The first known mistake that reproduces the answer on every case, with its first wrong case."""
        if not self.wrong:
            return None
        for case in self.cases:
            self._fill(case)
        keys = list(dict.fromkeys(key for case in self.cases for key in case.table))
        for key in keys:
            first = None
            for case in self.cases:
                hint, value = case.table.get(key, (None, None))
                applies = value is not None
                if applies and not self.same(case.got, value):
                    break
                if not applies and not case.ok:
                    break
                if applies and not case.ok and first is None:
                    first = (hint, case)
            else:
                if first is not None:
                    return first
        return None

    def verdict(self, otherwise: Callable[[Case], str] | None = None) -> None:
        """Return quietly if every answer is right; else raise the hint that explains the answers
        (none known: ``otherwise(first wrong case)``, by default the one given at construction)."""
        otherwise = otherwise or self.otherwise
        found = self.explained_by()
        if found is None and not self.wrong:
            return
        hint, case = found if found is not None else (otherwise(self.wrong[0]), self.wrong[0])
        outcome = Hint(hint, case.description)
        outcome.verdict = True  # judged over every case collected (report: not overridden by earlier answers)
        raise outcome


def same_tensor(a, b) -> bool:
    """Exactly equal: shape, dtype and every value (NaN equal to NaN)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _unchanged(before, after) -> bool:
    if isinstance(before, torch.Tensor):
        return same_tensor(before, after)
    if isinstance(before, np.ndarray):
        return isinstance(after, np.ndarray) and np.array_equal(before, after, equal_nan=before.dtype.kind == "f")
    if isinstance(before, dict):
        return isinstance(after, dict) and list(before) == list(after) and all(
            _unchanged(before[k], after[k]) for k in before)
    if isinstance(before, list):
        return isinstance(after, list) and len(before) == len(after) and all(map(_unchanged, before, after))
    return True


def call_unchanged(fn, *args, names: Sequence[str] = (), case: str = "", tip: str = "compute new tensors instead",
                   **kwargs):
    """``call(fn, *copies of args, **kwargs)``; a Hint if the student's code changed an argument in place."""
    copies = [_copy(a) for a in args]
    result = call(fn, *copies, case=case, **kwargs)
    for i, (before, after) in enumerate(zip(args, copies)):
        if not _unchanged(before, after):
            name = names[i] if i < len(names) else f"number {i + 1}"
            raise Hint(f"your function changed its input {name} in place: {tip}.", case)
    return result


def kind_mistake(got, like: torch.Tensor, what: str, dtype: torch.dtype | None = None, why: str = "") -> str | None:
    """What is wrong with the kind of ``got``, a result computed from the input ``like``, before any value is
    compared: not a torch tensor (a NumPy array), another device, another dtype than ``dtype`` (default
    ``like``'s), or cut from autograd while ``like`` requires grad (a NumPy round trip or ``.detach()``).
    None when the kind is right."""
    dtype = dtype or like.dtype
    if not isinstance(got, torch.Tensor):
        numpy = " Use torch operations only: no NumPy round trip." if isinstance(got, np.ndarray) else ""
        return f"{what} should be a torch.Tensor, got {kind_of(got)}.{numpy}"
    if got.device != like.device:
        return (f"{what} is on device '{got.device}', the input on '{like.device}': create every tensor on the "
                "input's device (device=x.device) and do not move the result.")
    if got.dtype != dtype:
        return (f"{what} has dtype {got.dtype}, it should be {dtype} (the input's; no .half(), .float(), "
                ".double() or NumPy round trip; create new tensors with dtype=x.dtype)." + (f" {why}" if why else ""))
    if like.requires_grad and not got.requires_grad:
        return (f"{what} has lost autograd: the input requires grad (in the notebook it comes out of a layer that "
                "is trained), your result has no grad_fn, so no gradient could flow back through it. A NumPy round "
                "trip (.numpy(), torch.from_numpy, torch.tensor(...) of values) or .detach() cuts it: use torch "
                "operations on the tensor itself.")
    return None


def expect_like(got, like: torch.Tensor, what: str, case: str = "", dtype: torch.dtype | None = None, why: str = ""):
    """``got`` if :func:`kind_mistake` finds nothing wrong with it, else a :class:`Hint` naming what is
    (``why``: why the dtype matters for this task, added to a dtype hint)."""
    mistake = kind_mistake(got, like, what, dtype, why)
    if mistake:
        raise Hint(mistake, case)
    return got


ALLCLOSE = "The notebook's next cell compares your result with torch.allclose, which raises on two dtypes."
