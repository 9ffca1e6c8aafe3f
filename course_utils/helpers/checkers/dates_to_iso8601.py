"""Checkers for lesson 04b (dates to ISO 8601): the two-digit-year pivot, the deciding span of each
output character, and alignment accuracy.

``alignment_accuracy`` is a fraction over the output positions that have a span; an input where no
position has one has no such fraction, and the task does not say what to return then, so no case
asks for it (every case has spans, some examples have none).
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import random
from collections.abc import Callable

import numpy as np
import torch

from ...models import dates as D
from .compare import Answers, call_unchanged, fraction_close
from .registry import register
from .report import Hint, as_float, call, failing_case, kind_of

NOTEBOOK = "04b_dates_to_iso8601"
_DATES = "course_utils.models.dates"

# --- full_year ----------------------------------------------------------------------------


def _as_int(value, what: str) -> int:
    if isinstance(value, bool):
        raise Hint(f"{what} should be an int such as 1989, got a bool ({value}).")
    if isinstance(value, str):
        raise Hint(f"{what} returned the string {value!r}: return an int (e.g. int(...)), such as 1989.")
    if isinstance(value, (float, np.floating)):
        if math.isfinite(value) and float(value).is_integer():
            return int(value)
        raise Hint(f"{what} returned the float {value}: return a whole year, an int such as 1989.")
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        return int(value.item())
    try:
        return operator.index(value)  # int, NumPy integers
    except TypeError:
        raise Hint(f"{what} should return an int such as 1989, got {kind_of(value)}.") from None


@register("full_year", twins={"full_year": f"{_DATES}.full_year"})
def check_full_year(fn: Callable[[int], int], seed: int) -> None:
    """Check ``fn(yy: int) -> int``: 50-99 -> 19xx, 00-49 -> 20xx, for every yy in 0..99."""
    order = [89, 50, 49, 0, 99, 7, 26, 51, 48, 1] + random.Random(4).sample(range(100), 100)
    got = {}
    for yy in order:
        if yy not in got:
            got[yy] = _as_int(call(fn, yy, case=f"yy={yy}"), f"full_year({yy})")
    wrong = [yy for yy in order if got[yy] != D.full_year(yy)]
    if not wrong:
        return
    yy = wrong[0]
    case = f"full_year({yy}) returned {got[yy]}, expected {D.full_year(yy)}"
    if got[yy] == yy:
        raise Hint(f"{case}: add the century (1900 or 2000), do not return the two digits.")
    if any(str(got[y]) in (f"19{y}", f"20{y}") for y in wrong if y < 10):
        y = next(y for y in wrong if y < 10)
        raise Hint(f"full_year({y}) returned {got[y]}, expected {D.full_year(y)}: you glued the digits as text, "
                   f"and {y} has only one digit. Add numbers instead: 1900 + yy or 2000 + yy.")
    century_only = all(got[y] in (1900 + y, 2000 + y) for y in wrong)
    if century_only and set(wrong) in ({49}, {50}):
        raise Hint(f"{case}: the pivot is off by one. 50 is the first two-digit year of the 1900s "
                   "(50-99 -> 1950-1999) and 49 the last of the 2000s (00-49 -> 2000-2049).")
    if century_only:
        raise Hint(f"{case}: 50-99 -> 19xx and 00-49 -> 20xx (dates run from 1950 to 2049); "
                   "check which side of the pivot each year is on.")
    raise Hint(f"{case}.")


# --- output_spans -------------------------------------------------------------------------


def _span_cases() -> list[dict[str, tuple[int, int]]]:
    """Field spans of every form on random dates, then made-up spans no real form has."""
    rng = random.Random(18)
    cases = []
    for form in D.FORM_NAMES:
        date = D.FIRST + dt.timedelta(days=rng.randrange(D.NUM_DAYS))
        cases.append(D.render(date, form)[1])
    cases.append({"year": (0, 2), "month": (40, 43), "day": (17, 19)})
    cases.append({"day": (9, 10), "weekday": (0, 3), "year": (3, 7), "month": (11, 12)})
    return cases


def _norm_span(value, k: int):
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    try:
        start, end = value
        if isinstance(start, bool) or isinstance(end, bool):
            raise TypeError
        return operator.index(start), operator.index(end)
    except (TypeError, ValueError):
        raise Hint(f"position {k}: a span is a pair (start, end) of ints, or None; got {value!r}.") from None


@register("output_spans", twins={"output_spans": f"{_DATES}.output_spans"})
def check_output_spans(fn: Callable[[dict], list], seed: int) -> None:
    """Check ``fn(fields) -> list of 11 spans or None``: year for 0-3, month for 5-6, day for 8-9, None elsewhere."""
    for fields in _span_cases():
        result = call_unchanged(fn, fields, names=("fields",), case=f"fields {fields}",
                                tip="read the dict of fields you are given, do not edit it")
        if not isinstance(result, (list, tuple)):
            raise Hint(f"return a list of {D.T_OUT} entries (one per output position), got {kind_of(result)}.")
        if len(result) == D.T_OUT - 1:
            raise Hint(f"you returned {len(result)} entries: the output has {D.T_OUT} positions, the 10 characters "
                       "of yyyy-mm-dd and <eos> (which has no span: None).")
        if len(result) != D.T_OUT:
            raise Hint(f"return {D.T_OUT} entries, one per output position (yyyy-mm-dd and <eos>), got {len(result)}.")
        got = [_norm_span(v, k) for k, v in enumerate(result)]
        want = D.output_spans(fields)
        if got == want:
            continue
        k = next(i for i in range(D.T_OUT) if got[i] != want[i])
        what = "<eos>" if k == D.T_OUT - 1 else f"character {k} of yyyy-mm-dd"
        case = f"for fields {fields}, position {k} ({what}): you gave {got[k]}, expected {want[k]}"
        if want[k] is None:
            raise Hint(f"{case}. The dashes and <eos> are written whatever the input says: no source span decides them.")
        if got[k] is None:
            raise Hint(f"{case}. Only the two dashes (positions 4 and 7) and <eos> (position 10) have no span.")
        if got[k] == (want[k][0], want[k][1] - 1):
            raise Hint(f"{case}. The spans are half-open, (start, end) with end excluded: use the field's span as it is.")
        if got[k] in fields.values():
            name = next(n for n, s in fields.items() if s == got[k])
            raise Hint(f"{case}: that is the {name} field. yyyy-mm-dd: positions 0-3 are the year, 5-6 the month, "
                       "8-9 the day.")
        raise Hint(f"{case}.")


# --- alignment_accuracy -------------------------------------------------------------------


def _alignment_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Weights (N, T_out, T_in) with N, T_out and T_in all different, and spans with -1 where none.

    The first case puts the largest weight exactly on a span's first position, on its end
    (outside: spans are half-open) and one before its start.
    """
    g = torch.Generator().manual_seed(0)
    spans = torch.tensor([[[0, 3], [-1, -1], [2, 4], [5, 6]],
                          [[1, 2], [4, 6], [-1, -1], [-1, -1]],
                          [[3, 5], [3, 5], [0, 1], [-1, -1]]])
    top = torch.tensor([[0, 2, 4, 5], [1, 3, 0, 5], [2, 3, 0, 6]])  # on a start (hit), an end (miss), start - 1 (miss)
    weights = torch.rand(3, 4, 7, generator=g) * 0.5
    weights.scatter_(2, top.unsqueeze(-1), 1.0)
    weights = weights / weights.sum(-1, keepdim=True)
    cases = [(weights, spans)]
    n, t_out, t_in = 37, 11, 23
    lengths = torch.randint(6, t_in + 1, (n,), generator=g)
    scores = 3 * torch.randn(n, t_out, t_in, generator=g)
    scores = scores.masked_fill(torch.arange(t_in) >= lengths[:, None, None], float("-inf"))
    start = (torch.rand(n, t_out, generator=g) * (lengths[:, None] - 2)).long()
    end = start + 1 + (torch.rand(n, t_out, generator=g) * 4).long()
    spans = torch.stack([start, torch.minimum(end, lengths[:, None].expand(n, t_out))], -1)
    spans[:, [4, 7, 10]] = -1
    spans[:3] = -1  # three examples without any span: they count nowhere
    cases.append((scores.softmax(-1), spans))
    return cases


