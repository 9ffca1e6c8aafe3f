"""Checkers for exercise 06: cross-attention shapes and the strongest source (the layer: ``cross_layer``)."""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np
import torch

from .cross_layer import check_cross_attention
from .report import Hint, call, expect_tensor, failing_case, generator, report

__all__ = ["check_cross_attention", "check_cross_attention_shapes", "check_strongest_source"]


# Three tasks: predict the shapes, complete a CrossAttention layer, and find the
# encoder position each decoder position reads most. When an answer is wrong,
# the checker compares it with a bank of known mistakes and names the one it matches.

_CROSS_SHAPE_CASES = ((2, 3, 5, 24, 4), (3, 7, 4, 16, 2), (1, 6, 9, 10, 5))  # (B, n, m, d_model, num_heads)


def check_cross_attention_shapes(fn: Callable, *, seed: int | None = None):
    """Task: ``fn(B, n, m, d_model, num_heads)`` returns ``(output_shape, weights_shape)`` of
    multi-head cross-attention with n decoder positions (queries) and m encoder positions (keys, values).
    Checked on 3 fixed and 2 hidden random size sets (all five sizes different, n and m up to 40)."""
    return report("cross-attention shapes", lambda s: _check_cross_shapes(fn, s), seed)


def _random_shape_cases(seed: int) -> list[tuple[int, int, int, int, int]]:
    g, cases = generator(seed), []
    for _ in range(2):
        B, h, k = (int(v) + 1 for v in torch.randperm(7, generator=g)[:3])  # 1..7, different
        n, m = (int(v) + 9 for v in torch.randperm(32, generator=g)[:2])  # 9..40, n != m
        d = h * (k + 8)  # d_model divisible by h, and different from n, m, B, h
        cases.append((B, n, m, d, h))
    return cases


def _as_int(size) -> int:
    if isinstance(size, (bool, np.bool_)):
        raise TypeError
    if isinstance(size, torch.Tensor):
        if size.numel() != 1 or size.dtype.is_floating_point or size.dtype == torch.bool:
            raise TypeError
        return int(size.item())
    return operator.index(size)  # Python and NumPy integers; floats raise TypeError


def _as_shape(value, what: str) -> tuple[int, ...]:
    """A shape from a tuple, list or torch.Size of integers (NumPy and 0-d torch integers included)."""
    try:
        return tuple(_as_int(size) for size in value)
    except (TypeError, ValueError):
        raise Hint(f"{what} should be a tuple of ints such as (2, 3), got {value!r}.") from None


def _check_cross_shapes(fn: Callable, seed: int) -> None:
    solved = []
    for B, n, m, d, h in (*_CROSS_SHAPE_CASES, *_random_shape_cases(seed)):
        sizes = f"B={B}, n={n}, m={m}, d_model={d}, num_heads={h}"
        got = call(fn, B, n, m, d, h, case=sizes)
        if isinstance(got, torch.Size) or not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Hint("return a pair of shapes, (output_shape, weights_shape), each a tuple of ints.")
        out, w = _as_shape(got[0], "output_shape"), _as_shape(got[1], "weights_shape")
        if out == (B, n, d) and w == (B, h, n, m):
            solved.append((B, n, m, d, h))
            continue
        d_k = d // h
        out_hints = {
            (B, m, d): "the output has one row per query, and the queries come from the decoder: "
            "its length is n (decoder positions), not m (encoder positions).",
            (B, n, d_k): "the layer's output has d_model features, not d_k: the heads' d_k-feature outputs "
            "are concatenated back to d_model features and mixed by W_o.",
            (B, h, n, d_k): "that is the per-head output before the heads are merged; the layer concatenates "
            "the heads (and applies W_o), so its output has no head axis.",
            (n, d): "keep the batch axis: every shape starts with B.",
            (B, n, m): "that is the shape of a weight matrix (n queries x m keys), not of the output: "
            "the output is one d_model-vector per query.",
        }
        w_hints = {
            (B, h, m, n): "the weights are transposed: rows are the n queries (decoder positions), "
            "columns the m keys (encoder positions).",
            (B, n, m): "multi-head attention has one weight matrix per head: keep the head axis.",
            (B, h, n, n): "cross-attention weights are not square: each of the n decoder queries weighs "
            "the m encoder keys (n x n would be the decoder attending to itself).",
            (B, h, m, m): "cross-attention weights are not square: each of the n decoder queries weighs "
            "the m encoder keys (m x m would be the encoder attending to itself).",
            (B, n, h, m): "the head axis comes right after the batch axis, as in split_heads: (B, h, ...).",
            (B, h, n, d_k): "a weight belongs to a (query, key) pair: the last axis counts encoder "
            "positions m, not features d_k.",
            (h, n, m): "keep the batch axis: every shape starts with B.",
        }
        if out != (B, n, d) and out in out_hints:
            raise Hint(out_hints[out], sizes)
        if w != (B, h, n, m) and w in w_hints:
            raise Hint(w_hints[w], sizes)
        if solved:
            raise Hint(
                f"right for B, n, m, d_model, num_heads = {solved[0]} but not for {sizes}: "
                "build the shapes from the arguments, do not type in numbers."
            )
        raise Hint(
            f"for {sizes} you gave output {out} and weights {w}. Think of one output vector per query "
            "and one weight per (head, query, key) triple, for every batch item."
        )


