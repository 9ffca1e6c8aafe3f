"""Checkers for exercise 07: entropy and mean distance per head, and local/global head classes."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .report import Hint, expect_tensor, report


def _ln(x: float) -> float:
    """Natural log of a number (without importing math into the shared header)."""
    return torch.tensor(float(x), dtype=torch.float64).log().item()


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


def _check_per_head(fn, name: str, reference, mistakes) -> None:
    for w in _head_pattern_inputs():
        B, h, n, _ = w.shape
        given = w.clone()
        try:
            result = fn(given)
        except NotImplementedError:
            raise
        except Exception as err:
            raise Hint(f"with weights of shape {tuple(w.shape)} (B, h, n, m) your code raised "
                       f"{type(err).__name__}: {err}. Read the sizes from weights.shape; "
                       "don't hard-code them.") from None
        if not torch.equal(given, w):
            raise Hint(f"{name} changed the weights you passed in (an in-place edit such as w[w == 0] = 1 or "
                       "w.log_()): compute new tensors and leave the caller's weights alone.")
        if type(result).__name__ == "ndarray" or isinstance(result, (list, tuple, float)):
            kind = "NumPy array" if type(result).__name__ == "ndarray" else f"Python {type(result).__name__}"
            raise Hint(f"{name} returned a {kind}: return a torch.Tensor of shape (h,).")
        result = expect_tensor(result, f"the result of {name}")
        if tuple(result.shape) != (h,):
            raise Hint(_per_head_shape_hint(tuple(result.shape), B, h, n))
        result = result.detach().double()
        if torch.isnan(result).any():
            raise Hint("NaN in your result: some weights are exactly 0, and log(0) = -inf, 0 * -inf = NaN. A term "
                       "0 * log 0 counts as 0 (its limit): skip zero weights, e.g. with torch.where, or use "
                       "torch.xlogy(w, w), which gives 0 there.")
        expected = reference(w).double()
        if torch.allclose(result, expected, atol=1e-5, rtol=1e-4):
            continue
        for hint, candidate in mistakes(w):
            if torch.allclose(result, candidate.double(), atol=1e-5, rtol=1e-4):
                raise Hint(hint)
        raise Hint(f"for weights of shape {tuple(w.shape)} you returned {[round(v, 4) for v in result.tolist()]}, "
                   f"expected {[round(v, 4) for v in expected.tolist()]}. Compute one number per row (query) of "
                   "every head, then average over the batch and the queries.")


def check_head_entropy(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Check ``fn(weights (B, h, n, m)) -> (h,)``: mean attention entropy per head, in nats, 0 log 0 = 0."""
    return report("head_entropy", lambda: _check_per_head(fn, "head_entropy", _entropy_reference, _entropy_mistakes))


