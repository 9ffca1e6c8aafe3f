"""Checker for lesson 16 (online softmax and tiled attention): ``online_update``, one block of keys of
the running softmax, on one query, n != m with a short last block, scores up to about 150 (where exp
overflows without the maximum), a (B, h, n, m) batch and a hidden random one. Every block is a case
of its own: the answer gets the right state before each block."""

from __future__ import annotations

import math

import torch

from .compare import ALLCLOSE, Answers, call_unchanged, close, difference, expect_like
from .registry import register
from .report import Hint, failing_case, generator, kind_of

NOTEBOOK = "16_online_softmax_and_tiled_attention"


def _reference(m, l, acc, s, v):
    m_new = torch.maximum(m, s.amax(-1))
    p = torch.exp(s - m_new[..., None])
    scale = torch.exp(m - m_new)
    return m_new, l * scale + p.sum(-1), acc * scale[..., None] + p @ v


def _mistakes(m, l, acc, s, v):
    m_new = torch.maximum(m, s.amax(-1))
    p, scale = torch.exp(s - m_new[..., None]), torch.exp(m - m_new)
    return [
        ("the old sum l was not rescaled: multiply it by exp(m_old - m_new) before adding the new block.",
         lambda: (l + p.sum(-1), acc * scale[..., None] + p @ v)),
        ("the old accumulator acc was not rescaled: multiply it by exp(m_old - m_new) too.",
         lambda: (l * scale + p.sum(-1), acc + p @ v)),
        ("rescaling factor inverted: it is exp(m_old - m_new) (at most 1), not exp(m_new - m_old).",
         lambda: (l / scale + p.sum(-1), acc / scale[..., None] + p @ v)),
        ("exp(scores) without subtracting the maximum: large scores overflow to inf. Use exp(scores - m_new).",
         lambda: (l + torch.exp(s).sum(-1), acc + torch.exp(s) @ v)),
        ("the accumulator is normalised (divided by l): in this task acc is the UNnormalised sum "
         "sum_j exp(s_j - m) v_j; the division by l happens once, at the end.",
         lambda: (l * scale + p.sum(-1), (acc * scale[..., None] + p @ v) / (l * scale + p.sum(-1))[..., None])),
    ]


def _blocks(g: torch.Generator, n: int, m_keys: int, block: int, d_v: int, lead: tuple, spread: float):
    """Every block of one run, each with the right state before it: (where, m, l, acc, scores, values)."""
    scores = torch.randn(*lead, n, m_keys, generator=g) * spread
    if spread > 10:  # blocks of very different size: the maximum falls, rises and must be tracked
        scores[..., :block] += 60
    values = torch.randn(*lead, m_keys, d_v, generator=g)
    m, l, acc = torch.full((*lead, n), -math.inf), torch.zeros(*lead, n), torch.zeros(*lead, n, d_v)
    where = f"scores {tuple(scores.shape)} in blocks of {block}, values {tuple(values.shape)}"
    for start in range(0, m_keys, block):
        s, v = scores[..., start: start + block], values[..., start: start + block, :]
        yield f"{where}, block at keys {start}..{start + s.shape[-1] - 1}", m, l, acc, s, v
        m, l, acc = _reference(m, l, acc, s, v)


def _runs(seed: int):
    g = torch.Generator().manual_seed(1616)
    yield from _blocks(g, 1, 6, 2, 1, (), 1.0)  # one query, three blocks
    yield from _blocks(g, 3, 10, 4, 5, (2,), 3.0)  # n != m, a last block of 2 keys, d_v != 1
    yield from _blocks(g, 4, 12, 3, 2, (), 30.0)  # scores up to about 150: exp overflows without the maximum
    yield from _blocks(g, 64, 512, 128, 16, (2, 2), 2.0)  # (B, h, n, m), larger sizes
    hidden = generator(seed)
    n, block = (int(v) for v in torch.randint(1, 9, (2,), generator=hidden))
    yield from _blocks(hidden, n, int(torch.randint(block, 4 * block, (1,), generator=hidden)), block, 3, (2,), 5.0)


def _same_pair(got, want) -> bool:
    return want is not None and all(close(a, b, nan_ok=True) for a, b in zip(got, want))


def _sums_otherwise(case) -> str:
    bad = 0 if not close(case.got[0], case.expected[0], nan_ok=True) else 1
    name = ("l", "acc")[bad]
    what = "exp(scores - m)" + ("" if bad == 0 else " times the values")
    return (f"{name} differs from the running sum of {what} over every key seen so far: "
            f"{difference(case.got[bad], case.expected[bad], 'your ' + name)}.")


@register("online_update")
def check_online_update(fn, seed: int) -> None:
    """Check ``fn(m, l, acc, scores, values) -> (m, l, acc)``: one block of the online softmax."""
    maxima = Answers(lambda a, b: close(a, b), lambda c: (
        f"m should be the running maximum of every score seen so far: {difference(c.got, c.expected, 'your m')}."))
    sums = Answers(_same_pair, _sums_otherwise)
    for at, m, l, acc, s, v in _runs(seed):
        with failing_case(at):
            result = call_unchanged(fn, m, l, acc, s, v, case=at, names=("m", "l", "acc", "scores", "values"),
                                    tip="return new tensors instead")
            if not isinstance(result, (tuple, list)) or len(result) != 3:
                raise Hint(f"return three things (m, l, acc), got {kind_of(result)}.")
            got = [expect_like(r, s, name, at, why=ALLCLOSE) for r, name in zip(result, ("m", "l", "acc"))]
        want = _reference(m, l, acc, s, v)
        maxima.add(at, got[0], want[0], [("m is the maximum of this block only; keep the running maximum max(m, block "
                                          "max).", s.amax(-1)),
                                         ("m was not updated: the new running maximum is max(m, scores.amax(-1)).", m)])
        sums.add(at, got[1:], want[1:], lambda a=(m, l, acc, s, v): _mistakes(*a))
    maxima.verdict()
    sums.verdict()
