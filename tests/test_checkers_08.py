"""Checkers of notebook 08 (attention vs none): correct answers pass, a bank of known-wrong answers
(the mistakes students make) each fails with a hint that names the mistake, stubs get "not implemented yet"."""

import pytest

from course_utils.helpers.checkers import (
    check_accuracy_by_length,
    check_exact_match,
    check_token_accuracy,
)

PAD, EOS = 0, 2


def stub(*args):
    raise NotImplementedError


# --- token accuracy -------------------------------------------------------------


def token_accuracy_vectorised(pred, target):
    real = target != PAD
    return ((pred == target) & real).sum().item() / real.sum().item()


def token_accuracy_loops(pred, target):
    right = total = 0
    for p_row, t_row in zip(pred.tolist(), target.tolist()):
        for p, t in zip(p_row, t_row):
            if t != PAD:
                total += 1
                right += p == t
    return right / total


def token_accuracy_tensor(pred, target):  # a 0-dim tensor is accepted as a number
    real = target != PAD
    return ((pred == target) & real).sum() / real.sum()


WRONG_TOKEN_ACCURACY = {
    "pads counted": (lambda p, t: (p == t).float().mean().item(), "padding positions"),
    "pads counted, loops": (
        lambda p, t: sum(a == b for r, s in zip(p.tolist(), t.tolist()) for a, b in zip(r, s)) / t.numel(),
        "padding positions",
    ),
    "pads in the denominator": (lambda p, t: ((p == t) & (t != PAD)).sum().item() / t.numel(), "divided by every position"),
    "positions chosen by the prediction": (
        lambda p, t: ((p == t) & (p != PAD)).sum().item() / (p != PAD).sum().item(),
        "PREDICTION",
    ),
    "<eos> left out": (
        lambda p, t: ((p == t) & (t > EOS)).sum().item() / (t > EOS).sum().item(),
        "<eos> is a target token",
    ),
    "mean of per-sequence accuracies": (
        lambda p, t: (((p == t) & (t != PAD)).sum(1) / (t != PAD).sum(1)).mean().item(),
        "averaged the per-sequence",
    ),
    "exact match instead": (lambda p, t: ((p == t) | (t == PAD)).all(1).float().mean().item(), "exact-sequence"),
    "count, not fraction": (lambda p, t: ((p == t) & (t != PAD)).sum().item(), "more than 1"),
    "percentage": (lambda p, t: 100 * token_accuracy_vectorised(p, t), "percentage"),
    "one value per sequence": (lambda p, t: ((p == t) & (t != PAD)).sum(1) / (t != PAD).sum(1), "one number"),
    "returns a list": (lambda p, t: [token_accuracy_vectorised(p, t)], "should return one number"),
}


def _mutating_token_accuracy(pred, target):
    pred[target == PAD] = PAD  # "clean up" the caller's predictions in place
    return token_accuracy_vectorised(pred, target)


WRONG_TOKEN_ACCURACY["changes its input"] = (_mutating_token_accuracy, "in place")


@pytest.mark.parametrize("fn", [token_accuracy_vectorised, token_accuracy_loops, token_accuracy_tensor])
def test_token_accuracy_correct_answers_pass(fn, capsys):
    assert check_token_accuracy(fn).status == "correct"
    assert "[correct]" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(WRONG_TOKEN_ACCURACY))
def test_token_accuracy_wrong_answers_get_specific_hints(name, capsys):
    fn, hint = WRONG_TOKEN_ACCURACY[name]
    assert not check_token_accuracy(fn)
    out = capsys.readouterr().out
    assert "[try again] token_accuracy" in out and hint in out, out


# --- exact match ----------------------------------------------------------------


def exact_match_vectorised(pred, target):
    return ((pred == target) | (target == PAD)).all(dim=1).float().mean().item()


def exact_match_loops(pred, target):
    good = 0
    for p_row, t_row in zip(pred.tolist(), target.tolist()):
        good += all(p == t for p, t in zip(p_row, t_row) if t != PAD)
    return good / len(pred)


def exact_match_prefix_before_pred_eos(pred, target):
    # compares only the tokens before the prediction's own <eos>: a model that stops early passes
    good = 0
    for p_row, t_row in zip(pred.tolist(), target.tolist()):
        stop = p_row.index(EOS) if EOS in p_row else len(p_row)
        good += p_row[:stop] == t_row[:stop]
    return good / len(pred)


WRONG_EXACT_MATCH = {
    "token accuracy instead": (token_accuracy_vectorised, "that is the token accuracy"),
    "padding compared": (lambda p, t: (p == t).all(dim=1).float().mean().item(), "padding positions"),
    "padding compared, loops": (lambda p, t: sum(r == s for r, s in zip(p.tolist(), t.tolist())) / len(p), "padding positions"),
    "<eos> ignored": (lambda p, t: ((p == t) | (t <= EOS)).all(dim=1).float().mean().item(), "<eos> position"),
    "prefix before the predicted <eos>": (exact_match_prefix_before_pred_eos, "before the prediction's own <eos>"),
    "any instead of all": (lambda p, t: ((p == t) & (t != PAD)).any(dim=1).float().mean().item(), "any()"),
    "count, not fraction": (lambda p, t: int(((p == t) | (t == PAD)).all(dim=1).sum()), "more than 1"),
    "percentage": (lambda p, t: 100 * exact_match_vectorised(p, t), "percentage"),
    "one bool per sequence": (lambda p, t: ((p == t) | (t == PAD)).all(dim=1), "one number"),
}