def _alignment_mistakes(w: torch.Tensor, spans: torch.Tensor) -> list[tuple]:
    top, start, end = w.argmax(-1), spans[..., 0], spans[..., 1]
    has = start >= 0
    hits = has & (top >= start) & (top < end)
    per_row = (hits.sum(1).float() / has.sum(1).clamp(min=1))
    return [
        ("you counted a largest weight ON the end position as inside: spans are half-open, (start, end) "
         "with end excluded (use top < end).", (has & (top >= start) & (top <= end)).sum().item() / has.sum().item()),
        ("you divided by every output position: the dashes and <eos> (span -1) have no span and do not count. "
         "Divide by the number of positions that have a span.", hits.sum().item() / has.numel()),
        ("positions without a span (-1) counted as hits: leave them out of both counts.",
         (hits | ~has).sum().item() / has.numel()),
        ("per example, empty ones 0", "you averaged the accuracy of each example: pool every position with a span "
         "instead (hits / positions with a span, over all examples).", per_row.mean().item()),
        ("per example", "you averaged the accuracy of each example: pool every position with a span instead "
         "(hits / positions with a span, over all examples).", per_row[has.any(1)].mean().item()),
        ("you returned the number of hits: divide by the positions that have a span.", float(hits.sum().item())),
    ]


