"""The checker of exercise 15's cached_attention: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch

from course_utils.helpers.checkers import check_cached_attention

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _cached(q, k, v, kc, vc):
    K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
    t, s = kc.shape[-2], q.shape[-2]
    mask = torch.ones(s, t + s, dtype=torch.bool).tril(diagonal=t)
    return torch.softmax((q @ K.mT / q.shape[-1] ** 0.5).masked_fill(~mask, float("-inf")), -1) @ V, K, V


def test_15_a_float64_output_is_named_not_blamed_on_a_crash(capsys):
    _all_wrong(check_cached_attention, lambda *a: (_cached(*a)[0].double(), *_cached(*a)[1:]), "dtype torch.float64",
               absent=("your code raised", "bug in the checker"))


@pytest.mark.parametrize("size, words, other", [(lambda q, K, V: V.shape[-1], "sqrt(d_v", "number of keys"),
                                                (lambda q, K, V: K.shape[-2], "number of keys", "sqrt(d_v")])
def test_15_a_wrong_scale_is_named_by_the_size_it_used(size, words, other, capsys):
    def scaled(q, k, v, kc, vc):
        K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
        t, s = kc.shape[-2], q.shape[-2]
        mask = torch.ones(s, t + s, dtype=torch.bool).tril(diagonal=t)
        w = torch.softmax((q @ K.mT / size(q, K, V) ** 0.5).masked_fill(~mask, float("-inf")), -1)
        return w @ V, K, V

    _all_wrong(check_cached_attention, scaled, words, absent=(other,))
