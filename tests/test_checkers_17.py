"""The checker of exercise 17's rope: every known-wrong answer is rejected with the hint
that names it, and several correct answers pass."""

import math

import pytest
import torch
from checker_testing import accepted as _accepted
from checker_testing import rejected as _rejected
from checker_testing import stub as _stub

from course_utils.helpers.checkers import check_rope


def test_stub_is_not_implemented_rope(capsys):
    assert not check_rope(_stub)
    assert "not implemented yet" in capsys.readouterr().out


def rope_complex(x, offset):
    d, T = x.shape[-1], x.shape[-2]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * freq
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).flatten(-2).to(x.dtype)


def rope_matrix(x, offset):
    d, T = x.shape[-1], x.shape[-2]
    out = torch.empty_like(x)
    for t in range(T):
        R = torch.zeros(d, d, dtype=x.dtype)
        for i in range(d // 2):
            a = (offset + t) * 10000 ** (-2 * i / d)
            R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        out[..., t, :] = x[..., t, :] @ R.T
    return out


def rope_pairs(x, offset):
    d = x.shape[-1]
    pos = torch.arange(offset, offset + x.shape[-2], dtype=x.dtype).unsqueeze(-1)
    theta = pos / 10000 ** (torch.arange(d // 2, dtype=x.dtype) * 2 / d)
    even, odd = x[..., ::2], x[..., 1::2]
    out = torch.zeros_like(x)
    out[..., ::2] = even * theta.cos() - odd * theta.sin()
    out[..., 1::2] = even * theta.sin() + odd * theta.cos()
    return out


def _rope_variant(kind):
    def fn(x, offset):
        d = x.shape[-1]
        pos = torch.arange(offset, offset + x.shape[-2], dtype=x.dtype)[:, None]
        i = torch.arange(d // 2, dtype=x.dtype)
        freq = 10000.0 ** (-2 * i / d)
        a, b = x[..., 0::2], x[..., 1::2]
        sign = 1.0
        if kind == "clockwise":
            sign = -1.0
        elif kind == "half":
            a, b = x[..., : d // 2], x[..., d // 2 :]
            ang = pos * freq
            return torch.cat([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], -1)
        elif kind == "freq i/d":
            freq = 10000.0 ** (-i / d)
        elif kind == "offset ignored":
            pos = pos - offset
        elif kind == "from one":
            pos = pos + 1
        elif kind == "one freq":
            freq = torch.ones_like(freq)
        elif kind == "identity":
            return x.clone()
        elif kind == "added":
            return x + torch.stack([torch.sin(pos * freq), torch.cos(pos * freq)], -1).flatten(-2)
        elif kind == "float32":
            return rope_pairs(x.float(), offset)
        elif kind == "in place":
            x.mul_(1.0000001)
            return rope_pairs(x, offset)
        elif kind == "swapped outputs":
            ang = pos * freq
            return torch.stack([a * ang.sin() + b * ang.cos(), a * ang.cos() - b * ang.sin()], -1).flatten(-2)
        ang = pos * freq
        return torch.stack([a * ang.cos() - sign * b * ang.sin(), sign * a * ang.sin() + b * ang.cos()], -1).flatten(-2)
    return fn


WRONG_ROPE = {
    "clockwise": "other direction",
    "half": "rotate half",
    "freq i/d": "-2i / d",
    "offset ignored": "offset ignored",
    "from one": "offset + 1",
    "one freq": "one frequency",
    "identity": "nothing was rotated",
    "added": "added",
    "float32": "dtype",
    "in place": "in place",
    "swapped outputs": "differs from the rotation",
}


@pytest.mark.parametrize("fn", [rope_complex, rope_matrix, rope_pairs], ids=["complex", "matrix", "pairs"])
def test_rope_accepts_correct_answers(capsys, fn):
    _accepted(capsys, check_rope, fn)


@pytest.mark.parametrize("name", WRONG_ROPE)
def test_rope_rejects_mistakes(capsys, name):
    _rejected(capsys, check_rope, _rope_variant(name), WRONG_ROPE[name])


def test_checker_bank_is_large_enough_rope():
    assert len(WRONG_ROPE) >= 10
