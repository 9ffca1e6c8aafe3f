"""Checker for lesson 11 (a next-token predictor): ``next_token_probs``, softmax(logits / temperature)
with temperature 0 as greedy decoding. Two groups of cases, judged one after the other: ordinary
logits (batches, several temperatures, a vocabulary of 1,000), then logits whose ratio to the
temperature lies beyond exp's range (above 88 in float32, 709 in float64)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .compare import Answers, call_unchanged, close, largest_difference
from .registry import register
from .report import Hint, expect_tensor, failing_case, generator

NOTEBOOK = "11_next_token_predictor"


def _ordinary(g: torch.Generator):
    for tau in (1.0, 0.5, 2.0):
        yield 2 * torch.randn(3, 26, generator=g), tau
    yield torch.randn(2, 4, 7, generator=g), 1.5
    yield torch.tensor([[1.0, 3.0, 3.0 - 1e-3, -2.0]]), 0.0
    yield 30 * torch.randn(5, 1000, generator=g), 0.0


def _overflowing(g: torch.Generator):
    yield 3 * torch.randn(3, 26, generator=g) + 2, 0.05  # logits / temperature up to about 200
    yield 100 * torch.randn(2, 50, generator=g), 0.1  # up to several thousand: beyond float64's exp too
    yield torch.tensor([[1000.0, 999.0, -1000.0, 0.0]]), 1.0


def _mistakes(logits: torch.Tensor, tau: float) -> list[tuple]:
    return [("you multiplied by the temperature; divide the logits by it.", lambda: torch.softmax(logits * tau, -1)),
            ("the temperature has no effect in your function: use softmax(logits / temperature).",
             lambda: torch.softmax(logits, -1))]


def _otherwise(case) -> str:
    got, want, tau = case.got, case.expected, case.info["tau"]
    if tau == 0:
        return ("temperature 0 is greedy decoding: all probability on the largest logit (a one-hot row); dividing by 0 "
                "does not get you there.")
    if not got.isfinite().all():
        return "your probabilities contain NaN or inf."
    if not torch.allclose(got.double().sum(-1), torch.ones(got.shape[:-1], dtype=torch.float64), atol=1e-4):
        return "each row over the vocabulary (the last axis) must sum to 1."
    return f"your probabilities differ from softmax(logits / temperature) by up to {largest_difference(got, want):.3g}."


@register("next-token probabilities", takes="next_token_probs",
          twins={"next_token_probs": "course_utils.models.language_model.next_token_probs"})
def check_next_token_probs(fn: Callable[[torch.Tensor, float], torch.Tensor], seed: int) -> None:
    """``fn(logits (..., V), temperature) -> probabilities (..., V)``; temperature 0 means greedy (one-hot)."""
    g = generator(seed)
    for group in (_ordinary(g), _overflowing(g)):
        answers = Answers(lambda a, b: close(a, b, atol=1e-5, rtol=0), _otherwise)
        for logits, tau in group:
            name = f"logits {tuple(logits.shape)} at temperature {tau}"
            with failing_case(f"on {name}"):
                got = expect_tensor(call_unchanged(fn, logits, tau, names=("logits",), case=f"on {name}"),
                                    "the probabilities")
                if got.shape != logits.shape:
                    raise Hint(f"the result should have the logits' shape {tuple(logits.shape)}, got {tuple(got.shape)}.")
            want = (torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float() if tau == 0
                    else torch.softmax(logits.double() / tau, -1))
            answers.add(f"on {name}", got.double(), want, lambda a=(logits, tau): _mistakes(*a), tau=tau, logits=logits)
        overflow = [c for c in answers.wrong if c.info["tau"] > 0 and (c.info["logits"] / c.info["tau"]).abs().max() > 88]
        if overflow and len(overflow) == len(answers.wrong) and answers.explained_by() is None and any(
                not c.got.isfinite().all() for c in overflow):
            case = overflow[0]
            top = (case.info["logits"].abs() / case.info["tau"]).max().item()
            raise Hint(f"exp overflowed: logits / temperature reach {top:.0f} here, and exp of more than about 88 is "
                       "inf in float32 (709 in float64), so inf / inf = NaN. Subtract each row's maximum before exp "
                       "(torch.softmax does it for you).", case.description)
        answers.verdict()
