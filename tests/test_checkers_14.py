"""The checker of exploration 14's slopes: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import math

import numpy as np
import pytest

from course_utils.helpers.checkers import check_slopes

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _slopes(T, t):
    return [math.log(b / a) / math.log(T1 / T0) for T0, T1, a, b in zip(T, T[1:], t, t[1:])]


@pytest.mark.parametrize("convert", [str, lambda v: v > 0, np.str_])
def test_14_slopes_as_strings_or_bools_are_refused(convert, capsys):
    _all_wrong(check_slopes, lambda T, t: [convert(v) for v in _slopes(T, t)], "one number")
