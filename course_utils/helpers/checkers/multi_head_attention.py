"""Checker for lesson 03 (multi-head attention): ``split_heads``, ``(B, T, d_model) -> (B, h, T, d_k)``,
on hidden shapes (one token, one head, d_k = 1, 512 features) with the usual wrong reshapes named."""

from __future__ import annotations

import torch

from .compare import Answers, call_unchanged
from .registry import register
from .report import expect_tensor, failing_case, generator

NOTEBOOK = "03_multi_head_attention"
TWINS = {"split_heads": "course_utils.core.multihead.split_heads"}


def _reference(x: torch.Tensor, h: int) -> torch.Tensor:
    B, T, d_model = x.shape
    return x.reshape(B, T, h, d_model // h).transpose(1, 2)


def _mistakes(x, h):
    B, T, d = x.shape
    d_k = d // h
    return [
        ("the transpose is missing: x.view(B, h, T, d_k) has the right shape but cuts the flat memory in the "
         "wrong place, so a 'head' mixes several tokens. View as (B, T, h, d_k), then swap axes 1 and 2.",
         lambda: x.reshape(B, h, T, d_k)),
        ("heads cut the wrong way: viewing as (B, T, d_k, h) makes head i take every h-th feature. Head i is "
         "the contiguous slice of features i*d_k .. (i+1)*d_k - 1: view as (B, T, h, d_k).",
         lambda: x.reshape(B, T, d_k, h).permute(0, 3, 1, 2)),
        ("axes in the wrong order: the result should be (B, h, T, d_k); after the view, swap axes 1 and 2 "
         "(transpose(1, 2)), not 2 and 3.", lambda: x.reshape(B, T, h, d_k).transpose(2, 3)),
        ("the view is right but the axes were not swapped: return (B, h, T, d_k), i.e. add .transpose(1, 2).",
         lambda: x.reshape(B, T, h, d_k)),
    ]


def _same(a: torch.Tensor, b) -> bool:
    return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b.to(a.dtype))


def _otherwise(case) -> str:
    got, want = case.got, case.expected
    if got.shape != want.shape:
        return (f"the result should have shape {tuple(want.shape)} (B, h, T, d_k) with d_k = d_model // num_heads = "
                f"{want.shape[-1]}; got {tuple(got.shape)}. Take the sizes from x.shape, not from variables of the "
                "notebook.")
    return "the values are not where they should be: result[b, i, t] must be x[b, t, i*d_k:(i+1)*d_k]."


@register("split_heads", twins=TWINS)
def check_split_heads(fn, seed: int) -> None:
    """Check ``fn(x, num_heads)``: ``(B, T, d_model) -> (B, h, T, d_k)``, head i = features i*d_k..(i+1)*d_k-1."""
    g = generator(seed)
    answers = Answers(_same, _otherwise)
    for B, T, d, h in [(2, 5, 64, 8), (1, 1, 6, 3), (3, 7, 12, 4), (2, 4, 8, 1), (2, 3, 8, 8), (4, 33, 512, 16)]:
        x = torch.randn(B, T, d, generator=g)
        where = f"x {tuple(x.shape)} (B, T, d_model), num_heads={h}"
        with failing_case(where):
            got = expect_tensor(call_unchanged(fn, x, h, names=("x",), case=where), "split_heads' result")
        answers.add(where, got, _reference(x, h), lambda x=x, h=h: _mistakes(x, h))
    answers.verdict()
