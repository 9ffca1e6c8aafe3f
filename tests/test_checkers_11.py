"""The checker of lesson 11's next_token_probs: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import numpy as np
import pytest
import torch
from checker_testing import all_wrong as _all_wrong
from checker_testing import verdict_and_output as _verdict

from course_utils.helpers.checkers import check_next_token_probs, next_token_predictor

SEEDS = (0, 1)


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


# ------------------------------------------------------------------ the first bank of right and wrong answers


def probs_ok(logits, t):
    if t == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits / t, dim=-1)


def probs_numpy(logits, t):
    z = logits.numpy().astype(np.float64)
    if t == 0:
        return torch.from_numpy((z == z.max(-1, keepdims=True)).astype(np.float64))
    e = np.exp((z - z.max(-1, keepdims=True)) / t)
    return torch.from_numpy(e / e.sum(-1, keepdims=True))


@pytest.mark.parametrize("fn", [probs_ok, probs_numpy])
def test_probs_valid(capsys, fn):
    ok, out = _verdict(capsys, check_next_token_probs, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda z, t: torch.softmax(z * max(t, 1e-9), -1), "multiplied"),
    (lambda z, t: torch.softmax(z, -1), "no effect"),
    (lambda z, t: torch.softmax(z / max(t, 1e-3), -1) if t else torch.softmax(z / 1e-3, -1) * 0.5, "greedy"),
    (lambda z, t: torch.softmax(z / t, 0) if t else probs_ok(z, t), "sum to 1"),
    (lambda z, t: probs_ok(z, t) * 0.98 + 0.02 / z.shape[-1], "differ"),
])
def test_probs_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_next_token_probs, fn)
    assert not ok and hint in out, out
