"""The "your turn" checkers of notebooks 10-14: valid answers pass, known-wrong answers are rejected with their hint."""

import math

import numpy as np
import pytest
import torch

from course_utils.core.sparse import sparsemax
from course_utils.helpers.checkers import (
    check_argmax_offset_share,
    check_marker_beside,
    check_next_token_probs,
    check_slopes,
    check_sparsemax_threshold,
)


def _verdict(capsys, checker, fn):
    ok = checker(fn)
    return ok, capsys.readouterr().out


# --- 10 ------------------------------------------------------------------------------------------


def tau_sorting(z):
    z_sorted = z.sort(dim=-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cumsum = z_sorted.cumsum(-1)
    kept = (1 + k * z_sorted > cumsum).sum(-1, keepdim=True)
    return (cumsum.gather(-1, kept - 1) - 1) / kept


def tau_loop(z):
    # plain Python: try every k, keep the last one that satisfies the condition; returns (...,) without keepdim
    flat = z.reshape(-1, z.shape[-1]).tolist()
    out = []
    for row in flat:
        s = sorted(row, reverse=True)
        k = max(k for k in range(1, len(s) + 1) if 1 + k * s[k - 1] > sum(s[:k]))
        out.append((sum(s[:k]) - 1) / k)
    return torch.tensor(out, dtype=z.dtype).reshape(z.shape[:-1])


def tau_from_package(z):
    p = sparsemax(z)
    kept = p > 0
    return ((z * kept).sum(-1, keepdim=True) - 1) / kept.sum(-1, keepdim=True)


@pytest.mark.parametrize("fn", [tau_sorting, tau_loop, tau_from_package])
def test_tau_valid(capsys, fn):
    ok, out = _verdict(capsys, check_sparsemax_threshold, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda z: z.max(-1, keepdim=True).values - 1, "lower bound"),
    (lambda z: (z.sum(-1, keepdim=True) - 1) / z.shape[-1], "kept every key"),
    (lambda z: tau_sorting(z).squeeze(-1)[..., None, None], "shape"),
    (lambda z: tau_sorting(z) + 0.01, "sum to 1"),
])
def test_tau_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_sparsemax_threshold, fn)
    assert not ok and hint in out, out


def test_tau_not_implemented(capsys):
    def stub(z):
        raise NotImplementedError

    ok, out = _verdict(capsys, check_sparsemax_threshold, stub)
    assert not ok and "not implemented" in out


# --- 11 ------------------------------------------------------------------------------------------


def probs_ok(logits, t):
    if t == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits / t, dim=-1)


def probs_numpy(logits, t):
    z = logits.numpy().astype(np.float64)
    if t == 0:
        return torch.from_numpy((z == z.max(-1, keepdims=True)).astype(np.float64))
    e = np.exp((z - z.max(-1, keepdims=True)) / t)
    return torch.from_numpy(e / e.sum(-1, keepdims=True))


@pytest.mark.parametrize("fn", [probs_ok, probs_numpy])
def test_probs_valid(capsys, fn):
    ok, out = _verdict(capsys, check_next_token_probs, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda z, t: torch.softmax(z * max(t, 1e-9), -1), "multiplied"),
    (lambda z, t: torch.softmax(z, -1), "no effect"),
    (lambda z, t: torch.softmax(z / max(t, 1e-3), -1) if t else torch.softmax(z / 1e-3, -1) * 0.5, "greedy"),
    (lambda z, t: torch.softmax(z / t, 0) if t else probs_ok(z, t), "sum to 1"),
    (lambda z, t: probs_ok(z, t) * 0.98 + 0.02 / z.shape[-1], "differ"),
])
def test_probs_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_next_token_probs, fn)
    assert not ok and hint in out, out


# --- 12 ------------------------------------------------------------------------------------------


def beside_shift(tokens, marker_id):
    m = tokens == marker_id
    out = torch.zeros_like(m)
    out[:, 1:] |= m[:, :-1]
    out[:, :-1] |= m[:, 1:]
    return out


def beside_pad(tokens, marker_id):
    m = torch.nn.functional.pad((tokens == marker_id).int(), (1, 1))
    return (m[:, :-2] + m[:, 2:]) > 0


