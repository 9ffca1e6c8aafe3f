"""The checker of exploration 10's sparsemax_threshold: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch
from checker_testing import all_wrong as _all_wrong
from checker_testing import verdict_and_output as _verdict

from course_utils.core.sparse import sparsemax
from course_utils.helpers.checkers import check_sparsemax_threshold

SEEDS = (0, 1)


def test_10_a_nan_threshold_is_not_called_different_answers(capsys):
    _all_wrong(check_sparsemax_threshold, lambda z: torch.full((*z.shape[:-1], 1), float("nan"), dtype=z.dtype),
               "NaN", absent=("different answers",))


# ------------------------------------------------------------------ the first bank of right and wrong answers


def tau_sorting(z):
    z_sorted = z.sort(dim=-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cumsum = z_sorted.cumsum(-1)
    kept = (1 + k * z_sorted > cumsum).sum(-1, keepdim=True)
    return (cumsum.gather(-1, kept - 1) - 1) / kept


def tau_loop(z):
    # plain Python: try every k, keep the last one that satisfies the condition; returns (...,) without keepdim
    flat = z.reshape(-1, z.shape[-1]).tolist()
    out = []
    for row in flat:
        s = sorted(row, reverse=True)
        k = max(k for k in range(1, len(s) + 1) if 1 + k * s[k - 1] > sum(s[:k]))
        out.append((sum(s[:k]) - 1) / k)
    return torch.tensor(out, dtype=z.dtype).reshape(z.shape[:-1])


def tau_from_package(z):
    p = sparsemax(z)
    kept = p > 0
    return ((z * kept).sum(-1, keepdim=True) - 1) / kept.sum(-1, keepdim=True)


@pytest.mark.parametrize("fn", [tau_sorting, tau_loop, tau_from_package])
def test_tau_valid(capsys, fn):
    ok, out = _verdict(capsys, check_sparsemax_threshold, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda z: z.max(-1, keepdim=True).values - 1, "lower bound"),
    (lambda z: (z.sum(-1, keepdim=True) - 1) / z.shape[-1], "kept every key"),
    (lambda z: tau_sorting(z).squeeze(-1)[..., None, None], "shape"),
    (lambda z: tau_sorting(z) + 0.01, "sum to 1"),
])
def test_tau_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_sparsemax_threshold, fn)
    assert not ok and hint in out, out


def test_tau_not_implemented(capsys):
    def stub(z):
        raise NotImplementedError

    ok, out = _verdict(capsys, check_sparsemax_threshold, stub)
    assert not ok and "not implemented" in out
