"""Checker for the task of lesson 11b (induction heads in a model trained on text):
``copy_accuracies(logits, tokens, period) -> (first, second)``.

``tokens (B, 2L)`` hold a block of ``period`` L tokens and then the same L again; ``logits (B, 2L, V)`` are a
model's next-token scores (position t predicts token t + 1). ``first`` is the share of tokens 1..L-1 whose
top prediction is right, ``second`` that of tokens L+1..2L-1 (token L, the first of the copy, is in neither).

``check_copy_accuracies`` calls the student's function only with plain tensors and an int and reads only the
two numbers it returns. It tries fixed cases (one row, L = 2, logits scaled by a million) and hidden random
ones, and names the mistakes it recognises (no shift by one, token L counted in the second copy or in the
first, the two swapped) where no other gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .registry import register
from .report import Hint, as_float, call, failing_case, generator

NOTEBOOK = "11b_induction_heads_in_text"


def _copy_reference(logits: torch.Tensor, tokens: torch.Tensor, L: int) -> tuple[float, float]:
    right = (logits[:, :-1].argmax(-1) == tokens[:, 1:]).double()
    return right[:, : L - 1].mean().item(), right[:, L:].mean().item()


def _copy_mistakes(logits: torch.Tensor, tokens: torch.Tensor, L: int) -> list[tuple[tuple[float, float], str]]:
    same = (logits.argmax(-1) == tokens).double()  # no shift
    right = (logits[:, :-1].argmax(-1) == tokens[:, 1:]).double()
    first, second = _copy_reference(logits, tokens, L)
    return [
        ((same[:, 1:L].mean().item(), same[:, L + 1 :].mean().item()),
         "position t predicts token t + 1: compare logits[:, t - 1].argmax(-1) with tokens[:, t] (you compared "
         "logits and tokens at the same position)."),
        ((first, right[:, L - 1 :].mean().item()),
         f"token L = {L}, the first of the second copy, is counted: nothing in the sequence so far says that the "
         "block ends there. Count tokens L+1 .. 2L-1 only."),
        ((second, first), "first and second are swapped: return (accuracy on the first copy, on the second)."),
        ((right[:, :L].mean().item(), right[:, L:].mean().item()),
         "token L belongs to the second copy: the first copy's accuracy counts tokens 1 .. L-1 (their predictions "
         "are made at positions 0 .. L-2)."),
    ]


def _copy_cases(seed: int) -> list[tuple[str, torch.Tensor, torch.Tensor, int]]:
    g = generator(seed)
    cases = []
    for where, B, L, V, scale in [("B = 3, L = 5, V = 7", 3, 5, 7, 1.0), ("one row, L = 2, V = 3", 1, 2, 3, 1.0),
                                  ("B = 4, L = 8, V = 26, logits x 1e6", 4, 8, 26, 1e6)] + [
            (f"hidden: B = {b}, L = {l}, V = {v}", b, l, v, 1.0)
            for b, l, v in (torch.randint(2, 12, (3,), generator=g).tolist() for _ in range(3))]:
        block = torch.randint(V, (B, L), generator=g)
        tokens = torch.cat([block, block], dim=1)
        logits = torch.randn((B, 2 * L, V), generator=g) * scale
        odds = torch.cat([torch.full((L,), 0.3), torch.full((L - 1,), 0.8)])  # a copier: the second copy is easier
        hit = torch.rand(B, 2 * L - 1, generator=g) < odds
        rows, cols = hit.nonzero(as_tuple=True)
        logits[rows, cols, tokens[rows, cols + 1]] = logits.abs().max() * 2 + 1
        cases.append((where, logits, tokens, L))
    return cases


@register("copy_accuracies", twins={"copy_accuracies": "course_utils.models.induction.copy_accuracies"})
def check_copy_accuracies(fn: Callable, seed: int) -> None:
    """Check ``fn(logits (B, 2L, V), tokens (B, 2L), period L) -> (first, second)``: the accuracy of the top
    predictions on tokens 1..L-1 and on tokens L+1..2L-1 (position t predicts token t + 1)."""
    for where, logits, tokens, L in _copy_cases(seed):
        with failing_case(where):
            given = (logits.clone(), tokens.clone())
            result = call(fn, *given, L, case=where)
            if not (torch.equal(given[0], logits) and torch.equal(given[1], tokens)):
                raise Hint("your function changed its inputs (in place): read them, build new tensors.", where)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise Hint(f"return two numbers, (first, second), got {type(result).__name__}.", where)
            got = tuple(as_float(v, "each accuracy") for v in result)
            want = _copy_reference(logits, tokens, L)
            if all(abs(a - b) < 1e-6 for a, b in zip(got, want)):
                continue
            hints = {h for wrong, h in _copy_mistakes(logits, tokens, L) if all(abs(a - b) < 1e-6 for a, b in zip(got, wrong))}
            if len(hints) == 1:
                raise Hint(hints.pop(), where)
            raise Hint(f"(first, second) should be ({want[0]:.4f}, {want[1]:.4f}), got ({got[0]:.4f}, {got[1]:.4f}): the "
                       "share of tokens 1..L-1, and of tokens L+1..2L-1, whose top prediction (made one position "
                       "earlier) is right.", where)
