"""Checker for lesson 01 (scaled dot-product attention): ``qkv_head``, one self-attention head with
learned projections, on hidden random cases (one token, d_k != d_v, a batch, 50 tokens)."""

from __future__ import annotations

import torch

from .compare import ALLCLOSE, Answers, call_unchanged, close, expect_like, largest_difference
from .registry import register
from .report import Hint, failing_case, generator, kind_of

NOTEBOOK = "01_scaled_dot_product_attention"


def _reference(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    weights = torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, dim=-1)
    return weights @ V, weights


def _weight_mistakes(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    raw = Q @ K.transpose(-2, -1)
    d, d_k = X.shape[-1], Q.shape[-1]

    def soft(s):
        return torch.softmax(s, dim=-1)

    return [
        ("no scaling: divide the scores Q K^T by sqrt(d_k) before the softmax.", lambda: soft(raw)),
        ("divided the scores by d_k: the scale is sqrt(d_k).", lambda: soft(raw / d_k)),
        ("queries and keys swapped: the scores are Q K^T (rows = queries), here the result is K Q^T.",
         lambda: soft(K @ Q.transpose(-2, -1) / d_k**0.5)),
        ("softmax over the wrong axis: use dim=-1 (over the keys) so that each query's row sums to 1.",
         lambda: torch.softmax(raw / d_k**0.5, dim=-2)),
        ("d_model", f"scaled by sqrt(d_model) = sqrt({d}): the scale is sqrt(d_k), the width of a query after the "
         f"projection (here {d_k}).", lambda: soft(raw / d**0.5)),
        ("keys and values swapped: the scores use K = X W_K, the output averages V = X W_V.",
         (lambda: soft(Q @ V.transpose(-2, -1) / d_k**0.5)) if W_k.shape == W_v.shape else None),
    ]


def _output_mistakes(X, W_q, W_k, W_v, weights):
    return [
        ("the output averages the keys: output = weights @ V with V = X @ W_v.",
         (lambda: weights @ (X @ W_k)) if W_k.shape == W_v.shape else None),
        ("the output averages X itself: project the values first, V = X @ W_v.",
         (lambda: weights @ X) if X.shape[-1] == W_v.shape[-1] else None),
    ]


def _run_case(fn, X, W_q, W_k, W_v, where: str):
    result = call_unchanged(fn, X, W_q, W_k, W_v, names=("X", "W_q", "W_k", "W_v"), case=where,
                            tip="compute a new tensor instead (no X /= ..., no in-place operations)")
    if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Hint(f"return a pair (output, weights), got {kind_of(result)}.")
    out = expect_like(result[0], X, "output (the first thing you return)", why=ALLCLOSE)
    weights = expect_like(result[1], X, "weights (the second thing you return)", why=ALLCLOSE)
    n, d_v = X.shape[-2], W_v.shape[-1]
    w_shape, o_shape = (*X.shape[:-1], n), (*X.shape[:-1], d_v)
    if tuple(weights.shape) != w_shape:
        if tuple(weights.shape) == o_shape and tuple(out.shape) == w_shape:
            raise Hint("output and weights are swapped: return (output, weights).")
        raise Hint(f"the weights should have shape {w_shape} (n, n): one row per token, one column per token; "
                   f"got {tuple(weights.shape)}. Project with X @ W (not W @ X or X @ W.T).")
    if tuple(out.shape) != o_shape:
        raise Hint(f"the output should have shape {o_shape} (n, d_v), got {tuple(out.shape)}.")
    return out, weights


def _cases(g: torch.Generator):
    # 6 tokens, d = 8 -> d_k = 3, d_v = 5 first (no two sizes coincide); then d = 4 -> d_k = d_v = 2,
    # one token, a large case, and a batch of 2 sequences X (B, n, d) with shared projections.
    for n, d, d_k, d_v, batch in [(6, 8, 3, 5, ()), (3, 4, 2, 2, ()), (1, 4, 2, 2, ()), (50, 64, 16, 16, ()),
                                  (5, 6, 3, 3, (2,))]:
        X = torch.randn(*batch, n, d, generator=g)
        W_q, W_k = torch.randn(d, d_k, generator=g) / d**0.5, torch.randn(d, d_k, generator=g) / d**0.5
        yield X, W_q, W_k, torch.randn(d, d_v, generator=g) / d**0.5


@register("qkv_head")
def check_qkv_head(fn, seed: int) -> None:
    """Check ``fn(X, W_q, W_k, W_v) -> (output, weights)``: one self-attention head with learned projections.

    ``X`` is ``(n, d)`` or ``(B, n, d)``; ``W_q``, ``W_k`` are ``(d, d_k)``; ``W_v`` is ``(d, d_v)``.
    """
    weights = Answers(close, lambda c: "the weights differ from softmax((X W_q)(X W_k)^T / sqrt(d_k)) (largest "
                      f"difference {largest_difference(c.got, c.expected):.3g}).")
    outputs = Answers(close, lambda c: "the weights are right but the output is not: output = weights @ (X @ W_v).")
    for X, W_q, W_k, W_v in _cases(generator(seed)):
        where = f"X {tuple(X.shape)}, W_q {tuple(W_q.shape)}, W_k {tuple(W_k.shape)}, W_v {tuple(W_v.shape)}"
        with failing_case(where):
            out, w = _run_case(fn, X, W_q, W_k, W_v, where)
        ref_out, ref_w = _reference(X, W_q, W_k, W_v)
        weights.add(where, w, ref_w, lambda a=(X, W_q, W_k, W_v): _weight_mistakes(*a))
        outputs.add(where, out, ref_out, lambda a=(X, W_q, W_k, W_v, ref_w): _output_mistakes(*a))
    weights.verdict()
    outputs.verdict()
