"""The checker of exploration 10's sparsemax_threshold: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import torch

from course_utils.helpers.checkers import check_sparsemax_threshold

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def test_10_a_nan_threshold_is_not_called_different_answers(capsys):
    _all_wrong(check_sparsemax_threshold, lambda z: torch.full((*z.shape[:-1], 1), float("nan"), dtype=z.dtype),
               "NaN", absent=("different answers",))
