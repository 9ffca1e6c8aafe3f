"""Checker for lesson 01b (scaling and masks): ``masked_softmax``, the softmax over the allowed keys
with a row of zeros where no key is allowed.

The hidden cases come in two groups, judged one after the other: ordinary scores (n != m, broadcast
padding masks, rows with no allowed key, float64), then the large scores the task promises to handle
("no NaN, also for scores in the thousands"): allowed scores near -1e4 (in float32 and float64), which a
fill of -1e4 or above lets the blocked keys win, and rows that mix scores of +-5000 with small ones (an
exp without the row's maximum subtracted overflows). Every case stays inside that promise: any fill far
below the scores is right (torch.finfo(dtype).min, -inf with the empty rows zeroed, an additive bias of
-1e9 then times the mask, as in the Annotated Transformer).
"""

from __future__ import annotations

import torch

from .compare import Answers, call_unchanged, close, largest_difference
from .registry import register
from .report import Hint, expect_tensor, failing_case, generator

NOTEBOOK = "01b_scaling_and_masks"
TWINS = {"masked_softmax": "course_utils.models.seq2seq.masked_softmax"}


def _reference(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.expand_as(scores)
    filled = scores.masked_fill(~mask, float("-inf"))
    safe = torch.where(mask.any(-1, keepdim=True), filled, torch.zeros_like(scores))
    return torch.softmax(safe, dim=-1) * mask


def _mistakes(scores, mask):
    m = mask.expand_as(scores)
    low = torch.finfo(scores.dtype).min
    return [
        ("mask inverted: True means *may attend*, so fill the scores where the mask is False (~mask).",
         lambda: _reference(scores, ~m)),
        ("a fully masked row (every key blocked) gives 1/m everywhere: that row attends to keys it may not see. "
         "Return zeros there, e.g. multiply the result by the mask.",
         lambda: torch.softmax(scores.masked_fill(~m, low), dim=-1)),
        ("a fully masked row gives NaN: with -inf everywhere the softmax computes 0/0. Fill with the most negative "
         "finite number, torch.finfo(scores.dtype).min, and multiply by the mask, so such a row becomes zeros.",
         lambda: torch.softmax(scores.masked_fill(~m, float("-inf")), dim=-1)),
        ("blocked scores set to 0 instead of a very negative number: exp(0) = 1, so blocked keys keep weight.",
         lambda: torch.softmax(scores.masked_fill(~m, 0.0), dim=-1)),
        ("mask applied after the softmax only: the allowed weights no longer sum to 1. Fill the blocked "
         "scores before the softmax.", lambda: torch.softmax(scores, dim=-1) * m),
        ("softmax over the wrong axis: use dim=-1, over the keys.",
         lambda: torch.softmax(scores.masked_fill(~m, low), dim=-2) * m),
        ("no mask applied: blocked keys still get weight.", lambda: torch.softmax(scores, dim=-1)),
    ]


def _ordinary_cases(g: torch.Generator):
    s, mask = torch.randn(3, 6, generator=g), torch.rand(3, 6, generator=g) > 0.4
    mask[:, 0] = True
    yield "3 queries, 6 keys", s, mask
    yield "one row", torch.randn(1, 5, generator=g), torch.tensor([[True, False, True, True, False]])
    s, mask = torch.randn(4, 3, generator=g), torch.ones(4, 3, dtype=torch.bool)
    mask[1] = False
    yield "query 1 has no allowed key", s, mask
    keep = torch.tensor([[1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    yield "heads with a broadcast padding mask", torch.randn(2, 3, 4, 7, generator=g), keep
    yield "one key, scores near 1000", 1000.0 * torch.randn(5, 1, generator=g), torch.ones(5, 1, dtype=torch.bool)
    s, mask = 30.0 * torch.randn(64, 300, generator=g, dtype=torch.float64), torch.rand(64, 300, generator=g) > 0.7
    mask[::16] = False
    yield "64 queries, 300 keys, float64", s, mask


def _extreme_cases(g: torch.Generator):
    def rows(n: int, m: int, dtype=torch.float32):
        mask = torch.rand(n, m, generator=g) > 0.5
        mask[:, 0], mask[-1] = True, False  # every row but the last keeps a key; the last keeps none
        return mask, torch.rand(n, m, generator=g, dtype=dtype)

    mask, r = rows(4, 6)
    yield "allowed scores near -1e4", -1e4 - 10 * r, mask
    mask, r = rows(3, 5, torch.float64)
    yield "allowed scores near -1e4 (float64)", -1e4 - 10 * r, mask
    big = torch.tensor([[5e3, -5e3, 0.0, 1e3, -1e3], [-5e3, 1.0, 5e3, -1.0, 2.0], [-5e3, -5e3, -4e3, 5.0, -2.0]])
    mask = torch.tensor([[1, 1, 1, 0, 1], [1, 0, 1, 1, 0], [1, 1, 0, 1, 1]], dtype=torch.bool)
    yield "rows that mix scores of +-5000 with small ones", big, mask


def _finite_fill(answers: Answers) -> bool:
    """Every wrong case lost the weight of its allowed keys (the blocked keys won, or the row became zeros),
    with no NaN: what a finite fill above the allowed scores does."""
    for case in answers.wrong:
        got, want = case.got.double(), case.expected.double()
        rows = want.sum(-1) > 0.5  # the rows with an allowed key
        kept = (got * (want > 0)).sum(-1)  # the student's weight on the keys that should get it
        if got.isnan().any() or not (kept[rows] < 0.5).any():
            return False
    return bool(answers.wrong)


def _otherwise(case) -> str:
    got, want = case.got, case.expected
    if got.isnan().any():
        return ("the result contains NaN: 0/0 on a row with no allowed key, or an exp that overflowed (exp of a "
                "large score is inf, and inf/inf = NaN: let torch.softmax subtract each row's maximum).")
    blocked = (want == 0) & (got != 0)
    if blocked.any() and got[blocked].abs().max() > 1e-6:
        return f"a blocked key (mask False) gets weight {got[blocked].abs().max().item():.3g}: it must get exactly 0."
    return ("the weights differ from the softmax over the allowed keys (largest difference "
            f"{largest_difference(got, want):.3g}).")


@register("masked_softmax", twins=TWINS)
def check_masked_softmax(fn, seed: int) -> None:
    """Check ``fn(scores, mask) -> weights``: softmax over the allowed keys (mask True), zeros on rows with none.

    ``scores`` is ``(..., n, m)``; ``mask`` is bool, broadcastable to it, True = may attend.
    """
    g = generator(seed)
    groups = []
    for cases in (_ordinary_cases(g), _extreme_cases(g)):
        answers = Answers(lambda a, b: close(a, b, nan_ok=True), _otherwise)
        for what, scores, mask in cases:
            where = f"{what}: scores {tuple(scores.shape)}, mask {tuple(mask.shape)}"
            with failing_case(where):
                result = expect_tensor(call_unchanged(fn, scores, mask, names=("scores", "mask"), case=where,
                                                      tip="compute a new tensor (masked_fill, not masked_fill_)"),
                                       "masked_softmax's result")
                if tuple(result.shape) != tuple(scores.shape):
                    raise Hint(f"the result should have the shape of the scores {tuple(scores.shape)}, got "
                               f"{tuple(result.shape)} (the mask only broadcasts to the scores).")
                if result.dtype != scores.dtype:
                    raise Hint(f"the result has dtype {result.dtype}, the scores {scores.dtype}: keep the scores' dtype "
                               "(no .float() or torch.tensor(...) copies; multiply by the bool mask directly).")
            answers.add(where, result, _reference(scores, mask), lambda s=scores, m=mask: _mistakes(s, m))
        groups.append(answers)
    for k, answers in enumerate(groups):
        if k == 1 and answers.explained_by() is None and _finite_fill(answers):
            case = answers.wrong[0]
            raise Hint("the blocked scores were filled with a finite number that is not low enough: when every allowed "
                       "score of a row lies below it, the blocked keys win. Fill with the most negative number of the "
                       "dtype, torch.finfo(scores.dtype).min, or with -inf (then turn rows with no allowed key into "
                       "zeros).", case.description)
        answers.verdict()
