"""Checker for notebook 16 (online softmax): one step of the running-softmax update over a block of keys."""

from __future__ import annotations

import math

import torch

from .report import Hint, expect_tensor, report


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
         lambda: (m_new, l + p.sum(-1), acc * scale[..., None] + p @ v)),
        ("the old accumulator acc was not rescaled: multiply it by exp(m_old - m_new) too.",
         lambda: (m_new, l * scale + p.sum(-1), acc + p @ v)),
        ("rescaling factor inverted: it is exp(m_old - m_new) (at most 1), not exp(m_new - m_old).",
         lambda: (m_new, l / scale + p.sum(-1), acc / scale[..., None] + p @ v)),
        ("exp(scores) without subtracting the maximum: large scores overflow to inf. Use exp(scores - m_new).",
         lambda: (m_new, l + torch.exp(s).sum(-1), acc + torch.exp(s) @ v)),
        ("the accumulator is normalised (divided by l): in this task acc is the UNnormalised sum "
         "sum_j exp(s_j - m) v_j; the division by l happens once, at the end.",
         lambda: (m_new, l * scale + p.sum(-1), (acc * scale[..., None] + p @ v) / (l * scale + p.sum(-1))[..., None])),
    ]


def _same(a, b, nan_ok: bool = False) -> bool:
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-5, equal_nan=nan_ok)


def _run(fn, n: int, m_keys: int, block: int, d_v: int, lead: tuple, g: torch.Generator, spread: float) -> None:
    scores = torch.randn(*lead, n, m_keys, generator=g) * spread
    if spread > 10:  # blocks of very different size: the maximum falls, rises and must be tracked
        scores[..., :block] += 60
    values = torch.randn(*lead, m_keys, d_v, generator=g)
    m, l = torch.full((*lead, n), -math.inf), torch.zeros(*lead, n)
    acc = torch.zeros(*lead, n, d_v)
    where = f"scores {tuple(scores.shape)} in blocks of {block}, values {tuple(values.shape)}"
    for start in range(0, m_keys, block):
        s, v = scores[..., start : start + block], values[..., start : start + block, :]
        state = (m, l, acc, s, v)
        copies = [x.clone() for x in state]
        at = f"{where}, block at keys {start}..{start + s.shape[-1] - 1}"
        try:
            result = fn(*copies)
        except NotImplementedError:
            raise
        except Exception as err:
            raise Hint(f"with {at} your code raised {type(err).__name__}: {err}") from None
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            raise Hint(f"return three things (m, l, acc), got {type(result).__name__}.")
        got = [expect_tensor(r, name) for r, name in zip(result, ("m", "l", "acc"))]
        for name, before, after in zip(("m", "l", "acc", "scores", "values"), state, copies):
            if not torch.equal(before.nan_to_num(), after.nan_to_num()):
                raise Hint(f"your function changed its input {name} in place: return new tensors instead.")
        want = _reference(m, l, acc, s, v)
        if not _same(got[0], want[0]):
            if _same(got[0], s.amax(-1)):
                raise Hint(f"with {at}: m is the maximum of this block only; keep the running maximum max(m, block max).")
            if _same(got[0], m):
                raise Hint(f"with {at}: m was not updated: the new running maximum is max(m, scores.amax(-1)).")
            raise Hint(f"with {at}: m should be the running maximum of every score seen so far, shape "
                       f"{tuple(want[0].shape)}; got shape {tuple(got[0].shape)}.")
        if all(_same(a, b) for a, b in zip(got, want)):
            m, l, acc = want
            continue
        for hint, mistake in _mistakes(m, l, acc, s, v):
            if all(_same(a, b, nan_ok=True) for a, b in zip(got, mistake())):
                raise Hint(f"with {at}: {hint}")
        bad = "l" if not _same(got[1], want[1]) else "acc"
        raise Hint(f"with {at}: {bad} differs from the running sum of exp(scores - m) "
                   + ("" if bad == "l" else "times the values ") + "over every key seen so far.")
    expected = torch.softmax(scores, -1) @ values
    if not _same(acc / l[..., None], expected):
        raise Hint(f"with {where}: acc / l differs from softmax(scores) @ values at the end.")


def _check_online_update(fn) -> None:
    g = torch.Generator().manual_seed(1616)
    _run(fn, 1, 6, 2, 1, (), g, 1.0)  # one query, three blocks
    _run(fn, 3, 10, 4, 5, (2,), g, 3.0)  # n != m, a last block of 2 keys, d_v != 1
    _run(fn, 4, 12, 3, 2, (), g, 30.0)  # scores up to about 150: exp overflows without the maximum
    _run(fn, 64, 512, 128, 16, (2, 2), g, 2.0)  # (B, h, n, m), larger sizes


def check_online_update(fn) -> bool:
    """Check ``fn(m, l, acc, scores, values) -> (m, l, acc)``: one block of the online softmax."""
    return report("online_update", lambda: _check_online_update(fn))
