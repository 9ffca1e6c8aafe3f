"""Checker for exercise 07's ``classify_heads(distance, n, local_below=0.5, global_above=0.75)``.

The hidden cases include distances exactly ON each threshold (ratio == local_below and ratio ==
global_above, both "mixed"); they use sequence lengths n that are powers of two and thresholds that
are multiples of 1/16, so that distance / ((n^2 - 1) / (3n)) is exact in float32 and float64 alike.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .report import Hint, call, failing_case, generator, report

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
    if isinstance(answer, (str, torch.Tensor)) or not (isinstance(answer, (list, tuple)) or
                                                        (type(answer).__module__ == "numpy" and answer.ndim == 1)):
        raise Hint(f"return a list of strings ('local', 'mixed' or 'global'), got {type(answer).__name__}.")
    if len(answer) != count:
        raise Hint(f"{call_text} returned {len(answer)} labels for {count} heads: one label per head.")
    unknown = sorted({repr(x) for x in answer if not (isinstance(x, str) and str(x) in LABELS)})
    if unknown:
        raise Hint(f"unknown label(s) {unknown}: use exactly the strings 'local', 'mixed' and 'global'.")
    return [str(x) for x in answer]


def _check_classify_heads(fn, seed: int) -> None:
    # Distances as the float32 values the student receives, so that the rules see the same numbers.
    cases = [(tuple(torch.tensor(d).tolist()), n, lo, hi) for d, n, lo, hi in (*_CLASSIFY_CASES, *_random_classify_cases(seed))]
    answers = []
    for distances, n, lo, hi in cases:
        text = _describe(distances, n, lo, hi)
        distance = torch.tensor(distances)
        args = {} if lo is None else {"local_below": lo, "global_above": hi}
        answer = call(fn, distance, n, case=text, **args)
        answers.append(_labels(answer, text, len(distances)))
    expected = [_classify_rule(_uniform_distance)(d, n, lo or 0.5, hi or 0.75) for d, n, lo, hi in cases]
    if answers == expected:
        return
    for hint, rule in _classify_mistakes():
        if answers == [rule(d, n, lo or 0.5, hi or 0.75) for d, n, lo, hi in cases]:
            raise Hint(hint)
    for (distances, n, lo, hi), got, want in zip(cases, answers, expected):
        for k, (g, e) in enumerate(zip(got, want)):
            if g != e:
                ratio = distances[k] / _uniform_distance(n)
                with failing_case(_describe(distances, n, lo, hi)):
                    raise Hint(f"a head with mean distance {distances[k]:g} (ratio {ratio:.6g}) should be {e!r}, you "
                               f"said {g!r}. Compare distance / (mean distance of uniform attention over n positions) "
                               "with the thresholds: below local_below 'local', above global_above 'global', "
                               "otherwise (a ratio equal to a threshold included) 'mixed'.")


def check_classify_heads(fn, *, seed: int | None = None):
    """Check ``fn(distance (h,), n, local_below=0.5, global_above=0.75) -> list of 'local'/'mixed'/'global'``
    on 4 fixed cases (one exactly on both default thresholds) and 2 hidden random ones (n = 2..64, thresholds
    k/16, distances exactly on, just beside and away from each threshold)."""
    return report("classify_heads", lambda s: _check_classify_heads(fn, s), seed)
