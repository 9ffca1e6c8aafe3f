"""The checker of lesson 01's qkv_head: every known-wrong answer is rejected with the hint
that names it, and several correct answers pass."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_utils.helpers.checkers import check_qkv_head


def _run(check, fn, capsys):
    ok = check(fn)
    return ok, capsys.readouterr().out


def qkv_matmul(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    w = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return w @ V, w


def qkv_sdpa(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = torch.einsum("...id,...jd->...ij", Q, K) / Q.shape[-1] ** 0.5
    w = F.softmax(scores, dim=-1)
    return torch.einsum("...ij,...jd->...id", w, V), w


def qkv_numpy_style(X, W_q, W_k, W_v):
    Q, K, V = torch.matmul(X, W_q), torch.matmul(X, W_k), torch.matmul(X, W_v)
    s = Q @ K.mT * float(Q.shape[-1]) ** -0.5
    w = (s - s.amax(-1, keepdim=True)).exp()
    w = w / w.sum(-1, keepdim=True)
    return [w @ V, w]


@pytest.mark.parametrize("fn", [qkv_matmul, qkv_sdpa, qkv_numpy_style])
def test_qkv_head_accepts_correct_answers(fn, capsys):
    ok, out = _run(check_qkv_head, fn, capsys)
    assert ok, out
    assert "[correct]" in out


def _qkv_wrong(kind):
    def fn(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        d_k = Q.shape[-1]
        scores = Q @ K.transpose(-2, -1)
        if kind == "no_scale":
            w = scores.softmax(-1)
        elif kind == "by_d":
            w = (scores / d_k).softmax(-1)
        elif kind == "swap_qk":
            w = (K @ Q.transpose(-2, -1) / d_k**0.5).softmax(-1)
        elif kind == "dim":
            w = (scores / d_k**0.5).softmax(-2)
        elif kind == "d_model":
            w = (scores / X.shape[-1] ** 0.5).softmax(-1)
        else:
            w = (scores / d_k**0.5).softmax(-1)
        if kind == "avg_x":
            return w @ X if X.shape[-1] == W_v.shape[-1] else w @ V + 1
        if kind == "swapped_pair":
            return w, w @ V
        if kind == "tuple1":
            return w @ V
        return w @ V, w
    return fn


@pytest.mark.parametrize("kind, needle", [
    ("no_scale", "no scaling"),
    ("by_d", "divided the scores by d_k"),
    ("swap_qk", "queries and keys swapped"),
    ("dim", "wrong axis"),
    ("d_model", "sqrt(d_model)"),
    ("avg_x", "output"),
    ("swapped_pair", "swapped"),
    ("tuple1", "return a pair"),
])
def test_qkv_head_rejects_known_mistakes(kind, needle, capsys):
    ok, out = _run(check_qkv_head, _qkv_wrong(kind), capsys)
    assert not ok
    assert needle in out, out


def test_qkv_head_transposed_projection_and_stub(capsys):
    ok, out = _run(check_qkv_head, lambda X, W_q, W_k, W_v: qkv_matmul(X, W_q.T.T, W_k, W_v)[::-1], capsys)
    assert not ok
    ok, out = _run(check_qkv_head, lambda X, *W: (_ for _ in ()).throw(NotImplementedError()), capsys)
    assert not ok and "not implemented yet" in out
