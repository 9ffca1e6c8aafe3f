"""The checker of lesson 04b's alignment_accuracy: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch

from course_utils.helpers.checkers import check_alignment_accuracy, dates_to_iso8601

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _hits(w, s):
    top = w.argmax(-1)
    return (s[..., 0] >= 0) & (top >= s[..., 0]) & (top < s[..., 1])


@pytest.mark.parametrize("answer", [
    lambda w, s: float("nan"),
    lambda w, s: _hits(w, s)[s[..., 0] > 1000].float().mean(),  # a mean over an empty selection
    lambda w, s: torch.tensor(float("nan")),
])
def test_04b_a_nan_is_never_right(answer, capsys):
    _all_wrong(check_alignment_accuracy, answer, "NaN", absent=("well done",))


def test_04b_per_example_means_with_empty_examples_are_named(capsys):
    def per_example(w, s):
        has = s[..., 0] >= 0
        return (_hits(w, s).sum(1)[has.any(1)] / has.sum(1)[has.any(1)]).mean().item()

    _all_wrong(check_alignment_accuracy, per_example, "averaged the accuracy of each example")


def test_04b_no_case_asks_for_an_input_without_spans(capsys):
    # Decision: with no span anywhere there is no fraction, and the task does not say what to return;
    # no case asks for it, so an answer that raises there is right. Some examples have no span at all.
    cases = dates_to_iso8601._alignment_cases()
    assert all((s[..., 0] >= 0).any() for _, s in cases)
    assert any(((s[..., 0] >= 0).sum(1) == 0).any() for _, s in cases)

    def strict(w, s):
        has = s[..., 0] >= 0
        if not has.any():
            raise ValueError("no spans")
        return _hits(w, s).sum().item() / has.sum().item()

    assert all(_verdicts(check_alignment_accuracy, strict))
