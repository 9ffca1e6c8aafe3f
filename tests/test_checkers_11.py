"""The checker of lesson 11's next_token_probs: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch

from course_utils.helpers.checkers import check_next_token_probs, next_token_predictor

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_11_exp_without_the_maximum_fails_beyond_exps_range(dtype, capsys):
    def naive(logits, t):
        if t == 0:
            return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
        e = torch.exp(logits.to(dtype) / t)
        return e / e.sum(-1, keepdim=True)

    _all_wrong(check_next_token_probs, naive, "exp overflowed")


def test_11_hidden_cases_reach_past_float64s_exp():
    top = max((z / t).abs().max().item() for z, t in next_token_predictor._overflowing(torch.Generator()) if t > 0)
    assert top > 709
