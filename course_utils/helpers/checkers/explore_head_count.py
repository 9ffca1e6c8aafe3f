"""Checker for lesson 12 (the number of heads): ``marker_beside``, whether the previous or the next
token of each position is a marker, on markers at both ends, side by side, length 1, and a hidden
random batch."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .compare import Answers, call_unchanged
from .registry import register
from .report import Hint, expect_tensor, failing_case, generator

NOTEBOOK = "12_explore_head_count"


def _beside_reference(tokens: torch.Tensor, marker_id: int) -> torch.Tensor:
    marker = tokens == marker_id
    beside = torch.zeros_like(marker)
    beside[:, 1:] |= marker[:, :-1]
    beside[:, :-1] |= marker[:, 1:]
    return beside


def _mistakes(tokens: torch.Tensor, marker_id: int) -> list[tuple]:
    marker = tokens == marker_id
    left, right = torch.zeros_like(marker), torch.zeros_like(marker)
    left[:, 1:], right[:, :-1] = marker[:, :-1], marker[:, 1:]
    one_side = "you looked on one side only: a marker before OR after the position counts."
    return [("torch.roll wraps around: the first position has no previous token and the last has no next one.",
             torch.roll(marker, 1, 1) | torch.roll(marker, -1, 1)),
            ("you also marked the markers themselves; only the NEIGHBOURS of a marker count.",
             _beside_reference(tokens, marker_id) | marker),
            ("left", one_side, left), ("right", one_side, right)]


def _cases(seed: int):
    g = torch.Generator().manual_seed(12)
    cases = [
        ("one marker in the middle", torch.tensor([[0, 1, 6, 2, 3]]), 6),
        ("a marker at both ends", torch.tensor([[6, 0, 1, 2, 6]]), 6),
        ("two markers side by side", torch.tensor([[0, 6, 6, 1, 2, 3]]), 6),
        ("no marker at all", torch.tensor([[0, 1, 2], [3, 4, 5]]), 6),
        ("sequences of length 1 and a marker id of 0", torch.tensor([[0], [1]]), 0),
        ("length 2", torch.tensor([[3, 1], [1, 3]]), 3),
        ("a random batch (500, 12)", torch.randint(0, 7, (500, 12), generator=g), 6),
    ]
    g = generator(seed)
    B, n, marker = (int(torch.randint(1, 40, (1,), generator=g)), int(torch.randint(1, 30, (1,), generator=g)),
                    int(torch.randint(0, 5, (1,), generator=g)))
    cases.append((f"a hidden random batch ({B}, {n}), marker id {marker}", torch.randint(0, 5, (B, n), generator=g),
                  marker))
    return cases


def _otherwise(case) -> str:
    b, i = (case.got != case.expected).nonzero()[0].tolist()
    return f"wrong at sequence {b}, position {i} (tokens {case.info['tokens'][b].tolist()})."


@register("marker beside", takes="marker_beside", twins={"marker_beside": "course_utils.models.head_task.marker_beside"})
def check_marker_beside(fn: Callable[[torch.Tensor, int], torch.Tensor], seed: int) -> None:
    """``fn(tokens (B, n), marker_id) -> (B, n) bool``: the previous or the next token is a marker."""
    answers = Answers(lambda a, b: isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b), _otherwise)
    for name, tokens, marker_id in _cases(seed):
        with failing_case(f"on {name}"):
            got = expect_tensor(call_unchanged(fn, tokens, marker_id, names=("tokens",), case=f"on {name}"), "the result")
            want = _beside_reference(tokens, marker_id)
            if got.shape != want.shape:
                raise Hint(f"the result should have shape {tuple(want.shape)} (B, n), got {tuple(got.shape)}.")
            if got.is_floating_point() and not ((got == 0) | (got == 1)).all():
                raise Hint(f"the result should be True/False (or 0/1) for every position, got values like "
                           f"{got[(got != 0) & (got != 1)][0].item():g}.")
        answers.add(f"on {name}", got.bool(), want, lambda a=(tokens, marker_id): _mistakes(*a), tokens=tokens)
    answers.verdict()
