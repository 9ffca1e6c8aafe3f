"""The checker of lesson 09's decode_position: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import functools
import math

import numpy as np
import pytest
import torch
from checker_testing import all_wrong as _all_wrong
from checker_testing import passes_every_draw as _passes_every_draw
from checker_testing import stub_is_not_yet as _stub_is_not_yet
from checker_testing import wrong as _wrong

from course_utils.helpers.checkers import check_decode_position

SEEDS = (0, 1)


def test_09_atan_of_sine_over_cosine_is_named_as_such(capsys):
    def atan(pe):
        d = pe.shape[-1]
        return torch.round(torch.atan(pe[..., -2] / pe[..., -1]) * 10000.0 ** ((d - 2) / d))

    _all_wrong(check_decode_position, atan, "atan(sine / cosine)", absent=("wrap around", "pair 1"))


# ------------------------------------------------------------------ the first bank of right and wrong answers


TEN_SEEDS = range(10)  # every hidden draw differs; 10 prove what 100 did (each draw covers every size and mask)


def _slowest_angle(pe):
    d = pe.shape[-1]
    i = d // 2 - 1
    return torch.atan2(pe[..., 2 * i], pe[..., 2 * i + 1]), 10000.0 ** (-2 * i / d)


def decode_atan2(pe):
    angle, w = _slowest_angle(pe)
    return torch.round(angle / w).long()


def decode_numpy(pe):  # a NumPy array of floats with whole values: accepted
    pe = pe.double().numpy()
    d = pe.shape[-1]
    return np.rint(np.arctan2(pe[..., -2], pe[..., -1]) * 10000.0 ** ((d - 2) / d))


def _acos(pe):  # right in exact arithmetic, but float32 cos of a small angle rounds to 1
    d = pe.shape[-1]
    return torch.round(torch.acos(pe[..., -1].clamp(-1, 1)) / math.exp(-(d - 2) / d * math.log(10000)))


@functools.lru_cache(maxsize=None)
def _position_table(d: int) -> torch.Tensor:  # (5000, d): the encoding of every position below 5000
    p = torch.arange(5000, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack([torch.sin(p * w), torch.cos(p * w)], -1).reshape(5000, d)


def decode_lookup(pe):  # the nearest row of a table of every position below 5000
    d = pe.shape[-1]
    table = _position_table(d)
    flat = pe.reshape(-1, d).double()
    # every row of the table has the same length, so the nearest row is the one with the largest dot product
    return (flat @ table.T).argmax(-1).reshape(pe.shape[:-1])


@pytest.mark.parametrize("answer, seeds", [(decode_atan2, TEN_SEEDS), (decode_numpy, TEN_SEEDS), (decode_lookup, TEN_SEEDS[:1])])
def test_decode_position_right_answers_pass_every_draw(answer, seeds, capsys):
    # the lookup compares 1,000 encodings with 5,000 table rows in every draw: one draw of it
    _passes_every_draw(check_decode_position, answer, seeds, capsys)


def test_decode_position_stub_is_not_yet(capsys):
    _stub_is_not_yet(check_decode_position, "decode_position", capsys)


def _fast_pair(pe):
    return torch.round(torch.atan2(pe[..., 0], pe[..., 1])).long()


def _middle_pair(pe):
    d = pe.shape[-1]
    i = d // 4
    angle = torch.remainder(torch.atan2(pe[..., 2 * i], pe[..., 2 * i + 1]), 2 * math.pi)
    return torch.round(angle / 10000.0 ** (-2 * i / d))


def _swapped(pe):
    d = pe.shape[-1]
    return torch.round(torch.atan2(pe[..., -1], pe[..., -2]) / 10000.0 ** (-(d - 2) / d))


def _asin(pe):
    d = pe.shape[-1]
    return torch.round(torch.asin(pe[..., -2]) / 10000.0 ** (-(d - 2) / d))


def _dimension_index(pe):  # i taken as the dimension index d - 2, not the pair index d/2 - 1
    angle, _ = _slowest_angle(pe)
    d = pe.shape[-1]
    return torch.round(angle / 10000.0 ** (-2 * (d - 2) / d))


def _unrounded(pe):
    angle, w = _slowest_angle(pe)
    return angle / w + 0.01


def _floor(pe):
    angle, w = _slowest_angle(pe.float())
    return (angle / w).floor().long()


WRONG_DECODE = {
    "the fast pair 0, which wraps every 2 pi positions": (_fast_pair, "pair 0"),
    "a middle pair, which wraps too": (_middle_pair, "wrap around"),
    "sin and cos swapped in atan2": (_swapped, "sin and cos swapped"),
    "asin of the sine": (_asin, "asin only returns angles up to pi/2"),
    "acos of the cosine": (_acos, "acos of the cosine loses small angles"),
    "the frequency of the dimension index": (_dimension_index, "check the frequency"),
    "not rounded": (_unrounded, "round to the nearest whole position"),
    "floor instead of round": (_floor, "cut 41.9997 down to 41"),
    "keepdim": (lambda pe: decode_atan2(pe)[..., None], "not keepdim"),
    "a list of lists of bools": (lambda pe: decode_atan2(pe) > 0, "whole numbers"),
    "right below 100 only": (lambda pe: decode_atan2(pe).clamp(max=99), "came back as 99"),
}


@pytest.mark.parametrize("name", WRONG_DECODE)
def test_decode_position_known_mistakes_get_their_hint(name, capsys):
    answer, phrase = WRONG_DECODE[name]
    for seed in (0, 1):
        _wrong(capsys, check_decode_position(answer, seed=seed), phrase)


def test_decode_position_in_place_change_is_named(capsys):
    def in_place(pe):
        result = decode_atan2(pe)
        pe.zero_()
        return result

    _wrong(capsys, check_decode_position(in_place, seed=0), "changed its input pe in place")