def beside_loops(tokens, marker_id):
    B, n = tokens.shape
    rows = [[(i > 0 and tokens[b, i - 1] == marker_id) or (i < n - 1 and tokens[b, i + 1] == marker_id)
             for i in range(n)] for b in range(B)]
    return torch.tensor(rows, dtype=torch.bool).reshape(B, n)


@pytest.mark.parametrize("fn", [beside_shift, beside_pad, beside_loops])
def test_beside_valid(capsys, fn):
    ok, out = _verdict(capsys, check_marker_beside, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda t, m: beside_shift(t, m) | (t == m), "markers themselves"),
    (lambda t, m: torch.nn.functional.pad((t == m)[:, :-1], (1, 0)), "one side"),
    (lambda t, m: torch.roll(t == m, 1, 1) | torch.roll(t == m, -1, 1), "wraps around"),
    (lambda t, m: beside_shift(t, m)[:, :-1], "shape"),
])
def test_beside_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_marker_beside, fn)
    assert not ok and hint in out, out


# --- 13 ------------------------------------------------------------------------------------------


def share_vectorised(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t < lengths[:, None]
    hit = weights.argmax(-1) == (lengths[:, None] - 1 - t + offset)
    return (hit & steps).sum() / steps.sum()  # a 0-d tensor: accepted


def share_loops(weights, lengths, offset):
    hits = total = 0
    for b, n in enumerate(lengths.tolist()):
        for t in range(n):
            total += 1
            hits += int(weights[b, t].argmax()) == n - 1 - t + offset
    return np.float64(hits / total)


@pytest.mark.parametrize("fn", [share_vectorised, share_loops])
def test_share_valid(capsys, fn):
    ok, out = _verdict(capsys, check_argmax_offset_share, fn)
    assert ok, out


def share_with_eos(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t <= lengths[:, None]
    hit = weights.argmax(-1) == (lengths[:, None] - 1 - t + offset)
    return float((hit & steps).sum() / steps.sum())


def share_all_rows(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    return float((weights.argmax(-1) == (lengths[:, None] - 1 - t + offset)).float().mean())


def share_per_sequence(weights, lengths, offset):
    shares = []
    for b, n in enumerate(lengths.tolist()):
        t = torch.arange(n)
        shares.append((weights[b, :n].argmax(-1) == n - 1 - t + offset).float().mean())
    return float(torch.stack(shares).mean())


def share_mirror_n_minus_t(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t < lengths[:, None]
    hit = weights.argmax(-1) == (lengths[:, None] - t + offset)  # m(t) taken as n - t
    return float((hit & steps).sum() / steps.sum())


@pytest.mark.parametrize("fn, hint", [
    (share_with_eos, "<eos>"),
    (share_all_rows, "padded"),
    (lambda w, n, k: share_vectorised(w, n, -k), "sign"),
    (lambda w, n, k: [0.5], "one number"),
    (share_per_sequence, "pool all token steps"),
    (share_mirror_n_minus_t, "one off"),
])
def test_share_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_argmax_offset_share, fn)
    assert not ok and hint in out, out


# --- 14 ------------------------------------------------------------------------------------------


def slopes_ok(lengths, times):
    return [math.log(b / a) / math.log(T1 / T0) for T0, T1, a, b in zip(lengths, lengths[1:], times, times[1:])]


def slopes_numpy(lengths, times):
    return np.diff(np.log(times)) / np.diff(np.log(lengths))


@pytest.mark.parametrize("fn", [slopes_ok, slopes_numpy, lambda T, t: torch.tensor(slopes_ok(T, t))])
def test_slopes_valid(capsys, fn):
    ok, out = _verdict(capsys, check_slopes, fn)
    assert ok, out


@pytest.mark.parametrize("fn, hint", [
    (lambda T, t: [math.log2(b / a) for a, b in zip(t, t[1:])], "divided by log 2"),
    (lambda T, t: [b / a for a, b in zip(t, t[1:])], "time ratio"),
    (lambda T, t: slopes_ok(T, t) + [2.0], "one per neighbouring pair"),
    (lambda T, t: None, "list"),
])
def test_slopes_wrong(capsys, fn, hint):
    ok, out = _verdict(capsys, check_slopes, fn)
    assert not ok and hint in out, out
