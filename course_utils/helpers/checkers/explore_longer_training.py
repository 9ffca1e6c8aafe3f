"""Checker for lesson 13 (longer training): ``argmax_offset_share``, the share of token steps t < n
whose largest weight sits at the mirrored position n - 1 - t plus an offset, pooled over the examples,
on padded batches of several lengths, offsets from -1 to +2, a shuffled batch and a hidden random one. Like the
weights of a model with a padding mask, no case puts weight on a padded source position (>= n), so an answer that
takes the peak over the first n source positions only is as right as one over all of them."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .compare import Answers, call_unchanged, fraction_close, two_numbers
from .registry import register
from .report import as_float, failing_case, generator

NOTEBOOK = "13_explore_longer_training"


def _share(weights: torch.Tensor, lengths: torch.Tensor, offset: int, eos: bool = False) -> float:
    t = torch.arange(weights.shape[1])
    steps = t <= lengths[:, None] if eos else t < lengths[:, None]
    hit = weights.argmax(-1) == lengths[:, None] - 1 - t + offset
    return (hit & steps).sum().item() / steps.sum().item()


def _mistakes(weights: torch.Tensor, lengths: torch.Tensor, offset: int) -> list[tuple]:
    t = torch.arange(weights.shape[1])
    hit = weights.argmax(-1) == lengths[:, None] - 1 - t + offset
    per_sequence = [hit[b, :n].float().mean().item() for b, n in enumerate(lengths.tolist())]
    one_off = "your mirrored position is one off: m(t) = n - 1 - t (positions count from 0)."
    return [
        ("you counted the <eos> step; only the n token steps t < n have a mirrored position.",
         _share(weights, lengths, offset, eos=True)),
        ("you averaged over padded steps too; keep only the steps t < n of each example.", hit.float().mean().item()),
        ("the sign of the offset is flipped: the position is m(t) + offset.", _share(weights, lengths, -offset)),
        ("plus", one_off, _share(weights, lengths, offset + 1)), ("minus", one_off, _share(weights, lengths, offset - 1)),
        ("you averaged the share of each sequence, then over the sequences; pool all token steps instead (a sequence "
         "of length 10 has 10 steps, one of length 4 has 4).", sum(per_sequence) / len(per_sequence)),
    ]


def _cases(seed: int):
    g = torch.Generator().manual_seed(13)
    lengths = torch.tensor([4, 7, 5, 10, 4])
    w = torch.softmax(3 * torch.randn(5, 11, 10, generator=g), -1)
    for b, n in enumerate(lengths.tolist()):
        w[b, n + 1:] = 0  # padded steps
        w[b, :, n:] = 0  # padded source positions
        w[b, n] = 0
        w[b, n, 0] = 1  # the <eos> step looks at position 0
        for t in range(0, n, 2):
            w[b, t] = 0
            w[b, t, min(n - 1, n - t)] = 1  # every other step: one step beside the mirror (or on it at t=0)
    cases = [(offset, w, lengths) for offset in (0, 1, -1, 2)]
    shuffled = torch.randperm(5, generator=g)
    cases.append((1, w[shuffled], lengths[shuffled]))
    g = generator(seed)
    N, T = int(torch.randint(3, 12, (1,), generator=g)), int(torch.randint(3, 14, (1,), generator=g))
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    mirror = lengths[:, None] - 1 - torch.arange(T + 1)
    peaks = (mirror + torch.randint(-1, 3, (N, T + 1), generator=g)).clamp(min=0).minimum(lengths[:, None] - 1)
    scores = torch.randn(N, T + 1, T, generator=g) + 5 * torch.nn.functional.one_hot(peaks, T)
    padding = torch.arange(T) >= lengths[:, None, None]  # like a masked model: no weight on padded source positions
    weights = scores.masked_fill(padding, float("-inf")).softmax(-1)
    cases.append((int(torch.randint(-1, 3, (1,), generator=g)), weights, lengths))
    return cases


@register("argmax offset share", takes="argmax_offset_share",
          twins={"argmax_offset_share": "course_utils.models.seq2seq_data.argmax_offset_share"})
def check_argmax_offset_share(fn: Callable[[torch.Tensor, torch.Tensor, int], float], seed: int) -> None:
    """``fn(weights (N, T_out, T_in), lengths (N,), offset) -> float``: the share of token steps t < n whose
    largest weight sits at the mirrored position m(t) = n - 1 - t plus ``offset``."""
    answers = Answers(fraction_close, lambda c: "expected {}, got {}.".format(*two_numbers(c.expected, c.got)))
    for offset, weights, lengths in _cases(seed):
        name = f"offset {offset:+d} on a padded batch with lengths {lengths.tolist()}"
        with failing_case(f"on {name}"):
            got = as_float(call_unchanged(fn, weights, lengths, offset, names=("weights", "lengths"), case=f"on {name}"),
                           "argmax_offset_share", "should return")
        answers.add(f"on {name}", got, _share(weights, lengths, offset), lambda a=(weights, lengths, offset): _mistakes(*a))
    answers.verdict()
