"""Checkers for lesson 07 (head patterns): the entropy and the mean distance of every head, and the
labels of ``classify_heads``.

The entropy cases have n queries != m keys everywhere (an entropy summed over the wrong axis cannot
pass); the distance cases are square self-attention weights (B, h, n, n). The classify cases include
distances exactly ON each threshold (both "mixed"), with sequence lengths that are powers of two and
thresholds that are multiples of 1/16, so that distance / ((n^2 - 1) / (3n)) is exact in float32 and
float64 alike.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .compare import ALLCLOSE, Answers, call_unchanged, close, expect_like
from .registry import register
from .report import Hint, StudentCrash, failing_case, generator, kind_of

NOTEBOOK = "07_head_patterns"


def _ln(x: float) -> float:
    return torch.tensor(float(x), dtype=torch.float64).log().item()


def _random_weights(g: torch.Generator, B: int, h: int, n: int, m: int) -> torch.Tensor:
    """Weights ``(B, h, n, m)``: a one-hot head (0), a head with zeros after each query's place (1) and
    random softmax heads; exact zeros in many rows."""
    scores = 3 * torch.randn(B, h, n, m, generator=g)
    w = scores.softmax(-1)
    w[:, 0] = torch.nn.functional.one_hot(torch.randint(0, m, (B, n), generator=g), m).float()
    later = torch.arange(m)[None, :] > (torch.arange(n)[:, None] * m) // n
    w[:, 1] = scores[:, 1].masked_fill(later, float("-inf")).softmax(-1)
    return w


def _entropy_inputs(seed: int) -> list[torch.Tensor]:
    """Two fixed and one hidden random batch ``(B, h, n, m)``: n != m, B, h, n, m all different, exact zeros."""
    g = torch.Generator().manual_seed(7)
    first = _random_weights(g, 3, 4, 5, 7)
    first[:, 2] = 1.0 / 7  # uniform: H = log m
    second = _random_weights(g, 2, 6, 9, 4)
    g = generator(seed)
    B, h = (int(v) + 2 for v in torch.randperm(4, generator=g)[:2])  # 2..5, different
    n, m = (int(v) + 9 for v in torch.randperm(12, generator=g)[:2])  # 9..20, n != m
    return [first, second, _random_weights(g, B, h, n, m)]


def _distance_inputs(seed: int) -> list[torch.Tensor]:
    """Two fixed and one hidden random batch of self-attention weights ``(B, h, n, n)``, with exact zeros."""
    g = torch.Generator().manual_seed(7)
    first = _random_weights(g, 3, 4, 5, 5)
    first[:, 2] = 1.0 / 5
    B, h, n = 2, 6, 7
    offset = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # i - j
    scores = 2 * torch.randn(B, h, n, n, generator=g)
    second = scores.softmax(-1)
    second[:, 0] = scores[:, 0].masked_fill(offset.abs() > 1, float("-inf")).softmax(-1)  # neighbours only
    second[:, 1] = (offset == 1).float()  # the previous key (query 0: itself)
    second[:, 1, 0, 0] = 1.0
    g = generator(seed)
    B, h = (int(v) + 2 for v in torch.randperm(4, generator=g)[:2])
    n = int(torch.randint(9, 21, (1,), generator=g))
    return [first, second, _random_weights(g, B, h, n, n)]


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
        ("keys", f"your values are 1/m = 1/{m} of the expected: you took the mean over the keys. The entropy of a row "
         "is a SUM over its keys; only the rows (batch and queries) are averaged.", ref / m),
        ("queries", f"your values are {n} times too large: you summed over the queries. Sum over the keys (within a "
         "row), then AVERAGE over batch and queries.", ref * n),
        ("axes", "you summed over the queries and averaged over the keys: a row of the weights is one query, its m "
         "keys sum to 1; the entropy of a row is a SUM over the keys (the last axis), then average over batch and "
         "queries.", -torch.xlogy(w, w).sum(-2).mean(-1).mean(0)),
        ("batch", f"your values are {B} times too large: you summed over the batch. Average over it.", ref * B),
        ("batch and queries", f"your values are {B * n} times too large: you summed over batch and queries; average "
         "over them.", ref * B * n),
        ("normalised", f"your values are divided by log m = log {m}: that is the normalised entropy (1 = uniform). "
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
        ("keys", f"your values are 1/{m} of the expected: you took the mean over the keys (or divided by the length). "
         "The weights of a row already sum to 1, so SUM a_ij |i - j| over the keys; distances are in positions.",
         ref / m),
        ("fraction", f"your values are divided by n - 1 = {n - 1}: a distance as a fraction of the longest one. "
         "Report it in positions.", ref / (n - 1)),
        ("you weighted squared distances (i - j)^2: use |i - j|.", (w * signed**2).sum(-1).mean(dim=(0, 2))),
        ("you used only the most-attended key of each query (argmax): weight every key's distance by its "
         "attention, sum_j a_ij |i - j|.", (nearest - i).abs().float().mean(dim=(0, 2))),
        ("you weighted the key positions j, not the distances: subtract the query position, |i - j|.",
         (w * j).sum(-1).mean(dim=(0, 2))),
        ("queries", f"your values are {n} times too large: you summed over the queries. Average over batch and "
         "queries.", ref * n),
        ("batch", f"your values are {B} times too large: you summed over the batch. Average over it.", ref * B),
        ("batch and queries", f"your values are {B * n} times too large: you summed over batch and queries; average "
         "over them.", ref * B * n),
    ]


def _per_head_shape_hint(shape: tuple[int, ...], B: int, h: int, n: int, m: int) -> str:
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
    return f"for weights of shape ({B}, {h}, {n}, {m}) (B, h, n, m) expected shape ({h},) (h,), got {shape}: {what}."


def _per_head_otherwise(case) -> str:
    return (f"you returned {[round(v, 4) for v in case.got.tolist()]}, expected "
            f"{[round(v, 4) for v in case.expected.tolist()]} (largest error "
            f"{(case.got - case.expected).abs().max().item():.3g}). Compute one number per row (query) of every head, "
            "then average over the batch and the queries.")


def _per_head(fn, name: str, reference, mistakes, inputs: list[torch.Tensor]) -> None:
    answers = Answers(lambda a, b: close(a, b), _per_head_otherwise)
    for w in inputs:
        B, h, n, m = w.shape
        where = f"weights of shape {tuple(w.shape)} (B, h, n, m)"
        with failing_case(where):
            try:
                result = call_unchanged(fn, w, names=("weights",), case=where, tip=(
                    "compute new tensors and leave the caller's weights alone (no in-place edit such as "
                    "w[w == 0] = 1 or w.log_())"))
            except StudentCrash as crash:
                crash.tip = crash.tip or "Read the sizes from weights.shape; don't hard-code them."
                raise
            if not isinstance(result, torch.Tensor):
                raise Hint(f"{name} returned {kind_of(result)}: the task asks for a torch.Tensor of shape (h,).")
            if tuple(result.shape) != (h,):
                raise Hint(_per_head_shape_hint(tuple(result.shape), B, h, n, m))
            expect_like(result, w, f"{name}'s result", why=ALLCLOSE)
            result = result.detach().cpu().double()
            if torch.isnan(result).any():
                raise Hint("NaN in your result: some weights are exactly 0, and log(0) = -inf, 0 * -inf = NaN. A term "
                           "0 * log 0 counts as 0 (its limit): skip zero weights, e.g. with torch.where, or use "
                           "torch.xlogy(w, w), which gives 0 there.")
        answers.add(where, result, reference(w).double(), lambda w=w: mistakes(w))
    answers.verdict()


@register("head_entropy", twins={"attention_entropy": "course_utils.core.metrics.attention_entropy"})
def check_head_entropy(fn: Callable[[torch.Tensor], torch.Tensor], seed: int) -> None:
    """Check ``fn(weights (B, h, n, m)) -> (h,)``: mean attention entropy per head, in nats, 0 log 0 = 0,
    on 2 fixed inputs and 1 hidden random one (n != m everywhere, n and m from 9 to 20, with exact zeros)."""
    _per_head(fn, "head_entropy", _entropy_reference, _entropy_mistakes, _entropy_inputs(seed))


@register("head_mean_distance", twins={"mean_attention_distance": "course_utils.core.metrics.mean_attention_distance"})
def check_head_mean_distance(fn: Callable[[torch.Tensor], torch.Tensor], seed: int) -> None:
    """Check ``fn(weights (B, h, n, n)) -> (h,)``: mean over batch and queries of ``sum_j a_ij |i - j|``,
    on 2 fixed inputs and 1 hidden random one (n from 9 to 20)."""
    _per_head(fn, "head_mean_distance", _distance_reference, _distance_mistakes, _distance_inputs(seed))


# --- classify_heads ---------------------------------------------------------------------------------

LABELS = ("local", "mixed", "global")


def _uniform_distance(n: int) -> float:
    """Mean |i - j| when every query spreads its attention evenly over n keys: (n^2 - 1) / (3n)."""
    return (n * n - 1) / (3 * n)


def _classify_rule(reference_distance: Callable[[int], float], local_below=None, global_above=None,
                   labels=LABELS, split: str | None = None, inclusive: bool = False):
    """A rule: ratio = distance / reference_distance(n) against the thresholds (``split``: only two labels;
    ``inclusive``: a ratio equal to a threshold counts as beyond it)."""

    def rule(distance: tuple[float, ...], n: int, lo: float, hi: float) -> list[str]:
        lo = lo if local_below is None else local_below
        hi = hi if global_above is None else global_above
        out = []
        for d in distance:
            ratio = d / reference_distance(n)
            if split:
                out.append(labels[0] if ratio < (lo if split == "lo" else hi) else labels[2])
            elif inclusive:
                out.append(labels[0] if ratio <= lo else labels[2] if ratio >= hi else labels[1])
            else:
                out.append(labels[0] if ratio < lo else labels[2] if ratio > hi else labels[1])
        return out

    return rule


# (distances, n, local_below, global_above); None thresholds = call with the defaults 0.5, 0.75
_CLASSIFY_CASES = (
    ((0.5, 1.9, 1.995, 2.05, 2.9, 2.99, 3.05, 4.2), 12, None, None),
    ((0.5, 0.8, 1.5, 2.4, 2.5, 3.0), 8, 0.3, 0.9),
    ((0.62, 0.64, 0.9, 1.2), 4, None, None),
    ((1.25, 1.3125, 1.96875, 2.0), 8, None, None),  # exactly on both default thresholds (ratio 0.5, 0.75)
)


def _random_classify_cases(seed: int) -> list[tuple[tuple[float, ...], int, float, float]]:
    """Two hidden cases: n a power of two (2..64), thresholds k/16, distances on, near and away from them."""
    g, cases = generator(seed), []
    for _ in range(2):
        n = 2 ** int(torch.randint(1, 7, (1,), generator=g))
        lo_k, hi_k = sorted(int(v) + 2 for v in torch.randperm(13, generator=g)[:2])  # 2..14, lo < hi
        lo, hi = lo_k / 16, hi_k / 16
        ref = _uniform_distance(n)
        ratios = [lo, hi, lo - 1 / 64, hi + 1 / 64, (lo + hi) / 2, 0.0]
        ratios += (torch.rand(4, generator=g) * 1.4).tolist()
        order = torch.randperm(len(ratios), generator=g).tolist()
        distances = tuple(float(torch.tensor(ratios[k] * ref, dtype=torch.float32)) for k in order)
        cases.append((distances, n, lo, hi))
    return cases


def _classify_mistakes() -> list[tuple[str, Callable]]:
    return [
        ("local and global are swapped: a SMALL mean distance (ratio below local_below) means local.",
         _classify_rule(_uniform_distance, labels=("global", "mixed", "local"))),
        ("a ratio exactly equal to a threshold is 'mixed': only a ratio strictly below local_below is 'local' and "
         "only one strictly above global_above is 'global' (use < and >, not <= and >=).",
         _classify_rule(_uniform_distance, inclusive=True)),
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


def _describe(distances, n: int, lo, hi) -> str:
    return f"classify_heads({[round(d, 5) for d in distances]}, n={n}" + (
        ")" if lo is None else f", local_below={lo}, global_above={hi})")


def _labels(answer, call_text: str, count: int) -> list[str]:
    """The student's labels as plain strings (a list, tuple or 1-D NumPy array; NumPy strings accepted)."""
    if isinstance(answer, (str, torch.Tensor)) or not (isinstance(answer, (list, tuple)) or (
            type(answer).__module__ == "numpy" and getattr(answer, "ndim", 0) == 1)):
        raise Hint(f"return a list of strings ('local', 'mixed' or 'global'), got {kind_of(answer)}.")
    if len(answer) != count:
        raise Hint(f"{call_text} returned {len(answer)} labels for {count} heads: one label per head.")
    unknown = sorted({repr(x) for x in answer if not (isinstance(x, str) and str(x) in LABELS)})
    if unknown:
        raise Hint(f"unknown label(s) {unknown}: use exactly the strings 'local', 'mixed' and 'global'.")
    return [str(x) for x in answer]


