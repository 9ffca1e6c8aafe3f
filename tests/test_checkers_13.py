"""The checker of exploration 13's argmax_offset_share: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import numpy as np
import pytest
import torch

from course_utils.helpers.checkers import check_argmax_offset_share

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _share(w, lengths, k):
    t = torch.arange(w.shape[1])
    steps = t < lengths[:, None]
    return ((w.argmax(-1) == lengths[:, None] - 1 - t + k) & steps).sum().item() / steps.sum().item()


@pytest.mark.parametrize("convert", [str, np.str_, lambda v: bool(v), lambda v: np.bool_(v), lambda v: [v]])
def test_13_a_number_as_a_string_or_bool_is_refused(convert, capsys):
    _all_wrong(check_argmax_offset_share, lambda w, n, k: convert(_share(w, n, k)), "one number")
