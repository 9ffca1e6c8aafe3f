"""The checker of lesson 04b's alignment_accuracy: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import numpy as np
import pytest
import torch
from checker_testing import all_wrong as _all_wrong
from checker_testing import once as _run_once
from checker_testing import verdicts as _verdicts

from course_utils.helpers.checkers import (
    check_alignment_accuracy,
    check_full_year,
    check_output_spans,
    dates_to_iso8601,
)
from course_utils.models import dates as D

SEEDS = (0, 1)


def _hits(w, s):
    top = w.argmax(-1)
    return (s[..., 0] >= 0) & (top >= s[..., 0]) & (top < s[..., 1])


@pytest.mark.parametrize("answer", [
    lambda w, s: float("nan"),
    lambda w, s: _hits(w, s)[s[..., 0] > 1000].float().mean(),  # a mean over an empty selection
    lambda w, s: torch.tensor(float("nan")),
])
def test_04b_a_nan_is_never_right(answer, capsys):
    _all_wrong(check_alignment_accuracy, answer, "NaN", absent=("well done",))


def test_04b_per_example_means_with_empty_examples_are_named(capsys):
    def per_example(w, s):
        has = s[..., 0] >= 0
        return (_hits(w, s).sum(1)[has.any(1)] / has.sum(1)[has.any(1)]).mean().item()

    _all_wrong(check_alignment_accuracy, per_example, "averaged the accuracy of each example")


def test_04b_no_case_asks_for_an_input_without_spans(capsys):
    # Decision: with no span anywhere there is no fraction, and the task does not say what to return;
    # no case asks for it, so an answer that raises there is right. Some examples have no span at all.
    cases = dates_to_iso8601._alignment_cases()
    assert all((s[..., 0] >= 0).any() for _, s in cases)
    assert any(((s[..., 0] >= 0).sum(1) == 0).any() for _, s in cases)

    def strict(w, s):
        has = s[..., 0] >= 0
        if not has.any():
            raise ValueError("no spans")
        return _hits(w, s).sum().item() / has.sum().item()

    assert all(_verdicts(check_alignment_accuracy, strict))


# ------------------------------------------------------------------ the first bank of right and wrong answers


def stub(*args):
    raise NotImplementedError


def full_year_if(yy):
    if yy >= 50:
        return 1900 + yy
    return 2000 + yy


def full_year_numpy(yy):
    return np.int64(np.where(yy < 50, 2000, 1900) + yy)


def full_year_float(yy):
    return 1900.0 + yy + 100.0 * (yy < 50)


def full_year_string_then_int(yy):
    return int(("20" if yy < 50 else "19") + f"{yy:02d}")


@pytest.mark.parametrize("fn", [full_year_if, full_year_numpy, full_year_float, full_year_string_then_int])
def test_full_year_correct_answers_pass(fn, capsys):
    ok, out = _run_once(check_full_year, fn, capsys)
    assert ok, out
    assert "[correct]" in out


WRONG_FULL_YEAR = {
    "pivot at 49": (lambda yy: 1900 + yy if yy >= 49 else 2000 + yy, "off by one"),
    "pivot after 50": (lambda yy: 1900 + yy if yy > 50 else 2000 + yy, "off by one"),
    "sides swapped": (lambda yy: 2000 + yy if yy >= 50 else 1900 + yy, "which side of the pivot"),
    "always 19xx": (lambda yy: 1900 + yy, "which side of the pivot"),
    "always 20xx": (lambda yy: 2000 + yy, "which side of the pivot"),
    "two digits back": (lambda yy: yy, "add the century"),
    "glued text": (lambda yy: int(("19" if yy >= 50 else "20") + str(yy)), "glued the digits"),
    "a string": (lambda yy: f"{full_year_if(yy)}", "string"),
    "a half year": (lambda yy: full_year_if(yy) + 0.5, "float"),
    "a bool": (lambda yy: True, "bool"),
    "a list": (lambda yy: [full_year_if(yy)], "should return an int"),
    "a NaN": (lambda yy: float("nan"), "float"),
    "the course's own": (D.full_year, "calls the course's own full_year"),
    "a call of the course's own": (lambda yy: D.full_year(yy), "calls the course's own full_year"),
    "crashes": (lambda yy: 1 / 0, "ZeroDivisionError"),
}


@pytest.mark.parametrize("name", WRONG_FULL_YEAR)
def test_full_year_wrong_answers_fail_with_their_hint(name, capsys):
    fn, fragment = WRONG_FULL_YEAR[name]
    ok, out = _run_once(check_full_year, fn, capsys)
    assert not ok and "[try again]" in out
    assert fragment in out, out


FIELDS = ("year",) * 4 + (None,) + ("month",) * 2 + (None,) + ("day",) * 2 + (None,)


def spans_loop(fields):
    return [None if name is None else fields[name] for name in FIELDS]


def spans_explicit(fields):
    y, m, d = fields["year"], fields["month"], fields["day"]
    return [y, y, y, y, None, m, m, None, d, d, None]


def spans_lists_and_numpy(fields):
    out = []
    for k in range(11):
        name = "year" if k < 4 else "month" if k in (5, 6) else "day" if k in (8, 9) else None
        out.append(None if name is None else list(np.array(fields[name])))
    return tuple(out)


def spans_tensors(fields):
    return [None if n is None else torch.tensor(fields[n]) for n in FIELDS]


@pytest.mark.parametrize("fn", [spans_loop, spans_explicit, spans_lists_and_numpy, spans_tensors])
def test_output_spans_correct_answers_pass(fn, capsys):
    ok, out = _run_once(check_output_spans, fn, capsys)
    assert ok, out


def _shift(names):
    return lambda f: [None if n is None else f[n] for n in names]


def _mutating(fields):
    fields.pop("weekday", None)
    return spans_loop(fields)


WRONG_OUTPUT_SPANS = {
    "no <eos>": (lambda f: spans_loop(f)[:10], "<eos>"),
    "too long": (lambda f: spans_loop(f) + [None], "return 11 entries"),
    "dashes get the next field": (_shift(("year",) * 4 + ("month",) * 3 + ("day",) * 3 + (None,)), "no source span decides them"),
    "month and day swapped": (_shift(("year",) * 4 + (None,) + ("day",) * 2 + (None,) + ("month",) * 2 + (None,)), "that is the day field"),
    "year spans 5 chars": (_shift(("year",) * 5 + ("month",) * 2 + (None,) + ("day",) * 2 + (None,)), "no source span decides them"),
    "a None too many": (_shift(("year",) * 4 + (None,) + (None, "month") + (None,) + ("day",) * 2 + (None,)), "Only the two dashes"),
    "inclusive end": (lambda f: [None if s is None else (s[0], s[1] - 1) for s in spans_loop(f)], "half-open"),
    "a dict": (lambda f: dict(enumerate(spans_loop(f))), "return a list"),
    "single positions": (lambda f: [None if s is None else s[0] for s in spans_loop(f)], "a span is a pair"),
    "edits its input": (_mutating, "changed its input fields in place"),
    "the course's own": (D.output_spans, "calls the course's own output_spans"),
    "a bool in a span": (lambda f: [None if s is None else (True, s[1]) for s in spans_loop(f)], "a span is a pair"),
    "hard-coded for one form": (lambda f: [(20, 24)] * 4 + [None, (11, 19), (11, 19), None, (8, 10), (8, 10), None], "expected"),
}


@pytest.mark.parametrize("name", WRONG_OUTPUT_SPANS)
def test_output_spans_wrong_answers_fail_with_their_hint(name, capsys):
    fn, fragment = WRONG_OUTPUT_SPANS[name]
    ok, out = _run_once(check_output_spans, fn, capsys)
    assert not ok and "[try again]" in out
    assert fragment in out, out


def alignment_vectorised(weights, spans):
    top = weights.argmax(dim=-1)
    has = spans[..., 0] >= 0
    hits = has & (spans[..., 0] <= top) & (top < spans[..., 1])
    return hits.sum().item() / has.sum().item()


def alignment_loops(weights, spans):
    hits = total = 0
    for w_rows, s_rows in zip(weights.tolist(), spans.tolist()):
        for row, (start, end) in zip(w_rows, s_rows):
            if start < 0:
                continue
            total += 1
            hits += start <= row.index(max(row)) < end
    return hits / total


def alignment_tensor(weights, spans):
    top = weights.argmax(-1)
    has = spans[..., 0] != -1
    return ((top >= spans[..., 0]) & (top < spans[..., 1]))[has].float().mean()


def alignment_numpy(weights, spans):
    w, s = weights.numpy(), spans.numpy()
    top = w.argmax(-1)
    has = s[..., 0] >= 0
    return np.mean(((s[..., 0] <= top) & (top < s[..., 1]))[has])


@pytest.mark.parametrize("fn", [alignment_vectorised, alignment_loops, alignment_tensor, alignment_numpy])
def test_alignment_accuracy_correct_answers_pass(fn, capsys):
    ok, out = _run_once(check_alignment_accuracy, fn, capsys)
    assert ok, out


def _hits_of(weights, spans, inclusive=False):
    top = weights.argmax(-1)
    end_ok = top <= spans[..., 1] if inclusive else top < spans[..., 1]
    return (spans[..., 0] >= 0) & (top >= spans[..., 0]) & end_ok


def _mutating_alignment(weights, spans):
    weights[spans[..., 0] < 0] = 0
    return alignment_vectorised(weights, spans)


WRONG_ALIGNMENT = {
    "inclusive end": (lambda w, s: _hits_of(w, s, True).sum().item() / (s[..., 0] >= 0).sum().item(), "half-open"),
    "every position in the denominator": (lambda w, s: _hits_of(w, s).float().mean().item(), "divided by every output position"),
    "no-span positions as hits": (lambda w, s: (_hits_of(w, s) | (s[..., 0] < 0)).float().mean().item(), "counted as hits"),
    "mean of per-example accuracies": (
        lambda w, s: (_hits_of(w, s).sum(1) / (s[..., 0] >= 0).sum(1)).float().mean().item(), "averaged the accuracy of each example"),
    "percentage": (lambda w, s: 100 * alignment_vectorised(w, s), "percentage"),
    "count of hits": (lambda w, s: _hits_of(w, s).sum().item(), "number of hits"),
    "per example": (lambda w, s: _hits_of(w, s).sum(1) / (s[..., 0] >= 0).sum(1), "one number"),
    "argmax over outputs": (lambda w, s: alignment_vectorised(w.transpose(1, 2), s), "RuntimeError"),
    "edits its input": (_mutating_alignment, "in place"),
    "a string": (lambda w, s: f"{alignment_vectorised(w, s):.2f}", "should return one number"),
}


@pytest.mark.parametrize("name", WRONG_ALIGNMENT)
def test_alignment_accuracy_wrong_answers_fail_with_their_hint(name, capsys):
    fn, fragment = WRONG_ALIGNMENT[name]
    ok, out = _run_once(check_alignment_accuracy, fn, capsys)
    assert not ok and "[try again]" in out
    assert fragment in out, out


@pytest.mark.parametrize("checker", [check_full_year, check_output_spans, check_alignment_accuracy])
def test_stubs_are_not_implemented_yet(checker, capsys):
    ok, out = _run_once(checker, stub, capsys)
    assert not ok and "[not yet]" in out and "Traceback" not in out


def test_alignment_cases_cover_the_boundaries():
    """The first hidden case puts a largest weight on a span's start (in), its end (out) and before it (out)."""
    from course_utils.helpers.checkers.dates_to_iso8601 import _alignment_cases

    (w, s), (w2, s2) = _alignment_cases()
    top = w.argmax(-1)
    assert (top == s[..., 0]).any() and (top == s[..., 1]).any() and (top == s[..., 0] - 1).any()
    assert len({w2.shape[0], w2.shape[1], w2.shape[2]}) == 3
    assert (s2[..., 0] < 0).any() and (s2[..., 0] >= 0).any()