def _fraction_answer(fn, w: torch.Tensor, spans: torch.Tensor, where: str) -> float:
    got = call_unchanged(fn, w, spans, names=("weights", "spans"), case=where)
    if isinstance(got, torch.Tensor) and got.numel() != 1:
        raise Hint(f"alignment_accuracy returned a tensor of shape {tuple(got.shape)}: return one number for all "
                   "examples.")
    value = as_float(got, "alignment_accuracy", "should return")
    if math.isnan(value):
        raise Hint("your result is NaN: a mean over no positions at all (0/0), or a comparison with NaN? Count the "
                   "output positions that have a span (start >= 0): every case here has some.")
    return value


@register("alignment_accuracy", twins={"alignment_accuracy": f"{_DATES}.alignment_accuracy",
                                       "alignment_hits": f"{_DATES}.alignment_hits"})
def check_alignment_accuracy(fn: Callable[[torch.Tensor, torch.Tensor], float], seed: int) -> None:
    """Check ``fn(weights (N, T_out, T_in), spans (N, T_out, 2)) -> float``: the fraction of output positions
    with a span (not -1) whose largest weight falls in ``[start, end)``, pooled over the examples."""
    answers = Answers(fraction_close, lambda c: (
        f"you returned {c.got:.4f}, expected {c.expected:.4f}. For every output position with a span, take the source "
        "position of its largest weight and check start <= it < end."))
    for w, spans in _alignment_cases():
        where = f"weights of shape {tuple(w.shape)} (N, T_out, T_in)"
        with failing_case(where):
            got = _fraction_answer(fn, w, spans, where)
        top, has = w.argmax(-1), spans[..., 0] >= 0
        want = (has & (top >= spans[..., 0]) & (top < spans[..., 1])).sum().item() / has.sum().item()
        answers.add(where, got, want, lambda w=w, spans=spans, want=want: [
            ("you returned a percentage: return a fraction between 0 and 1.", 100 * want),
            *_alignment_mistakes(w, spans)])
    answers.verdict()
