"""Checker for the task of lesson 07b (induction heads): ``induction_score(weights, period)``.

``weights (..., T, T)`` is a head's attention (rows are queries, columns keys) on a sequence whose
tokens repeat with ``period`` L from position 0. Query i >= L holds the same token as position i - L;
an induction head attends to key i - L + 1, the token that *followed* that earlier occurrence. The
score is the mean of ``weights[..., i, i - L + 1]`` over the queries i = L .. T-1, one number per
leading index: shape ``(...)``.

``check_induction_score`` calls the student's function only with plain tensors and an int and reads
only what it returns (the contract with the grader, ``checkers/__init__.py``). It tries fixed cases (random weights on every key, a
perfect induction head, a head that looks at the earlier occurrence itself, one (T, T) matrix,
float64, the notebook's 5-D (sequences, layers, heads, T, T)) and hidden random ones
(causal rows drawn with several temperatures, one-hot rows, 4-D and 5-D shapes, the
boundaries L = 1, L = 2 and L = T - 1), names the mistakes it recognises (the earlier occurrence
instead of the token after it, query L - 1 counted, every query counted, the transpose, a sum, the
wrong shape, type (a NumPy array) or dtype (the notebook's torch.allclose raises on either), an in-place change) where no other mistake gives the same numbers, and otherwise
says which score differs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .compare import two_numbers
from .registry import register
from .report import Hint, call, failing_case, generator

NOTEBOOK = "07b_induction_heads"


def _reference(weights: torch.Tensor, period: int) -> torch.Tensor:
    return weights.diagonal(1 - period, dim1=-2, dim2=-1)[..., 1:].mean(dim=-1)


def _offset_mean(weights: torch.Tensor, offset: int, first_query: int, divide_by: int | None = None) -> torch.Tensor:
    """Mean (or sum / divide_by) of weights[..., i, i + offset] over the queries i >= first_query that have that key."""
    T = weights.shape[-1]
    rows = [i for i in range(max(first_query, 0), T) if 0 <= i + offset < T]
    if not rows:
        return torch.full(weights.shape[:-2], float("nan"), dtype=weights.dtype)
    picked = torch.stack([weights[..., i, i + offset] for i in rows], dim=-1)
    return picked.sum(-1) / (divide_by or len(rows))


def _mistakes(weights: torch.Tensor, L: int) -> list[tuple[torch.Tensor, str]]:
    """(what a recognised wrong answer returns, its hint), most specific first."""
    T = weights.shape[-1]
    n = T - L  # queries L .. T-1
    return [
        (_offset_mean(weights, -L, L), "you took the weight on key i - L, the earlier occurrence of the query's own "
                                       "token (a duplicate-token head). An induction head looks one step further: at "
                                       "key i - L + 1, the token that FOLLOWED the earlier occurrence."),
        (_offset_mean(weights, 1 - L, L - 1), f"query L - 1 = {L - 1} is counted: its token has no earlier occurrence "
                                              "yet (the first repeat starts at position L). Average over queries "
                                              "i = L .. T-1 only (offset_share would include it)."),
        (_offset_mean(weights, 1 - L, L, divide_by=T), f"you divided by T = {T}, all the queries; only the "
                                                       f"{n} queries i = L .. T-1 have an earlier occurrence: average "
                                                       "over those."),
        (_offset_mean(weights, L - 1, 0), "rows are queries and columns keys: you read weights[..., i - L + 1, i], "
                                          "the transpose. Take weights[..., i, i - L + 1]."),
        (_offset_mean(weights, 1 - L, L, divide_by=1), f"you returned the sum over the {n} queries; the score is "
                                                       "their mean."),
    ]


def _as_scores(result, weights: torch.Tensor, where: str) -> torch.Tensor:
    """The student's result as a float64 tensor of shape ``weights.shape[:-2]``, or a Hint."""
    want = tuple(weights.shape[:-2])
    if not want and isinstance(result, (int, float, np.integer, np.floating)) and not isinstance(result, (bool, np.bool_)):
        return torch.tensor(float(result), dtype=torch.float64)  # one (T, T) matrix: a plain number is fine
    if isinstance(result, np.ndarray):
        raise Hint(f"return a torch.Tensor of scores, shape {want}, got a NumPy array: the notebook compares your "
                   "scores with torch.allclose, which takes tensors only. Use torch operations, no .numpy().", where)
    if not isinstance(result, torch.Tensor):
        raise Hint(f"return a torch.Tensor of scores, shape {want} (one per head), got {type(result).__name__}.", where)
    got = tuple(result.shape)
    if got != want:
        if want and got == ():
            raise Hint(f"one score per head: keep the leading axes, shape {want} for weights of shape "
                       f"{tuple(weights.shape)}; you averaged them into one number.", where)
        if len(got) == len(want) + 1 and got[:-1] == want:
            raise Hint(f"average over the queries too: one number per head, shape {want}; you returned {got}.", where)
        raise Hint(f"the scores should have shape {want} (the leading axes of weights), got {got}.", where)
    if not result.dtype.is_floating_point:
        raise Hint(f"a score is a mean of attention weights: return a float tensor, got dtype {result.dtype}.", where)
    if result.dtype != weights.dtype:
        raise Hint(f"the scores have dtype {result.dtype}, the weights {weights.dtype}: keep the weights' dtype (no "
                   ".double(), .half() or torch.tensor(...) copies); the notebook compares your scores with "
                   "torch.allclose, which raises on two dtypes.", where)
    return result.detach().cpu().to(torch.float64)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)


