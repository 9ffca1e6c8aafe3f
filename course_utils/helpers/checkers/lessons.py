"""Checkers for the tasks of lessons 01-04: one QKV head, masked_softmax, split_heads, peak_offsets.

Each ``check_*`` runs the student's function on hidden random cases (n != m, batches,
large sizes, every boundary), prints one line (a pass or a hint naming the mistake and
the case) and returns True only for a correct answer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .report import Hint, call, expect_tensor, generator, report


def _close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5) -> bool:
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), atol=atol, rtol=1e-4, equal_nan=True)


def _call(fn: Callable, args: tuple, where: str, twins: tuple = ()):
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    result = call(fn, *copies, case=where, twins=twins)  # not done / the student's crash, named with the case
    for i, (before, after) in enumerate(zip(args, copies)):
        if isinstance(before, torch.Tensor) and not torch.equal(before, after):
            raise Hint(f"with {where} your function changed its input number {i + 1} in place "
                       "(e.g. scores[...] = ..., masked_fill_ or /=): compute a new tensor instead.")
    return result


# ------------------------------------------------------------------ one QKV head (lesson 01)


def _qkv_reference(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    weights = torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, dim=-1)
    return weights @ V, weights


def _qkv_mistakes(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    raw = Q @ K.transpose(-2, -1)
    d, d_k = X.shape[-1], Q.shape[-1]
    soft = lambda s: torch.softmax(s, dim=-1)  # noqa: E731
    out = [
        ("no scaling: divide the scores Q K^T by sqrt(d_k) before the softmax.", soft(raw)),
        ("divided the scores by d_k: the scale is sqrt(d_k).", soft(raw / d_k)),
        ("queries and keys swapped: the scores are Q K^T (rows = queries), here the result is K Q^T.",
         soft(K @ Q.transpose(-2, -1) / d_k**0.5)),
        ("softmax over the wrong axis: use dim=-1 (over the keys) so that each query's row sums to 1.",
         torch.softmax(raw / d_k**0.5, dim=-2)),
    ]
    if d != d_k:
        out.append((f"scaled by sqrt(d_model) = sqrt({d}): the scale is sqrt(d_k), the width of a query "
                    f"after the projection (here {d_k}).", soft(raw / d**0.5)))
    if W_k.shape == W_v.shape:
        kv = soft(Q @ V.transpose(-2, -1) / d_k**0.5)
        out.append(("keys and values swapped: the scores use K = X W_K, the output averages V = X W_V.", kv))
    return out


def _check_qkv_once(fn, X, W_q, W_k, W_v) -> None:
    where = f"X {tuple(X.shape)}, W_q {tuple(W_q.shape)}, W_k {tuple(W_k.shape)}, W_v {tuple(W_v.shape)}"
    result = _call(fn, (X, W_q, W_k, W_v), where)
    if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Hint(f"return a pair (output, weights), got {type(result).__name__}.")
    out = expect_tensor(result[0], "output (the first thing you return)")
    weights = expect_tensor(result[1], "weights (the second thing you return)")
    n, d_v = X.shape[-2], W_v.shape[-1]
    w_shape, o_shape = (*X.shape[:-1], n), (*X.shape[:-1], d_v)
    if tuple(weights.shape) != w_shape:
        if tuple(weights.shape) == o_shape and tuple(out.shape) == w_shape:
            raise Hint("output and weights are swapped: return (output, weights).")
        raise Hint(f"with {where} the weights should have shape {w_shape} (n, n): one row per token, one column "
                   f"per token; got {tuple(weights.shape)}. Project with X @ W (not W @ X or X @ W.T).")
    if tuple(out.shape) != o_shape:
        raise Hint(f"with {where} the output should have shape {o_shape} (n, d_v), got {tuple(out.shape)}.")
    ref_out, ref_w = _qkv_reference(X, W_q, W_k, W_v)
    if not _close(weights, ref_w):
        for hint, candidate in _qkv_mistakes(X, W_q, W_k, W_v):
            if _close(weights, candidate):
                raise Hint(f"{hint} (case {where})")
        raise Hint(f"with {where} the weights differ from softmax((X W_q)(X W_k)^T / sqrt(d_k)) "
                   f"(largest difference {(weights.double() - ref_w.double()).abs().max().item():.3g}).")
    if not _close(out, ref_out):
        if W_k.shape == W_v.shape and _close(out, ref_w @ (X @ W_k)):
            raise Hint("the output averages the keys: output = weights @ V with V = X @ W_v.")
        if X.shape[-1] == d_v and _close(out, ref_w @ X):
            raise Hint("the output averages X itself: project the values first, V = X @ W_v.")
        raise Hint("the weights are right but the output is not: output = weights @ (X @ W_v).")


def _check_qkv_head(fn, seed: int) -> None:
    g = generator(seed)  # hidden random cases; a failure prints the seed that repeats them
    # 6 tokens, d = 8 -> d_k = 3, d_v = 5 first (no two sizes coincide, so hints are unambiguous);
    # then the slides' sizes (d = 4 -> d_k = d_v = 2), one token, and a large case.
    cases = [(6, 8, 3, 5), (3, 4, 2, 2), (1, 4, 2, 2), (50, 64, 16, 16)]  # (n, d, d_k, d_v)
    for n, d, d_k, d_v in cases:
        X = torch.randn(n, d, generator=g)
        W_q, W_k = torch.randn(d, d_k, generator=g) / d**0.5, torch.randn(d, d_k, generator=g) / d**0.5
        _check_qkv_once(fn, X, W_q, W_k, torch.randn(d, d_v, generator=g))
    # 2. A batch of 2 sequences: X (B, n, d); the projections are shared.
    X = torch.randn(2, 5, 6, generator=g)
    W = [torch.randn(6, 3, generator=g) for _ in range(3)]
    _check_qkv_once(fn, X, *W)


def check_qkv_head(fn, seed: int | None = None):
    """Check ``fn(X, W_q, W_k, W_v) -> (output, weights)``: one self-attention head with learned projections.

    ``X`` is ``(n, d)`` or ``(B, n, d)``; ``W_q``, ``W_k`` are ``(d, d_k)``; ``W_v`` is ``(d, d_v)``.
    """
    return report("qkv_head", lambda s: _check_qkv_head(fn, s), seed)


# ------------------------------------------------------------------ masked_softmax (lesson 01b)


def _masked_softmax_reference(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.expand_as(scores)
    filled = scores.masked_fill(~mask, float("-inf"))
    safe = torch.where(mask.any(-1, keepdim=True), filled, torch.zeros_like(scores))
    return torch.softmax(safe, dim=-1) * mask


def _masked_softmax_mistakes(scores, mask):
    m = mask.expand_as(scores)
    neg = torch.finfo(scores.dtype).min
    out = [
        ("mask inverted: True means *may attend*, so fill the scores where the mask is False (~mask).",
         lambda: _masked_softmax_reference(scores, ~m)),
        ("a fully masked row (every key blocked) gives 1/m everywhere: that row attends to keys it may not see. "
         "Return zeros there, e.g. multiply the result by the mask.",
         lambda: torch.softmax(scores.masked_fill(~m, neg), dim=-1)),
        ("a fully masked row gives NaN: with -inf everywhere the softmax computes 0/0. Fill with a very "
         "negative finite number (torch.finfo(scores.dtype).min) and multiply by the mask, so such a row "
         "becomes zeros.", lambda: torch.softmax(scores.masked_fill(~m, float("-inf")), dim=-1)),
        ("blocked scores set to 0 instead of a very negative number: exp(0) = 1, so blocked keys keep weight.",
         lambda: torch.softmax(scores.masked_fill(~m, 0.0), dim=-1)),
        ("mask applied after the softmax only: the allowed weights no longer sum to 1. Fill the blocked "
         "scores before the softmax.", lambda: torch.softmax(scores, dim=-1) * m),
        ("softmax over the wrong axis: use dim=-1, over the keys.",
         lambda: torch.softmax(scores.masked_fill(~m, neg), dim=-2) * m),
        ("no mask applied: blocked keys still get weight.", lambda: torch.softmax(scores, dim=-1)),
    ]
    return out


def _check_masked_softmax_once(fn, scores, mask, what: str) -> None:
    where = f"{what}: scores {tuple(scores.shape)}, mask {tuple(mask.shape)}"
    result = expect_tensor(_call(fn, (scores, mask), where), "masked_softmax's result")
    if tuple(result.shape) != tuple(scores.shape):
        raise Hint(f"with {where} the result should have the shape of the scores {tuple(scores.shape)}, "
                   f"got {tuple(result.shape)} (the mask only broadcasts to the scores).")
    if result.dtype != scores.dtype:
        raise Hint(f"with {where} the result has dtype {result.dtype}, the scores {scores.dtype}: keep the "
                   "scores' dtype (no .float() or torch.tensor(...) copies; multiply by the bool mask directly).")
    expected = _masked_softmax_reference(scores, mask)
    if _close(result, expected):
        return
    for hint, mistake in _masked_softmax_mistakes(scores, mask):
        if _close(result, mistake()):
            raise Hint(f"{hint} (case {where})")
    if torch.isnan(result).any():
        raise Hint(f"with {where} the result contains NaN. Are the scores large? Fill with a finite number, "
                   "and let torch.softmax do the max subtraction.")
    blocked = ~mask.expand_as(scores)
    if blocked.any() and result[blocked].abs().max() > 1e-6:
        raise Hint(f"with {where} a blocked key (mask False) gets weight {result[blocked].abs().max().item():.3g}: "
                   "it must get exactly 0.")
    diff = (result.double() - expected.double()).abs().max().item()
    raise Hint(f"with {where} the weights differ from the softmax over the allowed keys "
               f"(largest difference {diff:.3g}).")


def _check_masked_softmax(fn, seed: int) -> None:
    g = generator(seed)  # hidden random cases; a failure prints the seed that repeats them
    # 1. One query row, 5 keys, two blocked.
    s = torch.randn(1, 5, generator=g)
    _check_masked_softmax_once(fn, s, torch.tensor([[True, False, True, True, False]]), "one row")
    # 2. n != m, a (n, m) mask where every row keeps a key.
    s = torch.randn(3, 6, generator=g)
    mask = torch.rand(3, 6, generator=g) > 0.4
    mask[:, 0] = True
    _check_masked_softmax_once(fn, s, mask, "3 queries, 6 keys")
    # 3. A fully masked row (query 1 may attend nothing).
    s = torch.randn(4, 3, generator=g)
    mask = torch.ones(4, 3, dtype=torch.bool)
    mask[1] = False
    _check_masked_softmax_once(fn, s, mask, "query 1 has no allowed key")
    # 4. Heads and a padding mask that broadcasts: scores (B, h, n, m), mask (B, 1, 1, m).
    s = torch.randn(2, 3, 4, 7, generator=g)
    keep = torch.tensor([[1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    _check_masked_softmax_once(fn, s, keep, "heads with a broadcast padding mask")
    # 5. Large scores (no overflow allowed) and one key only.
    s = 1000.0 * torch.randn(5, 1, generator=g)
    _check_masked_softmax_once(fn, s, torch.ones(5, 1, dtype=torch.bool), "one key, scores near 1000")
    # 6. Large sizes, float64, random mask with some rows fully masked.
    s = 30.0 * torch.randn(64, 300, generator=g, dtype=torch.float64)
    mask = torch.rand(64, 300, generator=g) > 0.7
    mask[::16] = False
    _check_masked_softmax_once(fn, s, mask, "64 queries, 300 keys, float64")


def check_masked_softmax(fn, seed: int | None = None):
    """Check ``fn(scores, mask) -> weights``: softmax over the allowed keys (mask True), zeros on rows with none.

    ``scores`` is ``(..., n, m)``; ``mask`` is bool, broadcastable to it, True = may attend.
    """
    return report("masked_softmax", lambda s: _check_masked_softmax(fn, s), seed)


# ------------------------------------------------------------------ split_heads (lesson 03)


def _split_reference(x: torch.Tensor, h: int) -> torch.Tensor:
    B, T, d_model = x.shape
    return x.reshape(B, T, h, d_model // h).transpose(1, 2)


def _split_mistakes(x, h):
    B, T, d = x.shape
    d_k = d // h
    return [
        ("the transpose is missing: x.view(B, h, T, d_k) has the right shape but cuts the flat memory in the "
         "wrong place, so a 'head' mixes several tokens. View as (B, T, h, d_k), then swap axes 1 and 2.",
         lambda: x.reshape(B, h, T, d_k)),
        ("heads cut the wrong way: viewing as (B, T, d_k, h) makes head i take every h-th feature. Head i is "
         "the contiguous slice of features i*d_k .. (i+1)*d_k - 1: view as (B, T, h, d_k).",
         lambda: x.reshape(B, T, d_k, h).permute(0, 3, 1, 2)),
        ("axes in the wrong order: the result should be (B, h, T, d_k); after the view, swap axes 1 and 2 "
         "(transpose(1, 2)), not 2 and 3.",
         lambda: x.reshape(B, T, h, d_k).transpose(2, 3)),
        ("the view is right but the axes were not swapped: return (B, h, T, d_k), i.e. add .transpose(1, 2).",
         lambda: x.reshape(B, T, h, d_k)),
    ]


def _check_split_once(fn, x, h) -> None:
    B, T, d = x.shape
    where = f"x {tuple(x.shape)} (B, T, d_model), num_heads={h}"
    result = expect_tensor(_call(fn, (x, h), where), "split_heads' result")
    expected = _split_reference(x, h)
    if torch.equal(result, expected):
        return
    for hint, mistake in _split_mistakes(x, h):
        candidate = mistake()
        if result.shape == candidate.shape and torch.equal(result, candidate):
            raise Hint(f"{hint} (case {where})")
    if tuple(result.shape) != tuple(expected.shape):
        raise Hint(f"with {where} the result should have shape {tuple(expected.shape)} (B, h, T, d_k) with "
                   f"d_k = d_model // num_heads = {d // h}; got {tuple(result.shape)}. Take the sizes from x.shape, "
                   "not from variables of the notebook.")
    raise Hint(f"with {where} the values are not where they should be: result[b, i, t] must be "
               f"x[b, t, i*d_k:(i+1)*d_k].")


def _check_split_heads(fn, seed: int) -> None:
    g = generator(seed)  # hidden random cases; a failure prints the seed that repeats them
    for B, T, d, h in [(2, 5, 64, 8), (1, 1, 6, 3), (3, 7, 12, 4), (2, 4, 8, 1), (2, 3, 8, 8), (4, 33, 512, 16)]:
        _check_split_once(fn, torch.randn(B, T, d, generator=g), h)


def check_split_heads(fn, seed: int | None = None):
    """Check ``fn(x, num_heads)``: ``(B, T, d_model) -> (B, h, T, d_k)``, head i = features i*d_k..(i+1)*d_k-1."""
    return report("split_heads", lambda s: _check_split_heads(fn, s), seed)


# ------------------------------------------------------------------ peak_offsets (lesson 04)


def _offset_cases(g: torch.Generator):
    """(name, weights (B, T_out, T_in), lengths (B,)): padded sources whose padded positions hold more
    than any weight (as an unmasked model's would), T_out != T_in, many ties, a length of 1."""
    cases = []
    for B, T_in, extra, ties in [(6, 10, 1, False), (5, 7, 4, False), (4, 6, 1, True), (40, 12, 0, False)]:
        T_out = T_in + extra
        lengths = torch.randint(1, T_in + 1, (B,), generator=g)
        lengths[:3] = torch.tensor([T_in, 1, int(torch.randint(2, T_in, (1,), generator=g))])
        real = torch.arange(T_in) < lengths[:, None, None]  # (B, 1, T_in)
        if ties:  # whole-number scores: equal scores give exactly equal weights; row 0 of each is uniform
            scores = torch.randint(0, 3, (B, T_out, T_in), generator=g).float()
            scores[:, 0] = 0.0
        else:  # a peak on the mirror or beside it, sometimes anywhere
            mirror = lengths[:, None] - 1 - torch.arange(T_out)
            peak = mirror + torch.randint(-1, 2, (B, T_out), generator=g)
            anywhere = (torch.rand(B, T_out, generator=g) * lengths[:, None]).long()
            peak = torch.where(torch.rand(B, T_out, generator=g) < 0.2, anywhere, peak)
            peak = torch.minimum(peak.clamp(min=0), lengths[:, None] - 1)
            scores = torch.randn(B, T_out, T_in, generator=g) + 4 * torch.nn.functional.one_hot(peak, T_in)
        weights = torch.softmax(scores.masked_fill(~real, float("-inf")), -1)
        weights = torch.where(real, weights, 1 + torch.rand(B, T_out, T_in, generator=g))
        kind = "many tied weights, " if ties else ""
        cases.append((f"{kind}weights {(B, T_out, T_in)}, lengths {lengths.tolist()}", weights, lengths))
    return cases


def _is_sequence(x) -> bool:
    return (isinstance(x, torch.Tensor) and x.dim() > 0) or isinstance(x, (list, tuple, np.ndarray))


def _as_offsets(result, lengths: torch.Tensor) -> list[int]:
    """The answer as a flat list of ints: a 1-D tensor/array/list, or one such sequence per example."""
    nested = isinstance(result, (list, tuple)) and len(result) == len(lengths) and all(map(_is_sequence, result))
    out = []
    for part in result if nested else [result]:
        if not _is_sequence(part):
            raise Hint(f"return the offsets as a 1-D tensor or a list, got {type(part).__name__}.")
        for v in (part.detach().cpu().reshape(-1).tolist() if isinstance(part, torch.Tensor)
                  else np.asarray(part).reshape(-1).tolist()):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
                raise Hint(f"an offset is a whole number (a difference of two positions), got {v!r}.")
            out.append(int(v))
    return out


def _check_offsets_once(fn, weights: torch.Tensor, lengths: torch.Tensor, where: str) -> None:
    from ..lesson_plots import anti_diagonal_offsets  # the course's version: answers that call it are refused

    twins = (("anti_diagonal_offsets", anti_diagonal_offsets),)
    got = _as_offsets(_call(fn, (weights, lengths), where, twins), lengths)
    B, T_out, T_in = weights.shape
    steps = torch.arange(T_out) < lengths[:, None]  # (B, T_out): the token steps t < n
    b, t = steps.nonzero(as_tuple=True)  # example after example, t ascending
    n = lengths[b]
    if len(got) != len(b):
        if len(got) == int((lengths + 1).sum()):
            raise Hint("you included the <eos> step t = n: only the n token steps t < n have a mirrored position.")
        if len(got) == B * T_out:
            raise Hint(f"you returned every step of the padded {(B, T_out)} grid: keep only the steps t < n of "
                       "each example (the <eos> step and padded steps have no mirrored position).")
        raise Hint(f"expected {len(b)} offsets (one per token step t < n, example after example), got {len(got)}.")
    got, mirror = torch.tensor(got, dtype=torch.long), n - 1 - t
    real = torch.arange(T_in) < lengths[:, None, None]
    rows = weights[b, t]  # (steps, T_in)
    real_max = weights.masked_fill(~real, float("-inf")).amax(-1)[b, t]

    def hits(pos, limit, best, table=rows):  # (steps,) bool: pos lies in 0..limit-1 on a largest weight
        inside = (pos >= 0) & (pos < limit)
        at = torch.minimum(pos.clamp(min=0), torch.as_tensor(limit) - 1)
        return inside & (table.gather(1, at[:, None]).squeeze(1) == best)

    right = hits(got + mirror, n, real_max)
    if right.all():
        return
    columns = weights.transpose(1, 2)[b, t]  # (steps, T_out): source position t over every output step
    axis = ("wrong axis: you took the argmax over the output steps (axis 1). Row t of weights[b] is output step t: "
            "take the argmax over the source positions, the last axis (dim=-1).")
    mistakes = [
        (got + mirror, T_in, rows.amax(-1), rows, "your peak can land on a padded source position (i >= n): take "
         "the argmax over the n real positions only (weights[b, t, :n]). Here the padded positions hold large "
         "numbers, as they would without a padding mask."),
        (got + T_in - 1 - t, n, real_max, rows, "the mirrored position uses each example's own length n = "
         "lengths[b], not the padded width T_in = weights.shape[-1]: it is n - 1 - t."),
        (got + T_in - 1 - t, T_in, rows.amax(-1), rows, "the mirrored position uses each example's own length "
         "n = lengths[b], not the padded width T_in, and the argmax must skip the padded positions i >= n."),
        (got + 1 + mirror, n, real_max, rows, "off by one: every offset is 1 too small. Positions count from 0, "
         "so the mirrored position of step t is n - 1 - t (n - t is the 1-based formula)."),
        (got - 1 + mirror, n, real_max, rows, "off by one: every offset is 1 too large. The peak (argmax) and the "
         "mirrored position n - 1 - t both count from 0: do not add 1 to either."),
        (got + 2 + mirror, n, real_max, rows, "off by two: n + 1 - t is the mirror when positions count from 1, "
         "but argmax counts from 0: use n - 1 - t."),
        (mirror - got, n, real_max, rows, "the sign is flipped: the offset is the peak position minus the "
         "mirrored position, peak - (n - 1 - t), so a peak to the right of the mirror gives +1."),
        (got + mirror, n, columns.masked_fill(~steps[b], float("-inf")).amax(-1), columns, axis),  # w[b, :n, :n]
        (got + mirror, T_out, columns.amax(-1), columns, axis),  # weights.argmax(1)
    ]
    for pos, limit, best, table, hint in mistakes:
        if hits(pos, limit, best, table).all():
            raise Hint(hint)
    k = int((~right).nonzero()[0])
    raise Hint(f"at example {int(b[k])}, step {int(t[k])} (n = {int(n[k])}, mirrored position {int(mirror[k])}): "
               f"offset {int(got[k])} does not point at a largest weight among positions 0..n-1 "
               f"(weights {[round(w, 3) for w in rows[k, : n[k]].tolist()]}).")


def _check_peak_offsets(fn, seed: int) -> None:
    for where, weights, lengths in _offset_cases(generator(seed)):  # hidden: the seed repeats them
        try:
            _check_offsets_once(fn, weights, lengths, where)
        except Hint as hint:
            hint.case = hint.case or ("" if where in str(hint) else where)  # name the case once
            raise


def check_peak_offsets(fn, seed: int | None = None):
    """Check ``fn(weights (B, T_out, T_in), lengths (B,)) -> offsets``: for every example b and token step
    t < n = lengths[b], the position of the largest weight among the real positions i < n minus the mirrored
    position n - 1 - t, example after example (a 1-D tensor or list; one sequence per example is fine too).
    Where a row has several largest weights, an offset to any of them is right."""
    return report("peak_offsets", lambda s: _check_peak_offsets(fn, s), seed)
