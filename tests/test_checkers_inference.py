"""Checkers of notebooks 15-17: each accepts several correct answers, says "not implemented yet" for
the stub, and rejects a bank of real mistakes with the hint that names the mistake."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_utils.core.masks import causal_mask
from course_utils.core.attention import scaled_dot_product_attention
from course_utils.helpers.checkers import check_cached_attention
from course_utils.helpers.checkers import check_online_update
from course_utils.helpers.checkers import check_rope


def _stub(*args):
    raise NotImplementedError("Your turn: replace this line with your code.")


def _rejected(capsys, checker, answer, phrase):
    assert not checker(answer)
    out = capsys.readouterr().out
    assert out.startswith("[try again]"), out
    assert phrase.lower() in out.lower(), out


def _accepted(capsys, checker, answer):
    assert checker(answer), capsys.readouterr().out
    assert capsys.readouterr().out.startswith("[correct]")


@pytest.mark.parametrize("checker", [check_cached_attention, check_online_update, check_rope])
def test_stub_is_not_implemented(capsys, checker):
    assert not checker(_stub)
    assert "not implemented yet" in capsys.readouterr().out


# --- 15: cached attention ------------------------------------------------------------------


def cached_course(q, k, v, kc, vc):
    K, V = torch.cat([kc, k], dim=-2), torch.cat([vc, v], dim=-2)
    out, _ = scaled_dot_product_attention(q, K, V, causal_mask(K.shape[-2])[-q.shape[-2]:])
    return out, K, V


def cached_sdpa(q, k, v, kc, vc):
    K, V = torch.cat((kc, k), 2), torch.cat((vc, v), 2)
    t, s = kc.shape[2], q.shape[2]
    mask = torch.ones(s, t + s, dtype=torch.bool).tril(diagonal=t)
    return F.scaled_dot_product_attention(q, K, V, attn_mask=mask), K, V


def cached_loop(q, k, v, kc, vc):
    K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
    t = kc.shape[-2]
    rows = []
    for i in range(q.shape[-2]):
        keys, values = K[..., : t + i + 1, :], V[..., : t + i + 1, :]
        w = torch.softmax(q[..., i : i + 1, :] @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        rows.append(w @ values)
    return torch.cat(rows, -2), K, V


def _cached_with_mask(mask_fn, scale=None, dim=-1):
    def fn(q, k, v, kc, vc):
        K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
        t, s = kc.shape[-2], q.shape[-2]
        scores = q @ K.transpose(-2, -1) / (scale(q, K) if scale else math.sqrt(q.shape[-1]))
        mask = mask_fn(t, s)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=dim) @ V, K, V
    return fn


WRONG_CACHED = {
    "no mask": (_cached_with_mask(lambda t, s: None), "no mask"),
    "top-left mask": (_cached_with_mask(lambda t, s: torch.ones(s, t + s, dtype=torch.bool).tril()), "top-left"),
    "is_causal=True": (lambda q, k, v, kc, vc: (F.scaled_dot_product_attention(q, torch.cat([kc, k], -2), torch.cat([vc, v], -2), is_causal=True),
                                                torch.cat([kc, k], -2), torch.cat([vc, v], -2)), "top-left"),
    "own key blocked": (_cached_with_mask(lambda t, s: torch.arange(t + s) < torch.arange(t, t + s)[:, None]), "its own key"),
    "no scaling": (_cached_with_mask(lambda t, s: causal_mask(t + s)[-s:], scale=lambda q, K: 1.0), "no scaling"),
    "scale by keys": (_cached_with_mask(lambda t, s: causal_mask(t + s)[-s:], scale=lambda q, K: math.sqrt(K.shape[-2])), "sqrt(the number of keys t + s)"),
    "softmax over queries": (_cached_with_mask(lambda t, s: causal_mask(t + s)[-s:], dim=-2), "wrong axis"),
    "only new keys": (lambda q, k, v, kc, vc: (cached_course(q, k, v, kc[..., :0, :], vc[..., :0, :])[0], torch.cat([kc, k], -2), torch.cat([vc, v], -2)), "only to the new keys"),
    "new before cache": (lambda q, k, v, kc, vc: (cached_course(q, k, v, kc, vc)[0], torch.cat([k, kc], -2), torch.cat([v, vc], -2)), "before the cached"),
    "old cache returned": (lambda q, k, v, kc, vc: (cached_course(q, k, v, kc, vc)[0], kc, vc), "old cache"),
    "cat on features": (lambda q, k, v, kc, vc: (cached_course(q, k, v, kc, vc)[0], torch.cat([kc, k], -1), torch.cat([vc, v], -1)), "length axis, dim=-2"),
    "returns only output": (lambda q, k, v, kc, vc: cached_course(q, k, v, kc, vc)[0], "three things"),
    "in place": (lambda q, k, v, kc, vc: cached_course(q.div_(1.5), k, v, kc, vc), "in place"),
}


@pytest.mark.parametrize("fn", [cached_course, cached_sdpa, cached_loop], ids=["course", "sdpa", "loop"])
def test_cached_attention_accepts_correct_answers(capsys, fn):
    _accepted(capsys, check_cached_attention, fn)


@pytest.mark.parametrize("name", WRONG_CACHED)
def test_cached_attention_rejects_mistakes(capsys, name):
    fn, phrase = WRONG_CACHED[name]
    _rejected(capsys, check_cached_attention, fn, phrase)


# --- 16: one block of the online softmax -----------------------------------------------------


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


# --- 17: RoPE --------------------------------------------------------------------------------


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


def test_checker_banks_are_large_enough():
    assert len(WRONG_CACHED) >= 10 and len(WRONG_UPDATES) >= 8 and len(WRONG_ROPE) >= 10
