"""The checker of lesson 01b's masked_softmax: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch

from course_utils.helpers.checkers import check_masked_softmax, scaling_and_masks

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _fill(value):
    return lambda s, m: torch.softmax(s.masked_fill(~m, value(s) if callable(value) else value), -1) * m


@pytest.mark.parametrize("fill", [-1000.0, -1e4 / 2, -1e9, -1e30, lambda s: torch.finfo(torch.float32).min])
def test_01b_any_finite_fill_but_the_dtypes_minimum_fails(fill, capsys):
    _all_wrong(check_masked_softmax, _fill(fill), "not low enough")


@pytest.mark.parametrize("answer", [_fill(lambda s: torch.finfo(s.dtype).min),
                                    lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), -1).nan_to_num(0.0)])
def test_01b_the_dtypes_minimum_or_minus_inf_pass(answer, capsys):
    assert all(_verdicts(check_masked_softmax, answer))


def test_01b_hidden_cases_put_allowed_scores_below_every_finite_fill():
    cases = list(scaling_and_masks._extreme_cases(torch.Generator().manual_seed(0)))
    lowest = {s.dtype: s.masked_fill(~m.expand_as(s), 0).min().item() for _, s, m in cases}
    assert lowest[torch.float32] <= -3e38 and lowest[torch.float64] <= -1e300
    assert any(((s >= 3e38) & m).any(-1).logical_and(((s <= -3e38) & m).any(-1)).any() for _, s, m in cases)
    assert any((s[m] > -2e4).all() and (s[m] <= -1e4).all() for _, s, m in cases)  # near -1e4, below a fill of -1000
