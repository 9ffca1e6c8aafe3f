"""The checker of exploration 12's marker_beside: every known-wrong answer is rejected with the hint
that names it, and several correct answers pass."""

import pytest
import torch
from checker_testing import verdict_and_output as _verdict

from course_utils.helpers.checkers import check_marker_beside


def beside_shift(tokens, marker_id):
    m = tokens == marker_id
    out = torch.zeros_like(m)
    out[:, 1:] |= m[:, :-1]
    out[:, :-1] |= m[:, 1:]
    return out


def beside_pad(tokens, marker_id):
    m = torch.nn.functional.pad((tokens == marker_id).int(), (1, 1))
    return (m[:, :-2] + m[:, 2:]) > 0


def beside_loops(tokens, marker_id):
    B, n = tokens.shape
    rows = [[(i > 0 and tokens[b, i - 1] == marker_id) or (i < n - 1 and tokens[b, i + 1] == marker_id)
             for i in range(n)] for b in range(B)]
    return torch.tensor(rows, dtype=torch.bool).reshape(B, n)


@pytest.mark.parametrize("fn", [beside_shift, beside_pad, beside_loops])
def test_beside_valid(capsys, fn):
    ok, out = _verdict(capsys, check_marker_beside, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda t, m: beside_shift(t, m) | (t == m), "markers themselves"),
    (lambda t, m: torch.nn.functional.pad((t == m)[:, :-1], (1, 0)), "one side"),
    (lambda t, m: torch.roll(t == m, 1, 1) | torch.roll(t == m, -1, 1), "wraps around"),
    (lambda t, m: beside_shift(t, m)[:, :-1], "shape"),
])
def test_beside_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_marker_beside, fn)
    assert not ok and hint in out, out
