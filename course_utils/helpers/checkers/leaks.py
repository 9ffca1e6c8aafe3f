"""Checker for exercise 05's leak test: ``leaks_future(attn_fn, x) -> bool``.

Each layer handed to the student's function records the inputs it is called with, so that a
wrong answer can be explained by what the function actually did: which positions it changed,
by how much, or whether it changed anything at all.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .causal_mask import _causal_reference, _softmax_masked
from .report import Hint, call, generator, report


def _toy_attention(mask_fn: Callable[[int], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """A self-attention layer ``x (n, 4) -> (n, 4)`` with fixed weights and the mask ``mask_fn(n)``."""
    g = torch.Generator().manual_seed(55)
    W_q, W_k, W_v = (torch.randn(4, 4, generator=g) / 2 for _ in range(3))

    def attention(x: torch.Tensor) -> torch.Tensor:
        Q, K, V = x @ W_q, x @ W_k, x @ W_v
        return _softmax_masked(Q @ K.T / 2, mask_fn(x.shape[0])) @ V

    return attention


def _with_extra_key(i: int, j: int) -> Callable[[int], torch.Tensor]:
    """Causal mask plus one future key: query i (negative: from the end) may also see key j."""
    def mask_fn(n: int) -> torch.Tensor:
        mask = _causal_reference(n)
        mask[i % n, j % n] = True
        return mask
    return mask_fn


class _Recorder:
    """Wraps a layer and records the inputs (of x's shape) the student's function runs it on."""

    def __init__(self, layer: Callable, x: torch.Tensor) -> None:
        self.layer, self.x, self.calls, self.changes = layer, x.clone(), 0, []

    def __call__(self, inp):
        self.calls += 1
        if isinstance(inp, torch.Tensor) and inp.shape == self.x.shape:
            diff = (inp.detach().float() - self.x).abs()
            if diff.max() > 0:
                self.changes.append(diff.amax(-1))  # (n,): how much each position was changed
        return self.layer(inp)

    def changed_positions(self) -> set[int]:
        return {t for change in self.changes for t in change.nonzero().flatten().tolist()}

    def smallest_change(self) -> float:
        return min(change.max().item() for change in self.changes)


def _diagnose_missed(rec: _Recorder, source: int | None, hint: str, n: int) -> str:
    """Why a leak was missed, from what the student's function did with the layer."""
    if rec.calls == 0:
        return hint + " Your function never ran attn_fn: run it on x and on changed copies of x."
    if not rec.changes:
        return hint + " Your function never ran attn_fn on a changed input: x2 = x is the same tensor, so " \
                      "both runs see the same input; use x.clone() and change the copy."
    if source is not None and source not in rec.changed_positions():
        return hint + f" Your function never changed token {source} (n = {n}): change every position t = 1..n-1."
    return hint


def _fixed_cases(causal) -> list[tuple[Callable, bool, int | None, str]]:
    """(layer, leaks?, the future position the leak comes from, hint when the answer is wrong)."""
    return [
        (causal, False, None, "says a CAUSAL attention leaks. Compare only outputs 0..t-1, BEFORE the position t "
                              "you changed: output t itself and later ones may change."),
        (lambda x: x.cumsum(0) / torch.arange(1, x.shape[0] + 1)[:, None], False, None,
         "says a running mean (output t = mean of x[0..t]) leaks. Compare only the outputs before the "
         "position you changed."),
        (_toy_attention(lambda n: torch.ones(n, n, dtype=torch.bool)), True, None,
         "says attention WITHOUT a mask does not leak."),
        (_toy_attention(_with_extra_key(0, 1)), True, 1,
         "missed a leak from token 1 into output 0: a leak can come from any future position, so change "
         "every position t = 1..n-1 (not only the last) and compare outputs 0..t-1."),
        (_toy_attention(_with_extra_key(-2, -1)), True, -1,
         "missed a leak from the LAST token into output n-2: does your loop reach t = n-1, with "
         "n = x.shape[0] (not a fixed length)?"),
        (lambda x: causal(x) + 1e-3 * x.sum(0), True, "small", ""),
        (lambda x: causal(x) + x.mean(0), True, None,
         "missed a leak that is not in the attention weights (the layer adds the mean over the whole sequence)."),
    ]


def _random_cases(seed: int) -> tuple[torch.Tensor, list]:
    """A longer random input and three layers: causal, and leaks from a random future key (any distance)."""
    g = generator(seed)
    n = int(torch.randint(7, 21, (1,), generator=g))
    x = torch.randn(n, 4, generator=g)
    i, j = sorted(torch.randperm(n, generator=g)[:2].tolist())  # query i sees key j > i: any distance
    far = int(torch.randint(0, n // 2, (1,), generator=g))  # query far..., key n-1-... at least n/2 apart
    far_j = int(torch.randint(far + (n + 1) // 2, n, (1,), generator=g))
    cases = [(_toy_attention(_causal_reference), False, None,
              f"says a CAUSAL attention leaks (n = {n}). Compare only outputs 0..t-1, before the position you changed.")]
    for q, k in ((i, j), (far, far_j)):
        cases.append((_toy_attention(_with_extra_key(q, k)), True, k,
                      f"missed a leak from token {k} into output {q} (n = {n}, {k - q} positions apart): change "
                      "every position t = 1..n-1 of x, with n = x.shape[0], and compare outputs 0..t-1."))
    return x, cases


def _check_leaks_future(fn, seed: int) -> None:
    causal = _toy_attention(_causal_reference)
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(5))
    x_random, random_cases = _random_cases(seed)
    runs = [(x, case) for case in _fixed_cases(causal)] + [(x_random, case) for case in random_cases]
    answers, recorders = [], []
    for inp, (layer, _, _, _) in runs:
        given = inp.clone()
        recorder = _Recorder(layer, inp)
        answer = call(fn, recorder, given, case=f"x of shape {tuple(inp.shape)}")
        if isinstance(answer, np.bool_):  # a NumPy bool is a valid yes/no
            answer = bool(answer)
        if not isinstance(answer, bool):
            raise Hint(f"return a Python bool (True = leaks), got {type(answer).__name__}: "
                       "for a one-element tensor use .item() or bool(...).")
        if not torch.equal(given, inp):
            raise Hint("your function changed the input x in place (e.g. x[t] += 1): change a copy, x.clone().")
        answers.append(answer)
        recorders.append(recorder)
    expected = [leaks for _, (_, leaks, _, _) in runs]
    if all(a != e for a, e in zip(answers, expected)):
        raise Hint("every answer is inverted: return True when an earlier output changes (the layer leaks).")
    for answer, recorder, (inp, (_, leaks, source, hint)) in zip(answers, recorders, runs):
        if answer == leaks:
            continue
        n = inp.shape[0]
        case = f"x of shape {tuple(inp.shape)}"
        if not leaks:
            raise Hint(hint, case)
        if source == "small":
            if recorder.changes and recorder.smallest_change() < 0.5:
                raise Hint(f"missed a small leak: you changed a token by only {recorder.smallest_change():.1g}, "
                           "so a leak shows up as a change far below the 1e-5 tolerance. Add 1.0 to the token, "
                           "as the docstring says.", case)
            hint = ("missed a small leak (earlier outputs changed by about 1e-3): your tolerance is too loose; "
                    "any change above 1e-5 counts (torch.allclose(..., atol=1e-5, rtol=0)).")
            source = None
        raise Hint(_diagnose_missed(recorder, None if source is None else source % n, hint, n), case)


def check_leaks_future(fn, *, seed: int | None = None):
    """Check ``fn(attn_fn, x) -> bool`` on 7 fixed layers that do or do not let the future leak into earlier
    outputs, and on 3 hidden random ones (n from 7 to 20; a leak from a random future key, near and far)."""
    return report("leaks_future", lambda s: _check_leaks_future(fn, s), seed)
