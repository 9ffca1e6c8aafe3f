"""The checker of exercise 16's online_update: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import pytest
import torch
from checker_testing import accepted as _accepted
from checker_testing import rejected as _rejected
from checker_testing import stub as _stub
from checker_testing import verdicts as _verdicts

from course_utils.helpers.checkers import check_online_update

SEEDS = (0, 1)


def _update(m, l, acc, s, v):
    m_new = torch.maximum(m, s.amax(-1))
    p, c = torch.exp(s - m_new[..., None]), torch.exp(m - m_new)
    return m_new, l * c + p.sum(-1), acc * c[..., None] + p @ v


@pytest.mark.parametrize("bend, words", [(lambda m: m.long(), "dtype"), (lambda m: m + 0.5, "differs by up to")])
def test_16_a_wrong_m_of_the_right_shape_is_told_what_differs(bend, words, capsys):
    def wrong_m(*args):
        m, l, acc = _update(*args)
        return bend(m), l, acc

    for result in _verdicts(check_online_update, wrong_m):
        assert not result and words in result.hint and "got shape" not in result.hint, result.message


# ------------------------------------------------------------------ the first bank of right and wrong answers


def test_stub_is_not_implemented_online(capsys):
    assert not check_online_update(_stub)
    assert "not implemented yet" in capsys.readouterr().out


def update_plain(m, l, acc, s, v):
    m_new = torch.maximum(m, s.amax(dim=-1))
    p = torch.exp(s - m_new.unsqueeze(-1))
    c = torch.exp(m - m_new)
    return m_new, c * l + p.sum(-1), c.unsqueeze(-1) * acc + p @ v


def update_where(m, l, acc, s, v):
    block_max = s.max(dim=-1).values
    m_new = torch.where(block_max > m, block_max, m)
    p = (s - m_new[..., None]).exp()
    c = (m - m_new).exp()
    return m_new, l * c + p.sum(dim=-1), acc * c[..., None] + torch.einsum("...nb,...bd->...nd", p, v)


def update_double(m, l, acc, s, v):  # in float64, cast back: still correct
    out = update_plain(m.double(), l.double(), acc.double(), s.double(), v.double())
    return tuple(t.float() for t in out)


def _update_variant(kind):
    def fn(m, l, acc, s, v):
        m_new = torch.maximum(m, s.amax(-1))
        p, c = torch.exp(s - m_new[..., None]), torch.exp(m - m_new)
        if kind == "no rescale l":
            return m_new, l + p.sum(-1), acc * c[..., None] + p @ v
        if kind == "no rescale acc":
            return m_new, l * c + p.sum(-1), acc + p @ v
        if kind == "inverted":
            return m_new, l / c + p.sum(-1), acc / c[..., None] + p @ v
        if kind == "no max":
            return m_new, l + s.exp().sum(-1), acc + s.exp() @ v
        if kind == "block max":
            bm = s.amax(-1)
            p2, c2 = torch.exp(s - bm[..., None]), torch.exp(m - bm)
            return bm, l * c2 + p2.sum(-1), acc * c2[..., None] + p2 @ v
        if kind == "m not updated":
            return m, l * c + p.sum(-1), acc * c[..., None] + p @ v
        if kind == "normalised acc":
            l_new = l * c + p.sum(-1)
            return m_new, l_new, (acc * c[..., None] + p @ v) / l_new[..., None]
        if kind == "max over queries":
            return torch.maximum(m, s.amax(-2)), l, acc
        if kind == "in place":
            m.copy_(m_new)
            return m_new, l * c + p.sum(-1), acc * c[..., None] + p @ v
        raise AssertionError(kind)
    return fn


WRONG_UPDATES = {
    "no rescale l": "old sum l was not rescaled",
    "no rescale acc": "accumulator acc was not rescaled",
    "inverted": "inverted",
    "no max": "without subtracting the maximum",
    "block max": "this block only",
    "m not updated": "m was not updated",
    "normalised acc": "unnormalised",
    "max over queries": "running maximum",
    "in place": "in place",
}


@pytest.mark.parametrize("fn", [update_plain, update_where, update_double], ids=["plain", "where", "double"])
def test_online_update_accepts_correct_answers(capsys, fn):
    _accepted(capsys, check_online_update, fn)


@pytest.mark.parametrize("name", WRONG_UPDATES)
def test_online_update_rejects_mistakes(capsys, name):
    _rejected(capsys, check_online_update, _update_variant(name), WRONG_UPDATES[name])


def test_checker_bank_is_large_enough_online():
    assert len(WRONG_UPDATES) >= 8
