"""Checkers for exercise 05: the causal mask and masked attention (the leak test: ``leaks``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...core.attention import scaled_dot_product_attention as _course_attention
from ...core.masks import causal_mask as _course_causal_mask
from .report import Hint, StudentCrash, call, error_tip, expect_tensor, failing_case, generator, report


def _causal_reference(n: int) -> torch.Tensor:
    """``(n, n)`` bool, True on and below the diagonal: query i may attend keys 0..i."""
    return torch.ones(n, n, dtype=torch.bool).tril()


_MASK_TWINS = (("causal_mask", _course_causal_mask), ("causal_mask", _causal_reference))


def _check_causal_mask(fn: Callable[[int], torch.Tensor], seed: int) -> None:
    g = generator(seed)
    extra = sorted({int(v) for v in torch.randint(9, 41, (2,), generator=g)})  # hidden sizes well above 8
    sizes = (1, 2, 3, 5, 8, *extra)
    masks = {}
    for n in sizes:
        mask = call(fn, n, case=f"n={n}", twins=_MASK_TWINS)
        if isinstance(mask, (list, tuple)):
            raise Hint(f"causal_mask({n}) returned a Python {type(mask).__name__}: the task asks for a torch.Tensor.")
        if type(mask).__module__ == "numpy":
            raise Hint(f"causal_mask({n}) returned a NumPy array: the task asks for a torch.Tensor, built with "
                       "torch functions.")
        masks[n] = expect_tensor(mask, f"causal_mask({n})").detach().cpu()
    shapes = {n: tuple(mask.shape) for n, mask in masks.items()}
    wrong = [n for n in sizes if shapes[n] != (n, n)]
    if wrong and len(set(shapes.values())) == 1:
        raise Hint(f"causal_mask(n) has shape {shapes[1]} for every n in {sizes}: the size must come from n (ignoring n).")
    if wrong == [1]:
        raise Hint(f"causal_mask(1) has shape {shapes[1]}, expected (1, 1) (the n=1 edge case): a one-token "
                   "sequence still needs a 2-D mask. Did .squeeze() drop the size-1 axes?")
    if wrong:
        n = wrong[0]
        raise Hint(f"wrong size: causal_mask({n}) has shape {shapes[n]}, expected ({n}, {n}) "
                   "(one row per query, one column per key).", f"n={n}")
    sample = masks[5]
    if sample.dtype.is_floating_point:
        if torch.isinf(sample).any():
            raise Hint("float mask with -inf: that is the additive form (0 / -inf, added to the scores). "
                       "The task asks for the bool form, True = may attend.")
        raise Hint(f"float mask ({sample.dtype}) instead of bool: use dtype=torch.bool or .bool(). PyTorch ADDS a "
                   "float mask to the scores, so 0/1 floats would block nothing.")
    if sample.dtype != torch.bool:
        if set(sample.unique().tolist()) <= {0, 1}:
            raise Hint(f"int mask 0/1 ({sample.dtype}) instead of bool: use dtype=torch.bool. On ints ~ is bitwise "
                       "NOT (~1 = -2, ~0 = -1, both nonzero), so inverting a 0/1 int mask allows everything.")
        raise Hint(f"mask has dtype {sample.dtype}: it should be torch.bool (True = may attend).")
    for n in (8, 5, 3, 2, 1, *extra):  # the largest fixed size first: its pattern is the least ambiguous
        mask, ref = masks[n], _causal_reference(n)
        if torch.equal(mask, ref):
            continue
        ones = torch.ones(n, n, dtype=torch.bool)
        known = [
            (~ref, "inverted triangle: True above the diagonal is the 'True = blocked' convention "
                   "(nn.MultiheadAttention, triu(diagonal=1) in the slides). Here True = may attend."),
            (ones.triu(), "upper triangle: query i would attend keys i..n-1, the future. Rows are queries, "
                          "columns keys; query i may attend keys j <= i: the LOWER triangle."),
            (ones.tril(-1), "diagonal excluded: a token may attend to itself (j <= i, not j < i); "
                            "without the diagonal query 0 has no key at all."),
            (ones.tril(1), "one key of the future allowed: tril(diagonal=1) lets query i see key i+1; "
                           "keep the main diagonal (diagonal=0)."),
            (ones, "all True (all ones): every query may attend every key, the future included: "
                   "that masks nothing."),
            (~ones, "all False: every key is blocked; query i may attend keys 0..i."),
            (torch.eye(n, dtype=torch.bool), "only the diagonal: query i may also attend the earlier keys 0..i-1."),
        ]
        for pattern, hint in known:
            if torch.equal(mask, pattern):
                raise Hint(hint, f"n={n}")
        i, j = (mask != ref).nonzero()[0].tolist()
        count = int((mask != ref).sum())
        raise Hint(f"causal_mask({n})[{i}, {j}] is {bool(mask[i, j])}, expected {bool(ref[i, j])} "
                   f"({count} of the {n * n} entries are wrong): query i may attend key j exactly when j <= i.",
                   f"n={n}")


def check_causal_mask(fn: Callable[[int], torch.Tensor], *, seed: int | None = None):
    """Check ``fn(n)`` returns the ``(n, n)`` bool causal mask, True = may attend, for n = 1, 2, 3, 5, 8
    and two hidden sizes between 9 and 40 (drawn from ``seed``; a fresh one each run by default)."""
    return report("causal_mask", lambda s: _check_causal_mask(fn, s), seed)


def _softmax_masked(scores: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return scores.masked_fill(~mask, float("-inf")).softmax(dim)


def _attention_mistakes(Q, K, V, mask) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    """(hint, weights) of the usual mistakes, for inputs Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v)."""
    d_k = Q.shape[-1]
    raw = Q @ K.transpose(-2, -1)
    scores = raw / d_k**0.5
    mistakes = [
        ("no scaling: divide the scores Q K^T by sqrt(d_k).", lambda: _softmax_masked(raw, mask)),
        ("divided the scores by d_k: the scale is sqrt(d_k).", lambda: _softmax_masked(raw / d_k, mask)),
        ("scaled after the softmax: divide the scores by sqrt(d_k) before the softmax.",
         lambda: _softmax_masked(raw, mask) / d_k**0.5),
        ("mask inverted: masked_fill fills where its condition is True, so fill the blocked keys: "
         "masked_fill(~mask, -inf).", lambda: scores.masked_fill(mask, float("-inf")).softmax(-1)),
        ("blocked scores set to 0 instead of -inf (masked_fill with 0, or scores * mask): exp(0) = 1, "
         "so blocked keys still get weight.", lambda: scores.masked_fill(~mask, 0.0).softmax(-1)),
        ("the mask had no effect: masked_fill returns a NEW tensor, so assign it "
         "(scores = scores.masked_fill(...)) or use masked_fill_.", lambda: scores.softmax(-1)),
        ("mask applied after the softmax: the rows no longer sum to 1. Mask the scores, then softmax.",
         lambda: scores.softmax(-1) * mask),
        ("mask added to the scores: a bool mask is not additive (it adds 1 to allowed keys and blocks "
         "nothing); use masked_fill(~mask, -inf).", lambda: (scores + mask).softmax(-1)),
        ("transposes mixed up: K @ Q^T puts keys on the rows; the scores are Q @ K^T (rows = queries).",
         lambda: _softmax_masked(K @ Q.transpose(-2, -1) / d_k**0.5, mask)),
        ("transposes forgotten: Q @ K multiplies the wrong axes; the scores are Q @ K.transpose(-2, -1).",
         lambda: _softmax_masked(Q @ K / d_k**0.5, mask)),
    ]
    for dim in range(scores.dim() - 1):
        mistakes.append((f"softmax over the wrong axis (dim={dim}, the same as dim={dim - scores.dim()} here): "
                         "use dim=-1, over the keys, so that each query's weights sum to 1.",
                         lambda dim=dim: _softmax_masked(scores, mask, dim)))
    sizes = {"d_v = V.shape[-1]": V.shape[-1], "n (the number of queries)": Q.shape[-2],
             "m (the number of keys)": K.shape[-2], "Q.shape[0]": Q.shape[0]}
    for name, size in sizes.items():
        if size != d_k:
            mistakes.append((f"scaled by sqrt({name}) = sqrt({size}): the scale is sqrt(d_k), "
                             f"d_k = Q.shape[-1] = {d_k}.", lambda size=size: _softmax_masked(raw / size**0.5, mask)))
    return mistakes


_ATTENTION_TWINS = (("scaled_dot_product_attention", _course_attention),)


def _describe(Q, K, V, mask) -> str:
    return f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, mask {tuple(mask.shape)}"


def _implied_scale(weights: torch.Tensor, Q, K, mask) -> float | None:
    """The constant c with weights == softmax(Q K^T / c) on the allowed keys, if one fits every row."""
    raw = (Q @ K.transpose(-2, -1)).double()
    allowed = mask.expand_as(raw) & (weights > 1e-6)
    logs = weights.double().clamp_min(1e-30).log()
    top = raw.masked_fill(~allowed, float("-inf")).argmax(-1, keepdim=True)
    ds = (raw - raw.gather(-1, top))[allowed]
    dl = (logs - logs.gather(-1, top))[allowed]
    keep = ds.abs() > 1e-3
    if keep.sum() < 3 or (dl[keep] == 0).any():
        return None
    c = ds[keep] / dl[keep]
    return c.median().item() if (c - c.median()).abs().max() < 1e-3 * c.median().abs() + 1e-4 else None


def _check_masked_attention_once(fn, Q, K, V, mask, first: bool) -> None:
    inputs = (Q, K, V, mask)
    copies = [t.clone() for t in inputs]
    where = _describe(Q, K, V, mask)
    try:
        result = call(fn, *copies, case=where, twins=_ATTENTION_TWINS)
    except StudentCrash as crash:
        crash.tip = error_tip(crash.error, shapes=False) or (
            "Check the shapes: scores = Q @ K^T is (n, m) and output = weights @ V is (n, d_v)." if first else
            "It works for 2-D inputs: for batched ones use the last two axes only: K.transpose(-2, -1) "
            "(K.T reverses EVERY axis), Q.shape[-1], softmax(dim=-1), and masked_fill (it broadcasts the mask).")
        raise
    for name, before, after in zip("Q K V mask".split(), inputs, copies):
        if not torch.equal(before, after):
            raise Hint(f"your function changed its input {name} in place (e.g. Q /= ...): "
                       "compute new tensors instead (Q / ...).", where)
    if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Hint(f"return a pair (output, weights), got {type(result).__name__}.", where)
    out = expect_tensor(result[0], "output (the first thing you return)")
    weights = expect_tensor(result[1], "weights (the second thing you return)")
    w_shape = (*Q.shape[:-1], K.shape[-2])
    o_shape = (*Q.shape[:-1], V.shape[-1])
    if tuple(weights.shape) == o_shape and tuple(out.shape) == w_shape and w_shape != o_shape:
        raise Hint("output and weights are swapped: return (output, weights).", where)
    if tuple(weights.shape) != w_shape:
        raise Hint(f"the weights should have shape {w_shape} (..., n, m), got {tuple(weights.shape)}.", where)
    if tuple(out.shape) != o_shape:
        raise Hint(f"the output should have shape {o_shape} (..., n, d_v), got {tuple(out.shape)}.", where)
    weights, out = weights.detach().cpu().float(), out.detach().cpu().float()
    expected = _softmax_masked(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, mask)

    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-5, rtol=1e-4, equal_nan=True)

    if not close(weights, expected):
        diff = (weights - expected).abs().flatten().nan_to_num(float("inf")).max().item()
        with failing_case(f"{where}; largest weight error {diff:.3g}"):
            _name_attention_mistake(weights, expected, Q, K, V, mask)
    if not close(out, expected @ V):
        diff = (out - expected @ V).abs().flatten().nan_to_num(float("inf")).max().item()
        raise Hint("the weights are right but the output is not: output = weights @ V.",
                   f"{where}; largest output error {diff:.3g}")


def _name_attention_mistake(weights, expected, Q, K, V, mask) -> None:
    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-5, rtol=1e-4, equal_nan=True)

    for hint, mistake in _attention_mistakes(Q, K, V, mask):
        try:
            candidate = mistake()
        except RuntimeError:  # the mistake needs shapes these inputs do not have
            continue
        if close(weights, candidate):
            raise Hint(hint)
    d_k = Q.shape[-1]
    scale = _implied_scale(weights, Q, K, mask)
    blocked = ~mask.expand_as(weights)
    if scale is not None and abs(scale - d_k**0.5) > 1e-3 and not (blocked.any() and weights[blocked].abs().max() > 1e-6):
        raise Hint(f"your weights are softmax(Q K^T / {scale:.4g}): a fixed number, but the scale is sqrt(d_k) with "
                   f"d_k = Q.shape[-1] (= {d_k} here, so sqrt(d_k) = {d_k ** 0.5:.4g}). Read d_k from the input.")
    if blocked.any() and weights[blocked].abs().max() > 1e-6:
        raise Hint("blocked keys (mask False) get nonzero weight: set their scores to -inf before the softmax.")
    if not torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1]), atol=1e-5):
        raise Hint("the rows of the weights do not sum to 1: softmax over the keys (dim=-1), after masking.")
    raise Hint("the weights differ from softmax(Q K^T / sqrt(d_k)) with blocked keys at -inf.")


def _random_mask(g: torch.Generator, lead: tuple[int, ...], n: int, m: int) -> torch.Tensor:
    """A bool mask of one of three broadcast shapes, every query keeping at least one key."""
    kind = int(torch.randint(3, (1,), generator=g))
    if kind == 0:  # causal for n queries and m keys (top-left triangle), no batch axes
        return torch.ones(n, m, dtype=torch.bool).tril()
    if kind == 1:  # padding: (B, 1, ..., 1, m), each sequence with 1..m real keys
        lengths = torch.randint(1, m + 1, (lead[0],), generator=g)
        lengths[0] = 1  # the boundary: a single real key
        keep = torch.arange(m) < lengths[:, None]
        return keep.reshape(lead[0], *([1] * (len(lead) - 1)), 1, m)
    mask = torch.rand(*lead, n, m, generator=g) < 0.5  # irregular, full shape
    mask[..., torch.randint(m, (1,), generator=g)] = True
    return mask


def _attention_case(g: torch.Generator, lead: tuple[int, ...], n: int, m: int, d_k: int, d_v: int):
    Q, K = torch.randn(*lead, n, d_k, generator=g), torch.randn(*lead, m, d_k, generator=g)
    return Q, K, torch.randn(*lead, m, d_v, generator=g), _random_mask(g, lead, n, m)


def _check_masked_attention(fn, seed: int) -> None:
    g = torch.Generator().manual_seed(505)
    # 1. One square self-attention with the causal mask (Q @ K without a transpose runs here).
    Q, K, V = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g), torch.randn(4, 3, generator=g)
    _check_masked_attention_once(fn, Q, K, V, _causal_reference(4), first=True)
    # 2. A batch, n != m, and a mask that is not causal (each row keeps at least one key).
    #    Every size differs (d_k=3, d_v=7, n=5, m=6, B=2), so that each wrong scale has one name.
    Q, K, V = torch.randn(2, 5, 3, generator=g), torch.randn(2, 6, 3, generator=g), torch.randn(2, 6, 7, generator=g)
    mask = torch.tensor([[1, 0, 1, 1, 0, 1], [0, 1, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0],
                         [0, 0, 0, 0, 0, 1], [1, 1, 0, 1, 1, 1]], dtype=torch.bool)
    _check_masked_attention_once(fn, Q, K, V, mask, first=False)
    # 3. Heads (B, h, n, d_k) with a padding-style mask (B, 1, 1, m): sequence 0 has 2 padding keys.
    Q, K, V = (torch.randn(2, 2, 3, 4, generator=g), torch.randn(2, 2, 5, 4, generator=g),
               torch.randn(2, 2, 5, 2, generator=g))
    keep = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    _check_masked_attention_once(fn, Q, K, V, keep, first=False)
    # 4-5. Hidden random cases: batch and head axes, n != m (9 to 30), all sizes distinct.
    g = generator(seed)
    for lead_dims in (1, 2):
        n, m = (int(v) + 9 for v in torch.randperm(22, generator=g)[:2])  # 9..30 queries and keys
        d_k, d_v, B, h = (int(v) + 2 for v in torch.randperm(7, generator=g)[:4])  # 2..8, all different
        lead = (B, h)[:lead_dims]
        _check_masked_attention_once(fn, *_attention_case(g, lead, n, m, d_k, d_v), first=False)


def check_masked_attention(fn, *, seed: int | None = None):
    """Check ``fn(Q, K, V, mask) -> (output, weights)``: masked scaled dot-product attention, True = may
    attend, on 3 fixed cases and 2 hidden random ones (batch/head axes, n != m, causal, padding or irregular masks)."""
    return report("masked_attention", lambda s: _check_masked_attention(fn, s), seed)


# The leak test lives in ``leaks`` (it builds on the helpers above); re-exported so that every task of 05 is
# reachable from this module, as the grader (tooling/grade.py) expects.
from .leaks import check_leaks_future  # noqa: E402

__all__ = ["check_causal_mask", "check_leaks_future", "check_masked_attention"]
