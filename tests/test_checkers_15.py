"""The checker of exercise 15's cached_attention: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""

import math

import pytest
import torch
import torch.nn.functional as F
from checker_testing import accepted as _accepted
from checker_testing import all_wrong as _all_wrong
from checker_testing import rejected as _rejected
from checker_testing import stub as _stub

from course_utils.core.attention import scaled_dot_product_attention
from course_utils.core.masks import causal_mask
from course_utils.helpers.checkers import check_cached_attention

SEEDS = (0, 1)


def _cached(q, k, v, kc, vc):
    K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
    t, s = kc.shape[-2], q.shape[-2]
    mask = torch.ones(s, t + s, dtype=torch.bool).tril(diagonal=t)
    return torch.softmax((q @ K.mT / q.shape[-1] ** 0.5).masked_fill(~mask, float("-inf")), -1) @ V, K, V


def test_15_a_float64_output_is_named_not_blamed_on_a_crash(capsys):
    _all_wrong(check_cached_attention, lambda *a: (_cached(*a)[0].double(), *_cached(*a)[1:]), "dtype torch.float64",
               absent=("your code raised", "bug in the checker"))


@pytest.mark.parametrize("size, words, other", [(lambda q, K, V: V.shape[-1], "sqrt(d_v", "number of keys"),
                                                (lambda q, K, V: K.shape[-2], "number of keys", "sqrt(d_v")])
def test_15_a_wrong_scale_is_named_by_the_size_it_used(size, words, other, capsys):
    def scaled(q, k, v, kc, vc):
        K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
        t, s = kc.shape[-2], q.shape[-2]
        mask = torch.ones(s, t + s, dtype=torch.bool).tril(diagonal=t)
        w = torch.softmax((q @ K.mT / size(q, K, V) ** 0.5).masked_fill(~mask, float("-inf")), -1)
        return w @ V, K, V

    _all_wrong(check_cached_attention, scaled, words, absent=(other,))


# ------------------------------------------------------------------ the first bank of right and wrong answers


def test_stub_is_not_implemented_cached(capsys):
    assert not check_cached_attention(_stub)
    assert "not implemented yet" in capsys.readouterr().out


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


def test_checker_bank_is_large_enough_cached():
    assert len(WRONG_CACHED) >= 10
