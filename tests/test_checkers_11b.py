"""The checker of lesson 11b's task (copy_accuracies): right answers of several styles pass on hidden draws,
and each wrong answer its hints name gets that hint."""

import pytest
import torch

from course_utils.helpers.checkers.induction_heads_in_text import _copy_cases, _copy_reference, check_copy_accuracies
from course_utils.models.induction import copy_accuracies

SEEDS = range(8)

def copy_with_shift(logits, tokens, period):
    right = (logits[:, :-1].argmax(-1) == tokens[:, 1:]).float()
    return right[:, : period - 1].mean(), right[:, period:].mean()


def copy_with_a_loop(logits, tokens, period):
    guesses = logits.argmax(-1)
    first = [float(guesses[b, t - 1] == tokens[b, t]) for b in range(len(tokens)) for t in range(1, period)]
    second = [float(guesses[b, t - 1] == tokens[b, t]) for b in range(len(tokens)) for t in range(period + 1, 2 * period)]
    return sum(first) / len(first), sum(second) / len(second)


def copy_with_softmax(logits, tokens, period):
    return copy_with_shift(torch.softmax(logits.double(), -1), tokens, period)


@pytest.mark.parametrize("fn", [copy_with_shift, copy_with_a_loop, copy_with_softmax], ids=lambda fn: fn.__name__)
def test_right_copy_accuracies_pass(capsys, fn):
    for seed in SEEDS:
        assert check_copy_accuracies(fn, seed=seed).status == "correct", capsys.readouterr().out


COPY_WRONG = [
    (lambda lg, tk, L: ((lg.argmax(-1) == tk).float()[:, 1:L].mean(), (lg.argmax(-1) == tk).float()[:, L + 1 :].mean()),
     "t + 1"),
    (lambda lg, tk, L: tuple(reversed(copy_with_shift(lg, tk, L))), "swapped"),
    (lambda lg, tk, L: (copy_with_shift(lg, tk, L)[0],
                        (lg[:, :-1].argmax(-1) == tk[:, 1:]).float()[:, L - 1 :].mean()), "is counted"),
    (lambda lg, tk, L: ((lg[:, :-1].argmax(-1) == tk[:, 1:]).float()[:, :L].mean(), copy_with_shift(lg, tk, L)[1]),
     "belongs to the second copy"),
]


@pytest.mark.parametrize("wrong, words", COPY_WRONG, ids=[w for _, w in COPY_WRONG])
def test_copy_mistakes_get_their_hint(capsys, wrong, words):
    for seed in SEEDS:
        result = check_copy_accuracies(wrong, seed=seed)
        assert result.status == "wrong" and words in result.hint, (seed, capsys.readouterr().out)


def test_copy_reference_is_the_course_function_and_it_checks_its_input():
    for seed in range(5):
        for _, logits, tokens, L in _copy_cases(seed):
            assert _copy_reference(logits, tokens, L) == pytest.approx(copy_accuracies(logits, tokens, L))
    with pytest.raises(ValueError, match="2L"):
        copy_accuracies(torch.zeros(2, 7, 3), torch.zeros(2, 7, dtype=torch.long), 3)
