"""Checkers for exercise 07: entropy and mean distance per head (the head classes: ``head_classes``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...core.metrics import attention_entropy, mean_attention_distance
from .report import Hint, StudentCrash, call, expect_tensor, failing_case, generator, report


def _ln(x: float) -> float:
    """Natural log of a number (without importing math into the shared header)."""
    return torch.tensor(float(x), dtype=torch.float64).log().item()


def _random_pattern_input(seed: int) -> torch.Tensor:
    """Hidden random weights ``(B, h, n, n)``, n from 9 to 20, with one-hot, uniform and causal heads (exact zeros)."""
    g = generator(seed)
    B, h = (int(v) + 2 for v in torch.randperm(4, generator=g)[:2])  # 2..5, different
    n = int(torch.randint(9, 21, (1,), generator=g))
    scores = 3 * torch.randn(B, h, n, n, generator=g)
    w = scores.softmax(-1)
    w[:, 0] = torch.nn.functional.one_hot(torch.randint(0, n, (B, n), generator=g), n).float()
    w[:, 1] = scores[:, 1].masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
    return w


def _head_pattern_inputs() -> list[torch.Tensor]:
    """Two batches of attention weights ``(B, h, n, n)`` (B, h and n all different) with exact zeros."""
    g = torch.Generator().manual_seed(7)
    B, h, n = 3, 4, 5
    scores = 2 * torch.randn(B, h, n, n, generator=g)
    first = scores.softmax(-1)  # head 2 stays a random softmax
    first[:, 0] = torch.nn.functional.one_hot(torch.randint(0, n, (B, n), generator=g), n).float()  # H = 0
    first[:, 1] = 1.0 / n  # uniform: H = log n
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    first[:, 3] = scores[:, 3].masked_fill(~causal, float("-inf")).softmax(-1)  # zeros above the diagonal
    B, h, n = 2, 6, 7
    offset = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # i - j
    scores = 2 * torch.randn(B, h, n, n, generator=g)
    second = scores.softmax(-1)
    second[:, 0] = scores[:, 0].masked_fill(offset.abs() > 1, float("-inf")).softmax(-1)  # neighbours only
    second[:, 1] = (offset == 1).float()  # the previous key (query 0: itself)
    second[:, 1, 0, 0] = 1.0
    second[:, 2] = scores[:, 2].masked_fill(offset < 0, float("-inf")).softmax(-1)  # causal
    return [first, second]


def _row_entropy(w: torch.Tensor) -> torch.Tensor:
    """``(..., n, m) -> (..., n)`` entropy in nats, 0 log 0 = 0."""
    return -(w * torch.where(w > 0, w.log(), torch.zeros_like(w))).sum(-1)


def _key_distance(n: int, signed: bool = False) -> torch.Tensor:
    """``(n, n)`` distance ``|i - j|`` (or ``i - j``) between query i and key j."""
    offset = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).float()
    return offset if signed else offset.abs()


def _entropy_reference(w: torch.Tensor) -> torch.Tensor:
    return _row_entropy(w).mean(dim=(0, 2))


def _distance_reference(w: torch.Tensor) -> torch.Tensor:
    return (w * _key_distance(w.shape[-1])).sum(-1).mean(dim=(0, 2))


def _entropy_mistakes(w: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    B, h, n, m = w.shape
    ref = _entropy_reference(w)
    mean_pattern = w.mean(dim=(0, 2))  # (h, m)
    return [
        ("your values are the expected ones divided by ln 2: that is entropy in bits (log base 2). "
         "This notebook measures entropy in nats: use the natural log, torch.log.", ref / _ln(2)),
        ("your values are the expected ones divided by ln 10: log base 10. Use the natural log, torch.log "
         "(entropy in nats).", ref / _ln(10)),
        ("your entropies are negative: the minus sign is missing. H = -sum_j a_j log a_j, and since log a <= 0 "
         "for 0 < a <= 1, H >= 0.", -ref),
        ("bits and no minus sign: use -sum a log a with the natural log.", -ref / _ln(2)),
        (f"your values are 1/m = 1/{m} of the expected: you took the mean over the keys. The entropy of a row "
         "is a SUM over its keys; only the rows (batch and queries) are averaged.", ref / m),
        (f"your values are {n} times too large: you summed over the queries. Sum over the keys (within a row), "
         "then AVERAGE over batch and queries.", ref * n),
        (f"your values are {B} times too large: you summed over the batch. Average over it.", ref * B),
        (f"your values are {B * n} times too large: you summed over batch and queries; average over them.",
         ref * B * n),
        (f"your values are divided by log m = log {m}: that is the normalised entropy (1 = uniform). "
         "Return the plain entropy in nats.", ref / _ln(m)),
        ("you took the entropy of the AVERAGE attention pattern (mean over batch and queries first, then the "
         "entropy). Compute the entropy of every row first, then average: a head whose every query looks at its "
         "own neighbour is sharp (low entropy) although its average pattern is spread out.",
         _row_entropy(mean_pattern)),
    ]


def _distance_mistakes(w: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    B, h, n, m = w.shape
    ref = _distance_reference(w)
    signed = _key_distance(n, signed=True)
    j = torch.arange(m).float()
    nearest = w.argmax(-1)  # (B, h, n) most-attended key
    i = torch.arange(n)[None, None, :]
    return [
        ("signed distance i - j: keys before and after the query cancel out. Use the absolute value |i - j|.",
         (w * signed).sum(-1).mean(dim=(0, 2))),
        ("signed distance j - i: keys before and after the query cancel out. Use the absolute value |i - j|.",
         (w * -signed).sum(-1).mean(dim=(0, 2))),
        ("every head gets the same value: you averaged |i - j| over all (query, key) pairs without the "
         "attention weights. Weight each distance by the attention it gets: sum_j a_ij |i - j|.",
         _key_distance(n).mean().expand(h)),
        (f"your values are 1/{m} of the expected: you took the mean over the keys (or divided by the length). "
         "The weights of a row already sum to 1, so SUM a_ij |i - j| over the keys; distances are in positions.",
         ref / m),
        (f"your values are divided by n - 1 = {n - 1}: a distance as a fraction of the longest one. Report it "
         "in positions.", ref / (n - 1)),
        ("you weighted squared distances (i - j)^2: use |i - j|.", (w * signed**2).sum(-1).mean(dim=(0, 2))),
        ("you used only the most-attended key of each query (argmax): weight every key's distance by its "
         "attention, sum_j a_ij |i - j|.", (nearest - i).abs().float().mean(dim=(0, 2))),
        ("you weighted the key positions j, not the distances: subtract the query position, |i - j|.",
         (w * j).sum(-1).mean(dim=(0, 2))),
        (f"your values are {n} times too large: you summed over the queries. Average over batch and queries.",
         ref * n),
        (f"your values are {B} times too large: you summed over the batch. Average over it.", ref * B),
        (f"your values are {B * n} times too large: you summed over batch and queries; average over them.",
         ref * B * n),
    ]


def _per_head_shape_hint(shape: tuple[int, ...], B: int, h: int, n: int) -> str:
    known = {
        (): "a single number: you averaged over the heads too",
        (B,): "one value per batch item: you averaged over the heads (and queries)",
        (n,): "one value per query position: you averaged over the heads instead of over the queries",
        (B, h): "one value per (batch item, head): average over the batch too",
        (h, n): "one value per (head, query): average over the queries too",
        (B, h, n): "one value per row: average over the batch and the queries",
        (B, n): "one value per (batch item, query): you averaged over the heads, which must stay",
        (h, 1): "shape (h, 1): drop the kept dimension (no keepdim=True)",
    }
    what = known.get(shape, "not one value per head")
    return f"for weights of shape ({B}, {h}, {n}, {n}) (B, h, n, m) expected shape ({h},) (h,), got {shape}: {what}."


def _check_per_head(fn, name: str, reference, mistakes, seed: int, twins) -> None:
    for w in [*_head_pattern_inputs(), _random_pattern_input(seed)]:
        with failing_case(f"weights of shape {tuple(w.shape)} (B, h, n, m)"):
            _check_per_head_once(fn, name, reference, mistakes, w, twins)


def _check_per_head_once(fn, name: str, reference, mistakes, w: torch.Tensor, twins) -> None:
    B, h, n, _ = w.shape
    given = w.clone()
    try:
        result = call(fn, given, twins=twins)
    except StudentCrash as crash:
        crash.tip = crash.tip or "Read the sizes from weights.shape; don't hard-code them."
        raise
    if not torch.equal(given, w):
        raise Hint(f"{name} changed the weights you passed in (an in-place edit such as w[w == 0] = 1 or "
                   "w.log_()): compute new tensors and leave the caller's weights alone.")
    if type(result).__name__ == "ndarray" or isinstance(result, (list, tuple, float)):
        kind = "NumPy array" if type(result).__name__ == "ndarray" else f"Python {type(result).__name__}"
        raise Hint(f"{name} returned a {kind}: the task asks for a torch.Tensor of shape (h,).")
    result = expect_tensor(result, f"the result of {name}")
    if tuple(result.shape) != (h,):
        raise Hint(_per_head_shape_hint(tuple(result.shape), B, h, n))
    result = result.detach().cpu().double()
    if torch.isnan(result).any():
        raise Hint("NaN in your result: some weights are exactly 0, and log(0) = -inf, 0 * -inf = NaN. A term "
                   "0 * log 0 counts as 0 (its limit): skip zero weights, e.g. with torch.where, or use "
                   "torch.xlogy(w, w), which gives 0 there.")
    expected = reference(w).double()
    if torch.allclose(result, expected, atol=1e-5, rtol=1e-4):
        return
    for hint, candidate in mistakes(w):
        if torch.allclose(result, candidate.double(), atol=1e-5, rtol=1e-4):
            raise Hint(hint)
    diff = (result - expected).abs().max().item()
    raise Hint(f"you returned {[round(v, 4) for v in result.tolist()]}, expected "
               f"{[round(v, 4) for v in expected.tolist()]} (largest error {diff:.3g}). Compute one number per "
               "row (query) of every head, then average over the batch and the queries.")


_ENTROPY_TWINS = (("attention_entropy", attention_entropy),)
_DISTANCE_TWINS = (("mean_attention_distance", mean_attention_distance),)


def check_head_entropy(fn: Callable[[torch.Tensor], torch.Tensor], *, seed: int | None = None):
    """Check ``fn(weights (B, h, n, m)) -> (h,)``: mean attention entropy per head, in nats, 0 log 0 = 0,
    on 2 fixed inputs and 1 hidden random one (n from 9 to 20, with exact zeros)."""
    return report("head_entropy", lambda s: _check_per_head(
        fn, "head_entropy", _entropy_reference, _entropy_mistakes, s, _ENTROPY_TWINS), seed)


def check_head_mean_distance(fn: Callable[[torch.Tensor], torch.Tensor], *, seed: int | None = None):
    """Check ``fn(weights (B, h, n, n)) -> (h,)``: mean over batch and queries of ``sum_j a_ij |i - j|``,
    on 2 fixed inputs and 1 hidden random one (n from 9 to 20)."""
    return report("head_mean_distance", lambda s: _check_per_head(
        fn, "head_mean_distance", _distance_reference, _distance_mistakes, s, _DISTANCE_TWINS), seed)


# Re-exported so that every task of 07 is reachable from this module, as the grader (tooling/grade.py) expects.
from .head_classes import check_classify_heads  # noqa: E402

__all__ = ["check_classify_heads", "check_head_entropy", "check_head_mean_distance"]
