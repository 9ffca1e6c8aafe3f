"""The checker of lesson 04's peak_offsets: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import math

import pytest
import torch

from course_utils.helpers.checkers import check_peak_offsets

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


@pytest.mark.parametrize("value, shown", [(float("nan"), "got nan"), (float("inf"), "got inf"), (-math.inf, "got -inf")])
def test_04_nan_and_inf_offsets_are_not_whole_numbers(value, shown, capsys):
    _all_wrong(check_peak_offsets, lambda w, L: torch.full((int(L.sum()),), value), "an offset is a whole number")
    _all_wrong(check_peak_offsets, lambda w, L: [value] * int(L.sum()), shown)
