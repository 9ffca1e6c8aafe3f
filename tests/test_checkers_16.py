"""The checker of exercise 16's online_update: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch

from course_utils.helpers.checkers import check_online_update

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _update(m, l, acc, s, v):
    m_new = torch.maximum(m, s.amax(-1))
    p, c = torch.exp(s - m_new[..., None]), torch.exp(m - m_new)
    return m_new, l * c + p.sum(-1), acc * c[..., None] + p @ v


@pytest.mark.parametrize("bend, words", [(lambda m: m.long(), "dtype"), (lambda m: m + 0.5, "differs by up to")])
def test_16_a_wrong_m_of_the_right_shape_is_told_what_differs(bend, words, capsys):
    def wrong_m(*args):
        m, l, acc = _update(*args)
        return bend(m), l, acc

    for result in _verdicts(check_online_update, wrong_m):
        assert not result and words in result.hint and "got shape" not in result.hint, result.message
