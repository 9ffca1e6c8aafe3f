"""The checker of lesson 04's peak_offsets: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import math

import numpy as np
import pytest
import torch
from checker_testing import all_wrong as _all_wrong

from course_utils.helpers.checkers import check_peak_offsets
from course_utils.helpers.lesson_plots import anti_diagonal_offsets

SEEDS = (0, 1)


@pytest.mark.parametrize("value, shown", [(float("nan"), "got nan"), (float("inf"), "got inf"), (-math.inf, "got -inf")])
def test_04_nan_and_inf_offsets_are_not_whole_numbers(value, shown, capsys):
    _all_wrong(check_peak_offsets, lambda w, L: torch.full((int(L.sum()),), value), "an offset is a whole number")
    _all_wrong(check_peak_offsets, lambda w, L: [value] * int(L.sum()), shown)


# ------------------------------------------------------------------ the first bank of right and wrong answers


def offsets_loop(weights, lengths):
    out = []
    for b, n in enumerate(lengths.tolist()):
        for t in range(n):
            out.append(int(weights[b, t, :n].argmax()) - (n - 1 - t))
    return out


def offsets_vectorised(weights, lengths):
    n, t = lengths[:, None], torch.arange(weights.shape[1])
    real = torch.arange(weights.shape[2]) < n[..., None]
    peak = weights.masked_fill(~real, 0.0).argmax(-1)  # (B, T_out)
    return (peak - (n - 1 - t))[t < n]


def offsets_last_of_ties_per_example(weights, lengths):  # ties broken the other way; one tensor per example
    out = []
    for b, n in enumerate(lengths.tolist()):
        last = n - 1 - weights[b, :n, :n].flip(-1).argmax(-1)
        out.append(last - (n - 1 - torch.arange(n)))
    return out


def offsets_numpy(weights, lengths):
    w, out = weights.numpy(), []
    for b, n in enumerate(lengths.tolist()):
        out.extend(np.argmax(w[b, :n, :n], axis=1) - (n - 1 - np.arange(n)))
    return np.array(out, dtype=float)


@pytest.mark.parametrize("fn", [offsets_loop, offsets_vectorised, offsets_last_of_ties_per_example, offsets_numpy])
def test_peak_offsets_accepts_correct_answers_on_10_hidden_draws(fn, capsys):
    wrong = [seed for seed in range(10) if not check_peak_offsets(fn, seed=seed)]
    assert not wrong, (wrong[:5], capsys.readouterr().out[:2000])


def _offsets_with(peak, mirror=lambda n, t, T_in: n - 1 - t, steps=lambda n: range(n)):
    def fn(weights, lengths):
        return [peak(weights, b, t, n) - mirror(n, t, weights.shape[2])
                for b, n in enumerate(lengths.tolist()) for t in steps(n)]
    return fn


def _real_peak(w, b, t, n):
    return int(w[b, t, :n].argmax())


OFFSET_MISTAKES = {
    "1-based mirror n - t": (_offsets_with(_real_peak, lambda n, t, T: n - t), "1 too small"),
    "1-based peak, 0-based mirror": (_offsets_with(lambda w, b, t, n: _real_peak(w, b, t, n) + 1), "1 too large"),
    "mirror n + 1 - t": (_offsets_with(_real_peak, lambda n, t, T: n + 1 - t), "off by two"),
    "argmax over padded positions": (_offsets_with(lambda w, b, t, n: int(w[b, t].argmax())), "padded source position"),
    "padded width in the mirror": (_offsets_with(_real_peak, lambda n, t, T: T - 1 - t), "not the padded width"),
    "padded width and padded positions": (
        _offsets_with(lambda w, b, t, n: int(w[b, t].argmax()), lambda n, t, T: T - 1 - t), "skip the padded"),
    "argmax over output steps (real grid)": (_offsets_with(lambda w, b, t, n: int(w[b, :n, t].argmax())), "wrong axis"),
    "argmax over output steps (whole tensor)": (
        lambda w, L: [int(w.argmax(1)[b, t]) - (n - 1 - t) for b, n in enumerate(L.tolist()) for t in range(n)],
        "wrong axis"),
    "sign flipped": (_offsets_with(lambda w, b, t, n: -_real_peak(w, b, t, n), lambda n, t, T: -(n - 1 - t)),
                     "sign is flipped"),
    "<eos> step included": (_offsets_with(_real_peak, steps=lambda n: range(n + 1)), "<eos> step"),
    "the whole (B, T_out) grid": (lambda w, L: w.argmax(-1) - (L[:, None] - 1 - torch.arange(w.shape[1])),
                                  "padded (6, 11) grid"),
    "calls the course's version": (anti_diagonal_offsets, "course's own anti_diagonal_offsets"),
    "not whole numbers": (lambda w, L: [0.5] * int(L.sum()), "whole number"),
    "one number": (lambda w, L: 3, "1-D tensor or a list"),
    "changes its input": (lambda w, L: offsets_loop(w.masked_fill_(w > 1, 0.0), L), "in place"),
}


@pytest.mark.parametrize("name", OFFSET_MISTAKES)
def test_peak_offsets_names_each_known_mistake(name, capsys):
    fn, needle = OFFSET_MISTAKES[name]
    for seed in range(3):
        result = check_peak_offsets(fn, seed=seed)
        out = capsys.readouterr().out
        assert not result and out.startswith("[try again]"), out
        assert needle in out, (seed, out)


def test_peak_offsets_stub_and_a_plain_wrong_answer(capsys):
    def stub(weights, lengths):
        raise NotImplementedError("Your turn")

    assert check_peak_offsets(stub).status == "not done"
    assert "[not yet]" in capsys.readouterr().out
    result = check_peak_offsets(lambda w, L: [0] * int(L.sum()), seed=0)
    out = capsys.readouterr().out
    assert result.status == "wrong" and "at example" in out and "Failing case: weights" in out, out