_SOURCE_CASES = ((2, 3, 4, 6), (3, 2, 5, 3))  # (B, h, n, m)
_SOURCE_MISTAKES = (  # (answer from weights (B, h, n, m), hint)
    (lambda w: w[:, 0].argmax(-1), "you used one head only: average the weights over all heads (dim=1) first."),
    (lambda w: w[:, -1].argmax(-1), "you used one head only: average the weights over all heads (dim=1) first."),
    (lambda w: w.amax(1).argmax(-1), "you took the maximum over the heads: average the weights over the heads "
                                     "(mean over dim=1), then take the argmax."),
    (lambda w: w.argmax(-1).mode(1).values, "you let every head vote with its own argmax: average the weights "
                                            "over the heads first, then take one argmax."),
    (lambda w: w.mean(1).argmin(-1), "argmin gives the encoder position with the SMALLEST weight: use argmax."),
    (lambda w: w.mean(1).argmax(-1) + 1, "positions count from 0: return the index argmax gives, without adding 1."),
)


def check_strongest_source(fn: Callable, *, seed: int | None = None):
    """Task: ``fn(weights (B, h, n, m)) -> (B, n)`` integer tensor: for every decoder position, the
    encoder position with the largest weight after averaging over the heads. Checked on 2 fixed and
    2 hidden random cases (n != m, m up to 30, padded encoder positions with weight 0)."""
    return report("strongest_source", lambda s: _check_strongest_source(fn, s), seed)


def _source_weights(g: torch.Generator, B: int, h: int, n: int, m: int, padded: int) -> torch.Tensor:
    weights = torch.softmax(2.0 * torch.randn(B, h, n, m, generator=g), dim=-1)
    if padded:
        weights[..., m - padded:] = 0.0  # padded encoder positions: zero weight everywhere
    return weights / weights.sum(-1, keepdim=True)


def _check_strongest_source(fn: Callable, seed: int) -> None:
    cases = [(torch.Generator().manual_seed(100 + k), (B, h, n, m), 1) for k, (B, h, n, m) in enumerate(_SOURCE_CASES)]
    g = generator(seed)
    for _ in range(2):
        B, h = (int(v) + 1 for v in torch.randperm(6, generator=g)[:2])
        n, m = (int(v) + 2 for v in torch.randperm(29, generator=g)[:2])
        cases.append((g, (B, h, n, m), int(torch.randint(0, m, (1,), generator=g))))
    for g_case, (B, h, n, m), padded in cases:
        weights = _source_weights(g_case, B, h, n, m, padded)
        where = f"weights of shape {(B, h, n, m)} (B, h, n, m), {padded} padded encoder position(s)"
        with failing_case(where):
            _check_source_case(fn, weights)


def _check_source_case(fn: Callable, weights: torch.Tensor) -> None:
    B, h, n, m = weights.shape
    got = call(fn, weights.clone())
    if type(got).__module__ == "numpy":
        raise Hint("you returned a NumPy array: the task asks for a torch.Tensor (argmax on the tensor gives one).")
    got = expect_tensor(got, "the answer").detach().cpu()
    expected = weights.mean(1).argmax(-1)  # (B, n)
    if got.dtype.is_floating_point:
        raise Hint("return positions (integer indices, as argmax gives), not weights (as max or amax give).")
    shape_hints = {
        (B, m): "you took the argmax over the decoder axis: for each decoder position (a row of the n x m "
        "matrix) look along its row, i.e. argmax over the last axis (encoder positions).",
        (B, h, n): "one answer per decoder position, not per head: average the weights over the head "
        "axis (dim=1) before the argmax.",
        (B, n, m): "you took the argmax over the head axis: average over the heads (dim=1), then take the "
        "argmax over the encoder positions (the last axis).",
        (n,): "keep the batch axis: you combined the batch items too; the answer is (B, n).",
        (B,): "one answer per decoder position: take the argmax along each row (the last axis), not over the "
        "whole n x m matrix.",
        (B, h): "you averaged over the decoder positions: average over the heads (dim=1) instead.",
    }
    if tuple(got.shape) != (B, n):
        raise Hint(shape_hints.get(tuple(got.shape), f"expected shape (B, n) = {(B, n)}, got {tuple(got.shape)}."))
    if torch.equal(got.long(), expected):
        return
    for answer, hint in _SOURCE_MISTAKES:
        if torch.equal(got.long(), answer(weights)):
            raise Hint(hint)
    b, i = (got.long() != expected).nonzero()[0].tolist()
    wrong = int((got.long() != expected).sum())
    raise Hint(f"for batch item {b}, decoder position {i} the largest head-averaged weight is at encoder "
               f"position {expected[b, i].item()}, you gave {got[b, i].item()} ({wrong} of {B * n} answers differ).")
