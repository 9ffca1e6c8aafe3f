"""Checker for lesson 14 (the cost of attention): ``slopes``, the local log-log slope between each pair
of neighbouring lengths, on exact power laws, lengths that do not double, a jump, two lengths only,
and a hidden random curve."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from .compare import Answers, call_unchanged
from .registry import register
from .report import Hint, as_float, failing_case, generator, kind_of

NOTEBOOK = "14_attention_cost"
TWINS = {"slopes_per_doubling": "course_utils.helpers.exploration_plots.slopes_per_doubling"}


def _as_float_list(value, what: str) -> list[float]:
    if isinstance(value, torch.Tensor) and value.dim() == 1:
        value = list(value)
    elif isinstance(value, np.ndarray) and value.ndim == 1:
        value = list(value)
    if not isinstance(value, (list, tuple)):
        raise Hint(f"{what} should be a list (or 1-D tensor/array) of numbers, got {kind_of(value)}.")
    return [as_float(v, f"each of {what}", "should be") for v in value]


def _slopes(lengths, times) -> list[float]:
    return [math.log(t1 / t0) / math.log(T1 / T0) for T0, T1, t0, t1 in zip(lengths, lengths[1:], times, times[1:])]


def _same(got: list[float], want) -> bool:
    return want is not None and len(got) == len(want) and all(
        math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) for a, b in zip(got, want))


def _cases(seed: int):
    cases = [
        ("an exact T^2 law", [16, 32, 64, 128], [1e-5 * T**2 for T in (16, 32, 64, 128)]),
        ("an exact T^1.5 law on lengths that are not doublings", [100, 300, 1000], [T**1.5 for T in (100, 300, 1000)]),
        ("a flat start and a jump", [64, 128, 256, 512, 1024], [1.0, 1.1, 2.0, 16.0, 64.0]),
        ("two lengths only", [512, 1024], [0.02, 0.081]),
    ]
    g = generator(seed)
    # each length 1.5 to 4 times the one before: rounded to whole numbers, no two neighbours are equal (a factor
    # just above 1 made log(T1 / T0) zero on about one seed in 120, and a right answer divide by zero)
    steps = (1.5 + torch.rand(5, generator=g, dtype=torch.float64) * 2.5).cumprod(0)
    lengths = [int(round(16 * s)) for s in steps.tolist()]
    noise = 1 + torch.rand(5, generator=g, dtype=torch.float64)
    times = (1e-6 * torch.tensor(lengths, dtype=torch.float64) ** 2 * noise).tolist()
    cases.append(("hidden random lengths and times", lengths, times))
    return cases


@register("slopes per doubling", takes="slopes", twins=TWINS)
def check_slopes(fn: Callable[[list, list], list], seed: int) -> None:
    """``fn(lengths, times) -> slopes``: the local log-log slope between each pair of neighbouring lengths."""
    answers = Answers(_same, lambda c: f"expected {[round(w, 3) for w in c.expected]}, got {[round(v, 3) for v in c.got]}.")
    for name, lengths, times in _cases(seed):
        with failing_case(f"on {name}"):
            got = _as_float_list(call_unchanged(fn, list(lengths), list(times), names=("lengths", "times"),
                                                case=f"on {name}"), "the slopes")
            want = _slopes(lengths, times)
            if len(got) != len(want):
                raise Hint(f"{len(lengths)} lengths give {len(want)} slopes (one per neighbouring pair), got {len(got)}.")
        ratios = [t1 / t0 for t0, t1 in zip(times, times[1:])]
        answers.add(f"on {name}", got, want, [
            ("you divided by log 2 (one doubling) although the lengths do not double; divide log(t1/t0) by log(T1/T0).",
             [math.log2(r) for r in ratios]),
            ("that is the time ratio t1/t0; the slope is its logarithm over log(T1/T0).", ratios),
            ("your slopes are right but in reverse order: one slope per neighbouring pair, from the shortest lengths to "
             "the longest.", want[::-1] if len(want) > 1 else None)])
    answers.verdict()
