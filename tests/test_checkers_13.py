"""The checker of exploration 13's argmax_offset_share: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import numpy as np
import pytest
import torch
from checker_testing import all_are as _all
from checker_testing import all_wrong as _all_wrong
from checker_testing import results_over_seeds as _run
from checker_testing import verdict_and_output as _verdict

from course_utils.helpers import checkers
from course_utils.helpers.checkers import (
    check_argmax_offset_share,
    explore_longer_training,
)

SEEDS = (0, 1)


def _share(w, lengths, k):
    t = torch.arange(w.shape[1])
    steps = t < lengths[:, None]
    return ((w.argmax(-1) == lengths[:, None] - 1 - t + k) & steps).sum().item() / steps.sum().item()


@pytest.mark.parametrize("convert", [str, np.str_, lambda v: bool(v), lambda v: np.bool_(v), lambda v: [v]])
def test_13_a_number_as_a_string_or_bool_is_refused(convert, capsys):
    _all_wrong(check_argmax_offset_share, lambda w, n, k: convert(_share(w, n, k)), "one number")


# --------------------------------------------------------------------------- 13 argmax_offset_share


def argmax_over_the_source(w, lengths, offset):
    """The peak over the first n source positions only (a masked model puts no weight on padding)."""
    hits, steps = 0, 0
    for b, n in enumerate(lengths.tolist()):
        peak = w[b, :n, :n].argmax(-1)
        hits += int((peak == n - 1 - torch.arange(n) + offset).sum())
        steps += n
    return hits / steps


def test_argmax_offset_share_accepts_the_peak_over_the_first_n_sources(capsys):
    _all(_run(checkers.check_argmax_offset_share, argmax_over_the_source, capsys), "correct")


def test_argmax_offset_share_cases_put_no_weight_on_padding():
    for seed in range(5):
        for _, w, lengths in explore_longer_training._cases(seed):
            padded = torch.arange(w.shape[-1]) >= lengths[:, None, None]
            assert (w.masked_select(padded.expand_as(w)) == 0).all()


# ------------------------------------------------------------------ the first bank of right and wrong answers


def share_vectorised(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t < lengths[:, None]
    hit = weights.argmax(-1) == (lengths[:, None] - 1 - t + offset)
    return (hit & steps).sum() / steps.sum()  # a 0-d tensor: accepted


def share_loops(weights, lengths, offset):
    hits = total = 0
    for b, n in enumerate(lengths.tolist()):
        for t in range(n):
            total += 1
            hits += int(weights[b, t].argmax()) == n - 1 - t + offset
    return np.float64(hits / total)


@pytest.mark.parametrize("fn", [share_vectorised, share_loops])
def test_share_valid(capsys, fn):
    ok, out = _verdict(capsys, check_argmax_offset_share, fn)
    assert ok, out


def share_with_eos(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t <= lengths[:, None]
    hit = weights.argmax(-1) == (lengths[:, None] - 1 - t + offset)
    return float((hit & steps).sum() / steps.sum())


def share_all_rows(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    return float((weights.argmax(-1) == (lengths[:, None] - 1 - t + offset)).float().mean())


def share_per_sequence(weights, lengths, offset):
    shares = []
    for b, n in enumerate(lengths.tolist()):
        t = torch.arange(n)
        shares.append((weights[b, :n].argmax(-1) == n - 1 - t + offset).float().mean())
    return float(torch.stack(shares).mean())


def share_mirror_n_minus_t(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t < lengths[:, None]
    hit = weights.argmax(-1) == (lengths[:, None] - t + offset)  # m(t) taken as n - t
    return float((hit & steps).sum() / steps.sum())


@pytest.mark.parametrize("fn, hint", [
    (share_with_eos, "<eos>"),
    (share_all_rows, "padded"),
    (lambda w, n, k: share_vectorised(w, n, -k), "sign"),
    (lambda w, n, k: [0.5], "one number"),
    (share_per_sequence, "pool all token steps"),
    (share_mirror_n_minus_t, "one off"),
])
def test_share_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_argmax_offset_share, fn)
    assert not ok and hint in out, out