@pytest.mark.parametrize("fn", [exact_match_vectorised, exact_match_loops])
def test_exact_match_correct_answers_pass(fn, capsys):
    assert check_exact_match(fn).status == "correct"
    assert "[correct]" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(WRONG_EXACT_MATCH))
def test_exact_match_wrong_answers_get_specific_hints(name, capsys):
    fn, hint = WRONG_EXACT_MATCH[name]
    assert not check_exact_match(fn)
    out = capsys.readouterr().out
    assert "[try again] exact_match" in out and hint in out, out


# --- accuracy by length -----------------------------------------------------------


def by_length_vectorised(pred, target, src_lengths):
    return {int(n): token_accuracy_vectorised(pred[src_lengths == n], target[src_lengths == n]) for n in src_lengths.unique()}


def by_length_loops(pred, target, src_lengths):
    right, total = {}, {}
    for p_row, t_row, n in zip(pred.tolist(), target.tolist(), src_lengths.tolist()):
        for p, t in zip(p_row, t_row):
            if t != PAD:
                total[n] = total.get(n, 0) + 1
                right[n] = right.get(n, 0) + (p == t)
    return {n: right[n] / total[n] for n in sorted(total)}


def _range_keys(pred, target, lengths, stop_offset, nan=True):
    out = {}
    for n in range(int(lengths.min()), int(lengths.max()) + stop_offset):
        rows = lengths == n
        real = target[rows] != PAD
        right = ((pred[rows] == target[rows]) & real).sum()
        out[n] = (right / real.sum()).item() if nan else right.item() / real.sum().item()
    return out


WRONG_BY_LENGTH = {
    "tensor keys": (
        lambda p, t, n: {k: token_accuracy_vectorised(p[n == k], t[n == k]) for k in n.unique()},
        "keys are tensors",
    ),
    "target length (with <eos>) as key": (
        lambda p, t, n: by_length_vectorised(p, t, (t != PAD).sum(1)),
        "one too large",
    ),
    "lengths that do not occur (NaN)": (lambda p, t, n: _range_keys(p, t, n, 1), "do not occur"),
    "range misses the longest": (lambda p, t, n: _range_keys(p, t, n, 0), "range stops before its end"),
    "division by zero on an empty length": (lambda p, t, n: _range_keys(p, t, n, 1, nan=False), "division by zero"),
    "bucketed by predicted length": (
        lambda p, t, n: by_length_vectorised(p, t, (p != PAD).sum(1) - 1),
        "not the source lengths",
    ),
    "padding counted": (
        lambda p, t, n: {int(k): (p[n == k] == t[n == k]).float().mean().item() for k in n.unique()},
        "padding positions",
    ),
    "exact match per length": (
        lambda p, t, n: {int(k): exact_match_vectorised(p[n == k], t[n == k]) for k in n.unique()},
        "exact-sequence",
    ),
    "<eos> left out": (
        lambda p, t, n: {
            int(k): ((p[n == k] == t[n == k]) & (t[n == k] > EOS)).sum().item() / (t[n == k] > EOS).sum().item()
            for k in n.unique()
        },
        "<eos>",
    ),
    "whole-batch accuracy for every length": (
        lambda p, t, n: {int(k): token_accuracy_vectorised(p, t) for k in n.unique()},
        "whole batch",
    ),
    "list instead of dict": (lambda p, t, n: list(by_length_vectorised(p, t, n).values()), "return a dict"),
    "float keys": (lambda p, t, n: {float(k): v for k, v in by_length_vectorised(p, t, n).items()}, "as ints"),
}


@pytest.mark.parametrize("fn", [by_length_vectorised, by_length_loops])
def test_accuracy_by_length_correct_answers_pass(fn, capsys):
    assert check_accuracy_by_length(fn).status == "correct"
    assert "[correct]" in capsys.readouterr().out


def test_accuracy_by_length_consecutive_lengths_are_not_taken_for_a_range(capsys):
    # Seed 633359559 draws a batch with source lengths [6, 7, 8]: right keys that merely look like a range.
    assert check_accuracy_by_length(by_length_loops, seed=633359559).status == "correct"
    assert all(check_accuracy_by_length(by_length_loops, seed=s) for s in range(20))


@pytest.mark.parametrize("name", sorted(WRONG_BY_LENGTH))
def test_accuracy_by_length_wrong_answers_get_specific_hints(name, capsys):
    fn, hint = WRONG_BY_LENGTH[name]
    assert not check_accuracy_by_length(fn)
    out = capsys.readouterr().out
    assert "[try again] accuracy_by_length" in out and hint in out, out


# --- stubs and crashes --------------------------------------------------------------


@pytest.mark.parametrize("checker", [check_token_accuracy, check_exact_match, check_accuracy_by_length])
def test_stub_is_not_implemented_yet(checker, capsys):
    assert not checker(stub)
    out = capsys.readouterr().out
    assert "not implemented yet" in out and "Traceback" not in out


@pytest.mark.parametrize("checker", [check_token_accuracy, check_exact_match, check_accuracy_by_length])
def test_a_crash_is_reported_without_traceback(checker, capsys):
    def crashes(*args):
        return args[0].float().mean(dim=5)

    assert not checker(crashes)
    out = capsys.readouterr().out
    assert "raised IndexError" in out and "Traceback" not in out


def test_bank_sizes():
    # the counts quoted in the report; a shrinking bank should be a deliberate change
    assert (len(WRONG_TOKEN_ACCURACY), len(WRONG_EXACT_MATCH), len(WRONG_BY_LENGTH)) == (12, 9, 12)