def _differing(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Which scores differ, by the very tolerance of :func:`_close` (flat bool tensor)."""
    return ~torch.isclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True).flatten()


def _check_once(fn: Callable, weights: torch.Tensor, L: int, where: str) -> None:
    given = weights.clone()
    result = call(fn, given, L, case=where)
    if not torch.equal(given, weights):
        raise Hint("your function changed the weights you passed in (in place): read them, build new tensors.", where)
    got = _as_scores(result, weights, where)
    want = _reference(weights.double(), L)
    if _close(got, want):
        return
    hints = {hint for wrong, hint in _mistakes(weights.double(), L) if _close(got, wrong)}
    if len(hints) == 1:  # a mistake is named only where no other one gives the same numbers
        raise Hint(hints.pop(), where)
    bad = _differing(got, want)
    diff = (got - want).abs().flatten().nan_to_num(float("inf")).where(bad, torch.zeros((), dtype=got.dtype))
    k = int(diff.argmax())
    at = f" at index {tuple(int(i) for i in np.unravel_index(k, want.shape))}" if want.dim() else ""
    should, was = two_numbers(want.flatten()[k].item(), got.flatten()[k].item())
    raise Hint(f"the score{at} should be {should}, got {was}; {int(bad.sum())} of {bad.numel()} scores differ. The score of a head is the mean of "
               "weights[..., i, i - L + 1] over the queries i = L .. T-1.", where)


def _causal_rows(shape: tuple[int, ...], g: torch.Generator, temperature: float, causal: bool = True) -> torch.Tensor:
    """Random attention ``shape (..., T, T)``: each row a softmax over keys 0..i (over every key with
    ``causal=False``)."""
    T = shape[-1]
    scores = torch.randn(shape, generator=g, dtype=torch.float64) / temperature
    if causal:
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1).float()


def _one_hot_rows(shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """Causal attention in which every query puts all its weight on one random key 0..i."""
    T = shape[-1]
    keys = (torch.rand(shape[:-1], generator=g) * torch.arange(1, T + 1)).long()  # key of query i in 0..i
    return torch.nn.functional.one_hot(keys, T).float()


def _pattern(T: int, offset: int) -> torch.Tensor:
    """Every query i with a key at i + offset puts all its weight there, the others on key 0."""
    w = torch.zeros(T, T)
    for i in range(T):
        w[i, i + offset if 0 <= i + offset <= i else 0] = 1.0
    return w


def _cases(seed: int) -> list[tuple[str, torch.Tensor, int]]:
    g = generator(seed)
    cases = [
        # First, weights on every key (no mask): there every mistake below gives numbers of its own (with a
        # causal mask the transpose reads only zeros), so the first failure names the mistake.
        ("random weights (2, 3, 10, 10) (B, h, T, T), period 3", _causal_rows((2, 3, 10, 10), g, 1.0, causal=False), 3),
        ("weights (6, 2, 1, 12, 12) (sequences, layers, heads, T, T) as in the notebook, period 5",
         _causal_rows((6, 2, 1, 12, 12), g, 1.0), 5),
        ("a perfect induction head, weights (12, 12), period 4 (score 1)", _pattern(12, -3), 4),
        ("a head on the earlier occurrence itself (key i - L), weights (12, 12), period 4 (score 0)",
         _pattern(12, -4), 4),
        ("float64 weights (4, 9, 9), period 5", _causal_rows((4, 9, 9), g, 0.5).double(), 5),
        ("period 1 (every token repeats its predecessor), weights (3, 7, 7)", _causal_rows((3, 7, 7), g, 1.0), 1),
        ("period T - 1 = 8: one query has an earlier occurrence, weights (2, 9, 9)", _causal_rows((2, 9, 9), g, 0.3), 8),
    ]
    for _ in range(5):  # hidden: the seed repeats them
        B, h, T = (int(v) for v in torch.randint(1, 5, (3,), generator=g))
        T = T + int(torch.randint(4, 16, (), generator=g))
        L = int(torch.randint(2, T, (), generator=g))
        temperature = float(torch.tensor([0.2, 1.0, 3.0])[torch.randint(3, (), generator=g)])
        shape = (B, 2, h, T, T) if len(cases) % 2 else (B, h, T, T)  # 5-D (sequences, layers, heads, T, T) too
        w = _causal_rows(shape, g, temperature) if temperature != 0.2 else _one_hot_rows(shape, g)
        cases.append((f"hidden weights {shape} ({'B, layers, h' if len(shape) == 5 else 'B, h'}, T, T), period {L}",
                       w, L))
    return cases


@register("induction_score", twins={"induction_score": "course_utils.models.induction.induction_score"})
def check_induction_score(fn: Callable[[torch.Tensor, int], torch.Tensor], seed: int) -> None:
    """Check ``fn(weights, period)``: attention ``weights (..., T, T)`` on a block repeated with ``period`` L
    -> ``(...)``, the mean of ``weights[..., i, i - L + 1]`` over the queries ``i = L .. T-1``."""
    for where, weights, L in _cases(seed):
        with failing_case(where):
            _check_once(fn, weights, L, where)
