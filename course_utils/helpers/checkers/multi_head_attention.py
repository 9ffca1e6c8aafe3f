"""Checker for lesson 03 (multi-head attention): ``split_heads``, ``(B, T, d_model) -> (B, h, T, d_k)``,
on hidden shapes (one token, one head, d_k = 1, 512 features) with the usual wrong reshapes named. The result
must be a tensor of x's dtype and device that keeps autograd (in the notebook ``q`` requires grad): a float16
copy, a NumPy round trip or a detached tensor is named as such."""

from __future__ import annotations

import torch

from .compare import Answers, call_unchanged, expect_like
from .registry import register
from .report import StudentCrash, failing_case, generator

NOTEBOOK = "03_multi_head_attention"
NOTEBOOK_SIZES = (2, 8, 5, 8)  # the notebook's B, h, T, d_k: a result of these sizes took them from its variables
TWINS = {"split_heads": "course_utils.core.multihead.split_heads"}


def _reference(x: torch.Tensor, h: int) -> torch.Tensor:
    B, T, d_model = x.shape
    return x.reshape(B, T, h, d_model // h).transpose(1, 2)


def _mistakes(x, h):
    B, T, d = x.shape
    d_k = d // h
    return [
        ("the transpose is missing: reshaping x straight to (B, h, T, d_k) gives the right shape but cuts the flat "
         "memory in the wrong place, so a 'head' mixes several tokens. Reshape to (B, T, h, d_k), then swap axes "
         "1 and 2.", lambda: x.reshape(B, h, T, d_k)),
        ("heads cut the wrong way: reshaping to (B, T, d_k, h) makes head i take every h-th feature. Head i is "
         "the contiguous slice of features i*d_k .. (i+1)*d_k - 1: reshape to (B, T, h, d_k).",
         lambda: x.reshape(B, T, d_k, h).permute(0, 3, 1, 2)),
        ("axes in the wrong order: the result should be (B, h, T, d_k); after reshaping to (B, T, h, d_k), swap "
         "axes 1 and 2 (transpose(1, 2)), not 2 and 3.", lambda: x.reshape(B, T, h, d_k).transpose(2, 3)),
        ("the reshape to (B, T, h, d_k) is right but the axes were not swapped: return (B, h, T, d_k), i.e. add "
         ".transpose(1, 2).", lambda: x.reshape(B, T, h, d_k)),
    ]


def _same(a: torch.Tensor, b) -> bool:
    """Exactly the expected tensor: shape, dtype and values (the kind was checked before, see expect_like)."""
    return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)


def _otherwise(case) -> str:
    got, want = case.got, case.expected
    if got.shape != want.shape:
        from_notebook = got.dim() == 4 and any(g == nb != w for g, nb, w in zip(got.shape, NOTEBOOK_SIZES, want.shape))
        return (f"the result should have shape {tuple(want.shape)} (B, h, T, d_k) with d_k = d_model // num_heads = "
                f"{want.shape[-1]}; got {tuple(got.shape)}."
                + (" Take the sizes from x.shape and num_heads, not from variables of the notebook (B = 2, T = 5, "
                   "h = 8 there)." if from_notebook else ""))
    return "the values are not where they should be: result[b, i, t] must be x[b, t, i*d_k:(i+1)*d_k]."


_WRONG_SIZES = ("the sizes you reshape to do not multiply to x.numel(): take B, T and d_model from x.shape and "
                "d_k = d_model // num_heads (the notebook's B, T, h are not this case's).")


@register("split_heads", twins=TWINS)
def check_split_heads(fn, seed: int) -> None:
    """Check ``fn(x, num_heads)``: ``(B, T, d_model) -> (B, h, T, d_k)``, head i = features i*d_k..(i+1)*d_k-1."""
    g = generator(seed)
    answers = Answers(_same, _otherwise)
    for i, (B, T, d, h) in enumerate([(2, 5, 64, 8), (1, 1, 6, 3), (3, 7, 12, 4), (2, 4, 8, 1), (2, 3, 8, 8),
                                      (4, 33, 512, 16)]):
        x = torch.randn(B, T, d, generator=g).requires_grad_(i % 2 == 0)  # like the notebook's q, half the cases
        where = f"x {tuple(x.shape)} (B, T, d_model){' requiring grad' if x.requires_grad else ''}, num_heads={h}"
        with failing_case(where):
            try:
                result = call_unchanged(fn, x, h, names=("x",), case=where)
            except StudentCrash as crash:
                if "is invalid for input of size" in str(crash):
                    crash.tip = _WRONG_SIZES
                raise
            got = expect_like(result, x, "split_heads' result", where)
        answers.add(where, got, _reference(x, h), lambda x=x, h=h: _mistakes(x, h))
    answers.verdict()
