"""The checker of exploration 14's slopes: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import math

import numpy as np
import pytest
import torch
from checker_testing import all_wrong as _all_wrong
from checker_testing import slopes as _slopes
from checker_testing import verdict_and_output as _verdict

from course_utils.helpers.checkers import check_slopes

SEEDS = (0, 1)


@pytest.mark.parametrize("convert", [str, lambda v: v > 0, np.str_])
def test_14_slopes_as_strings_or_bools_are_refused(convert, capsys):
    _all_wrong(check_slopes, lambda T, t: [convert(v) for v in _slopes(T, t)], "one number")


# ------------------------------------------------------------------ the first bank of right and wrong answers


def slopes_ok(lengths, times):
    return [math.log(b / a) / math.log(T1 / T0) for T0, T1, a, b in zip(lengths, lengths[1:], times, times[1:])]


def slopes_numpy(lengths, times):
    return np.diff(np.log(times)) / np.diff(np.log(lengths))


@pytest.mark.parametrize("fn", [slopes_ok, slopes_numpy, lambda T, t: torch.tensor(slopes_ok(T, t))])
def test_slopes_valid(capsys, fn):
    ok, out = _verdict(capsys, check_slopes, fn)
    assert ok, out


def test_the_hidden_lengths_always_grow_so_a_right_answer_never_divides_by_zero():
    from course_utils.helpers.checkers.attention_cost import _cases

    for seed in range(20_000):
        name, lengths, times = _cases(seed)[-1]
        assert name == "hidden random lengths and times" and all(a < b for a, b in zip(lengths, lengths[1:])), (seed, lengths)


@pytest.mark.parametrize("fn, hint", [
    (lambda T, t: [math.log2(b / a) for a, b in zip(t, t[1:])], "divided by log 2"),
    (lambda T, t: [b / a for a, b in zip(t, t[1:])], "time ratio"),
    (lambda T, t: slopes_ok(T, t) + [2.0], "one per neighbouring pair"),
    (lambda T, t: None, "list"),
])
def test_slopes_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_slopes, fn)
    assert not ok and hint in out, out
