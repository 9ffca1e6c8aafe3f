"""Checkers for exercise 05: the causal mask, masked attention and a leak test."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .report import Hint, expect_tensor, report


def _causal_reference(n: int) -> torch.Tensor:
    """``(n, n)`` bool, True on and below the diagonal: query i may attend keys 0..i."""
    return torch.ones(n, n, dtype=torch.bool).tril()


def _check_causal_mask(fn: Callable[[int], torch.Tensor]) -> None:
    sizes = (1, 2, 3, 5, 8)
    masks = {}
    for n in sizes:
        mask = fn(n)
        if isinstance(mask, (list, tuple)):
            raise Hint(f"causal_mask({n}) returned a Python {type(mask).__name__}: return a torch.Tensor.")
        if type(mask).__name__ == "ndarray":
            raise Hint(f"causal_mask({n}) returned a NumPy array: build a torch.Tensor with torch functions.")
        masks[n] = expect_tensor(mask, f"causal_mask({n})")
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
                   "(one row per query, one column per key).")
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
    for n in sorted(sizes, reverse=True):  # the largest first: its pattern is the least ambiguous
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
                raise Hint(hint)
        i, j = (mask != ref).nonzero()[0].tolist()
        raise Hint(f"causal_mask({n})[{i}, {j}] is {bool(mask[i, j])}, expected {bool(ref[i, j])}: "
                   "query i may attend key j exactly when j <= i.")


def check_causal_mask(fn: Callable[[int], torch.Tensor]) -> bool:
    """Check ``fn(n)`` returns the ``(n, n)`` bool causal mask, True = may attend, for several n."""
    return report("causal_mask", lambda: _check_causal_mask(fn))


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


def _check_masked_attention_once(fn, Q, K, V, mask, first: bool) -> None:
    inputs = (Q, K, V, mask)
    copies = [t.clone() for t in inputs]
    where = f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, mask {tuple(mask.shape)}"
    try:
        result = fn(*copies)
    except NotImplementedError:
        raise
    except Exception as err:
        tip = ("Check the shapes: scores = Q @ K^T is (n, m) and output = weights @ V is (n, d_v)." if first else
               "It works for 2-D inputs: for batched ones use the last two axes only: K.transpose(-2, -1) "
               "(K.T reverses EVERY axis), Q.shape[-1], softmax(dim=-1), and masked_fill (it broadcasts the mask).")
        raise Hint(f"with {where} your code raised {type(err).__name__}: {err}. {tip}") from None
    for name, before, after in zip("Q K V mask".split(), inputs, copies):
        if not torch.equal(before, after):
            raise Hint(f"your function changed its input {name} in place (e.g. Q /= ...): "
                       "compute new tensors instead (Q / ...).")
    if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Hint(f"return a pair (output, weights), got {type(result).__name__}.")
    out = expect_tensor(result[0], "output (the first thing you return)")
    weights = expect_tensor(result[1], "weights (the second thing you return)")
    w_shape = (*Q.shape[:-1], K.shape[-2])
    o_shape = (*Q.shape[:-1], V.shape[-1])
    if tuple(weights.shape) == o_shape and tuple(out.shape) == w_shape and w_shape != o_shape:
        raise Hint("output and weights are swapped: return (output, weights).")
    if tuple(weights.shape) != w_shape:
        raise Hint(f"with {where} the weights should have shape {w_shape} (..., n, m), got {tuple(weights.shape)}.")
    if tuple(out.shape) != o_shape:
        raise Hint(f"with {where} the output should have shape {o_shape} (..., n, d_v), got {tuple(out.shape)}.")
    expected = _softmax_masked(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, mask)

    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-5, rtol=1e-4, equal_nan=True)

    if not close(weights, expected):
        for hint, mistake in _attention_mistakes(Q, K, V, mask):
            try:
                candidate = mistake()
            except RuntimeError:  # the mistake needs shapes these inputs do not have
                continue
            if close(weights, candidate):
                raise Hint(hint)
        blocked = ~mask.expand_as(weights)
        if blocked.any() and weights[blocked].abs().max() > 1e-6:
            raise Hint("blocked keys (mask False) get nonzero weight: set their scores to -inf before the softmax.")
        if not torch.allclose(weights.sum(-1), torch.ones(w_shape), atol=1e-5):
            raise Hint("the rows of the weights do not sum to 1: softmax over the keys (dim=-1), after masking.")
        diff = (weights - expected).abs().flatten().nan_to_num(float("inf")).max().item()
        raise Hint(f"with {where} the weights differ from softmax(Q K^T / sqrt(d_k)) with blocked keys at -inf "
                   f"(largest difference {diff:.3g}).")
    if not close(out, expected @ V):
        raise Hint("the weights are right but the output is not: output = weights @ V.")


def _check_masked_attention(fn) -> None:
    g = torch.Generator().manual_seed(505)
    # 1. One square self-attention with the causal mask (Q @ K without a transpose runs here).
    Q, K, V = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g), torch.randn(4, 3, generator=g)
    _check_masked_attention_once(fn, Q, K, V, _causal_reference(4), first=True)
    # 2. A batch, n != m, and a mask that is not causal (each row keeps at least one key).
    Q, K, V = torch.randn(2, 5, 3, generator=g), torch.randn(2, 6, 3, generator=g), torch.randn(2, 6, 4, generator=g)
    mask = torch.tensor([[1, 0, 1, 1, 0, 1], [0, 1, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0],
                         [0, 0, 0, 0, 0, 1], [1, 1, 0, 1, 1, 1]], dtype=torch.bool)
    _check_masked_attention_once(fn, Q, K, V, mask, first=False)
    # 3. Heads (B, h, n, d_k) with a padding-style mask (B, 1, 1, m): sequence 0 has 2 padding keys.
    Q, K, V = (torch.randn(2, 2, 3, 4, generator=g), torch.randn(2, 2, 5, 4, generator=g),
               torch.randn(2, 2, 5, 2, generator=g))
    keep = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    _check_masked_attention_once(fn, Q, K, V, keep, first=False)


def check_masked_attention(fn) -> bool:
    """Check ``fn(Q, K, V, mask) -> (output, weights)``: masked scaled dot-product attention, True = may attend."""
    return report("masked_attention", lambda: _check_masked_attention(fn))


def _toy_attention(mask_fn: Callable[[int], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """A self-attention layer ``x (n, d) -> (n, d)`` with fixed weights and the mask ``mask_fn(n)``."""
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


def _check_leaks_future(fn) -> None:
    causal = _toy_attention(_causal_reference)
    cases = [  # (layer, leaks?, hint when the answer is wrong)
        (causal, False, "says a CAUSAL attention leaks. Compare only outputs 0..t-1, BEFORE the position t you "
                        "changed: output t itself and later ones may change."),
        (lambda x: x.cumsum(0) / torch.arange(1, x.shape[0] + 1)[:, None], False,
         "says a running mean (output t = mean of x[0..t]) leaks. Compare only the outputs before the "
         "position you changed."),
        (_toy_attention(lambda n: torch.ones(n, n, dtype=torch.bool)), True,
         "says attention WITHOUT a mask does not leak. Is the changed input really different? x2 = x is the "
         "same tensor, so both runs see the same input: use x.clone() and change the copy."),
        (_toy_attention(_with_extra_key(0, 1)), True,
         "missed a leak from token 1 into output 0: a leak can come from any future position, so change "
         "every position t = 1..n-1 (not only the last) and compare outputs 0..t-1."),
        (_toy_attention(_with_extra_key(-2, -1)), True,
         "missed a leak from the LAST token into output n-2: does your loop reach t = n-1, with "
         "n = x.shape[0] (not a fixed length)?"),
        (lambda x: causal(x) + 1e-3 * x.sum(0), True,
         "missed a small leak (earlier outputs changed by about 1e-3): your tolerance is too loose; "
         "any change above 1e-5 counts."),
        (lambda x: causal(x) + x.mean(0), True,
         "missed a leak that is not in the attention weights (the layer adds the mean over the whole sequence)."),
    ]
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(5))
    answers = []
    for layer, _, _ in cases:
        given = x.clone()
        answer = fn(layer, given)
        if not isinstance(answer, bool):
            raise Hint(f"return a Python bool (True = leaks), got {type(answer).__name__}: "
                       "for a one-element tensor use .item() or bool(...).")
        if not torch.equal(given, x):
            raise Hint("your function changed the input x in place (e.g. x[t] += 1): change a copy, x.clone().")
        answers.append(answer)
    expected = [leaks for _, leaks, _ in cases]
    if all(a != e for a, e in zip(answers, expected)):
        raise Hint("every answer is inverted: return True when an earlier output changes (the layer leaks).")
    for answer, (_, leaks, hint) in zip(answers, cases):
        if answer != leaks:
            raise Hint(hint)


def check_leaks_future(fn) -> bool:
    """Check ``fn(attn_fn, x) -> bool`` on layers that do and do not let the future leak into earlier outputs."""
    return report("leaks_future", lambda: _check_leaks_future(fn))