def check_head_mean_distance(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Check ``fn(weights (B, h, n, n)) -> (h,)``: mean over batch and queries of ``sum_j a_ij |i - j|``."""
    return report(
        "head_mean_distance", lambda: _check_per_head(fn, "head_mean_distance", _distance_reference, _distance_mistakes)
    )


def _classify_rule(reference_distance: Callable[[int], float], local_below=None, global_above=None,
                   labels=("local", "mixed", "global"), split: str | None = None):
    """A rule: ratio = distance / reference_distance(n) against the thresholds (``split``: only two labels)."""

    def rule(distance: torch.Tensor, n: int, lo: float, hi: float) -> list[str]:
        lo = lo if local_below is None else local_below
        hi = hi if global_above is None else global_above
        out = []
        for d in distance.tolist():
            ratio = d / reference_distance(n)
            if split:
                out.append(labels[0] if ratio < (lo if split == "lo" else hi) else labels[2])
            else:
                out.append(labels[0] if ratio < lo else labels[2] if ratio > hi else labels[1])
        return out

    return rule


def _uniform_distance(n: int) -> float:
    """Mean |i - j| when every query spreads its attention evenly over n keys: (n^2 - 1) / (3n)."""
    return (n * n - 1) / (3 * n)


# (distance, n, local_below, global_above); None thresholds = call with the defaults 0.5, 0.75
_CLASSIFY_CASES = [
    (torch.tensor([0.5, 1.9, 1.995, 2.05, 2.9, 2.99, 3.05, 4.2]), 12, None, None),
    (torch.tensor([0.5, 0.8, 1.5, 2.4, 2.5, 3.0]), 8, 0.3, 0.9),
    (torch.tensor([0.62, 0.64, 0.9, 1.2]), 4, None, None),
]


def _classify_mistakes() -> list[tuple[str, Callable]]:
    return [
        ("local and global are swapped: a SMALL mean distance (ratio below local_below) means local.",
         _classify_rule(_uniform_distance, labels=("global", "mixed", "local"))),
        ("only two labels: a head between the two thresholds is 'mixed' (ratio from local_below to global_above).",
         _classify_rule(_uniform_distance, split="lo")),
        ("only two labels, split at global_above: a ratio below local_below is 'local', from local_below to "
         "global_above 'mixed', above global_above 'global'.",
         _classify_rule(_uniform_distance, split="hi")),
        ("you compared the raw distances with the thresholds: divide each distance by the mean distance of "
         "uniform attention over n positions first.", _classify_rule(lambda n: 1.0)),
        ("your reference distance looks like n / 3: close, but uniform attention over n positions has mean "
         "distance slightly below n / 3. Compute it exactly, e.g. with your head_mean_distance on uniform weights.",
         _classify_rule(lambda n: n / 3)),
        ("your reference distance looks like n / 2: that is about the largest distance, not the mean distance "
         "of uniform attention. Compute it, e.g. with your head_mean_distance on uniform weights (all 1/n).",
         _classify_rule(lambda n: n / 2)),
        ("your reference distance looks like (n - 1) / 2: uniform attention has a smaller mean distance. Compute "
         "it, e.g. with your head_mean_distance on uniform weights (all 1/n).", _classify_rule(lambda n: (n - 1) / 2)),
        ("your reference distance looks like (n + 1) / 3, the mean over pairs with j != i: uniform attention also "
         "gives weight 1/n to the query's own position (distance 0).", _classify_rule(lambda n: (n + 1) / 3)),
        ("your reference distance ignores n: it is the one for n = 12. Use the n you are given.",
         _classify_rule(lambda n: _uniform_distance(12))),
        ("the thresholds are hard-coded: use the arguments local_below and global_above.",
         _classify_rule(_uniform_distance, local_below=0.5, global_above=0.75)),
    ]


def _call_classify(fn, distance: torch.Tensor, n: int, lo, hi):
    return fn(distance.clone(), n) if lo is None else fn(distance.clone(), n, local_below=lo, global_above=hi)


def _check_classify_heads(fn) -> None:
    answers = []
    for distance, n, lo, hi in _CLASSIFY_CASES:
        call = f"classify_heads({[round(d, 3) for d in distance.tolist()]}, n={n}" + (
            ")" if lo is None else f", local_below={lo}, global_above={hi})")
        try:
            labels = _call_classify(fn, distance, n, lo, hi)
        except NotImplementedError:
            raise
        except Exception as err:
            raise Hint(f"{call} raised {type(err).__name__}: {err}") from None
        if isinstance(labels, torch.Tensor) or not isinstance(labels, (list, tuple)):
            raise Hint(f"return a list of strings ('local', 'mixed' or 'global'), got {type(labels).__name__}.")
        if len(labels) != len(distance):
            raise Hint(f"{call} returned {len(labels)} labels for {len(distance)} heads: one label per head.")
        unknown = {repr(x) for x in labels} - {"'local'", "'mixed'", "'global'"}
        if unknown:
            raise Hint(f"unknown label(s) {sorted(unknown)}: use exactly the strings 'local', 'mixed' and 'global'.")
        answers.append(list(labels))
    expected = [_classify_rule(_uniform_distance)(d, n, lo or 0.5, hi or 0.75) for d, n, lo, hi in _CLASSIFY_CASES]
    if answers == expected:
        return
    for hint, rule in _classify_mistakes():
        if answers == [rule(d, n, lo or 0.5, hi or 0.75) for d, n, lo, hi in _CLASSIFY_CASES]:
            raise Hint(hint)
    for (distance, n, lo, hi), got, want in zip(_CLASSIFY_CASES, answers, expected):
        for k, (g, e) in enumerate(zip(got, want)):
            if g != e:
                raise Hint(f"with n={n}" + ("" if lo is None else f", local_below={lo}, global_above={hi}") +
                           f", a head with mean distance {distance[k].item():g} should be {e!r}, you said {g!r}. "
                           "Compare distance / (mean distance of uniform attention over n positions) with the "
                           "thresholds.")


def check_classify_heads(fn) -> bool:
    """Check ``fn(distance (h,), n, local_below=0.5, global_above=0.75) -> list of 'local'/'mixed'/'global'``."""
    return report("classify_heads", lambda: _check_classify_heads(fn))
