"""The checker of lesson 09's decode_position: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import torch

from course_utils.helpers.checkers import check_decode_position

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def test_09_atan_of_sine_over_cosine_is_named_as_such(capsys):
    def atan(pe):
        d = pe.shape[-1]
        return torch.round(torch.atan(pe[..., -2] / pe[..., -1]) * 10000.0 ** ((d - 2) / d))

    _all_wrong(check_decode_position, atan, "atan(sine / cosine)", absent=("wrap around", "pair 1"))