@register("classify_heads", twins={"classify_heads": "course_utils.core.metrics.classify_heads"})
def check_classify_heads(fn, seed: int) -> None:
    """Check ``fn(distance (h,), n, local_below=0.5, global_above=0.75) -> list of 'local'/'mixed'/'global'``
    on 4 fixed cases (one exactly on both default thresholds) and 2 hidden random ones (n = 2..64, thresholds
    k/16, distances exactly on, just beside and away from each threshold)."""
    # Distances as the float32 values the student receives, so that the rules see the same numbers.
    cases = [(tuple(torch.tensor(d).tolist()), n, lo, hi)
             for d, n, lo, hi in (*_CLASSIFY_CASES, *_random_classify_cases(seed))]

    def otherwise(case) -> str:
        distances, n = next((d, n) for d, n, lo, hi in cases if _describe(d, n, lo, hi) == case.description)
        k = next(k for k, (g, e) in enumerate(zip(case.got, case.expected)) if g != e)
        ratio = distances[k] / _uniform_distance(n)
        return (f"a head with mean distance {distances[k]:g} (ratio {ratio:.6g}) should be {case.expected[k]!r}, you "
                f"said {case.got[k]!r}. Compare distance / (mean distance of uniform attention over n positions) with "
                "the thresholds: below local_below 'local', above global_above 'global', otherwise (a ratio equal to a "
                "threshold included) 'mixed'.")

    answers = Answers(lambda a, b: a == b, otherwise)
    for distances, n, lo, hi in cases:
        text = _describe(distances, n, lo, hi)
        args = {} if lo is None else {"local_below": lo, "global_above": hi}
        with failing_case(text):
            labels = _labels(call_unchanged(fn, torch.tensor(distances), n, names=("distance",), case=text, **args),
                             text, len(distances))
        rule_args = (distances, n, lo or 0.5, hi or 0.75)
        answers.add(text, labels, _classify_rule(_uniform_distance)(*rule_args),
                    lambda a=rule_args: [(hint, rule(*a)) for hint, rule in _classify_mistakes()])

    answers.verdict()
