"""Instant feedback for the exercise notebooks.

Every checker takes the student's answer (usually a function), prints one line,
a pass or a hint that names the mistake, and returns True only for a correct
answer. An unimplemented stub (``raise NotImplementedError``) gets a friendly
"not implemented yet", never a traceback.

Inside a checker, raise ``Hint("...")`` for a recognised mistake; ``_report``
turns it into the printed line.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class Hint(Exception):
    """A specific, recognised mistake, explained to the student."""


def _report(task: str, check: Callable[[], None]) -> bool:
    """Run ``check``; print a pass, a hint or "not implemented yet"; return whether it passed."""
    try:
        check()
    except NotImplementedError:
        print(f"[not yet] {task}: not implemented yet. Replace the `raise NotImplementedError` line with your code and run the cell again.")
        return False
    except Hint as hint:
        print(f"[try again] {task}: {hint}")
        return False
    except Exception as err:  # the student's code crashed: say how, without a traceback
        print(f"[try again] {task}: your code raised {type(err).__name__}: {err}")
        return False
    print(f"[correct] {task}: well done, every check passed.")
    return True


def _expect_tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {type(value).__name__}.")
    return value


# --- 05 causal mask --------------------------------------------------------


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
        masks[n] = _expect_tensor(mask, f"causal_mask({n})")
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
    return _report("causal_mask", lambda: _check_causal_mask(fn))


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
    out = _expect_tensor(result[0], "output (the first thing you return)")
    weights = _expect_tensor(result[1], "weights (the second thing you return)")
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
    return _report("masked_attention", lambda: _check_masked_attention(fn))


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
    return _report("leaks_future", lambda: _check_leaks_future(fn))


# --- 06 cross-attention ----------------------------------------------------
# Three tasks: predict the shapes, complete a CrossAttention layer, and find the
# encoder position each decoder position reads most. When an answer is wrong,
# the checker compares it with a bank of known mistakes and names the one it matches.

_CROSS_SHAPE_CASES = ((2, 3, 5, 24, 4), (3, 7, 4, 16, 2), (1, 6, 9, 10, 5))  # (B, n, m, d_model, num_heads)


def check_cross_attention_shapes(fn: Callable) -> bool:
    """Task: ``fn(B, n, m, d_model, num_heads)`` returns ``(output_shape, weights_shape)`` of
    multi-head cross-attention with n decoder positions (queries) and m encoder positions (keys, values)."""
    return _report("cross-attention shapes", lambda: _check_cross_shapes(fn))


def _as_shape(value, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(s) for s in value)
    except (TypeError, ValueError):
        raise Hint(f"{what} should be a tuple of ints such as (2, 3), got {value!r}.") from None


def _check_cross_shapes(fn: Callable) -> None:
    solved = []
    for B, n, m, d, h in _CROSS_SHAPE_CASES:
        got = fn(B, n, m, d, h)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Hint("return a pair of shapes, (output_shape, weights_shape), each a tuple of ints.")
        out, w = _as_shape(got[0], "output_shape"), _as_shape(got[1], "weights_shape")
        if out == (B, n, d) and w == (B, h, n, m):
            solved.append((B, n, m, d, h))
            continue
        d_k = d // h
        out_hints = {
            (B, m, d): "the output has one row per query, and the queries come from the decoder: "
            "its length is n (decoder positions), not m (encoder positions).",
            (B, n, d_k): "the layer's output has d_model features, not d_k: the heads' d_k-feature outputs "
            "are concatenated back to d_model features and mixed by W_o.",
            (B, h, n, d_k): "that is the per-head output before the heads are merged; the layer concatenates "
            "the heads (and applies W_o), so its output has no head axis.",
            (n, d): "keep the batch axis: every shape starts with B.",
            (B, n, m): "that is the shape of a weight matrix (n queries x m keys), not of the output: "
            "the output is one d_model-vector per query.",
        }
        w_hints = {
            (B, h, m, n): "the weights are transposed: rows are the n queries (decoder positions), "
            "columns the m keys (encoder positions).",
            (B, n, m): "multi-head attention has one weight matrix per head: keep the head axis.",
            (B, h, n, n): "cross-attention weights are not square: each of the n decoder queries weighs "
            "the m encoder keys (n x n would be the decoder attending to itself).",
            (B, h, m, m): "cross-attention weights are not square: each of the n decoder queries weighs "
            "the m encoder keys (m x m would be the encoder attending to itself).",
            (B, n, h, m): "the head axis comes right after the batch axis, as in split_heads: (B, h, ...).",
            (B, h, n, d_k): "a weight belongs to a (query, key) pair: the last axis counts encoder "
            "positions m, not features d_k.",
            (h, n, m): "keep the batch axis: every shape starts with B.",
        }
        if out != (B, n, d) and out in out_hints:
            raise Hint(out_hints[out])
        if w != (B, h, n, m) and w in w_hints:
            raise Hint(w_hints[w])
        sizes = f"B={B}, n={n}, m={m}, d_model={d}, num_heads={h}"
        if solved:
            raise Hint(
                f"right for B, n, m, d_model, num_heads = {solved[0]} but not for {sizes}: "
                "build the shapes from the arguments, do not type in numbers."
            )
        raise Hint(
            f"for {sizes} you gave output {out} and weights {w}. Think of one output vector per query "
            "and one weight per (head, query, key) triple, for every batch item."
        )


# (description, B, n, m, lengths of the encoder sequences or None for no mask)
_CROSS_LAYER_CASES = (
    ("decoder and encoder of the same length, no mask", 2, 5, 5, None),
    ("same length, encoder padded", 2, 5, 5, (3, 4)),
    ("different lengths (n=3, m=6), encoder padded", 3, 3, 6, (4, 6, 2)),
)
_CROSS_D_MODEL, _CROSS_HEADS = 8, 2

_CROSS_MISTAKES = {  # mistake -> hint; _cross_variant computes each one
    "swapped": "queries and keys/values are swapped: the queries come from the decoder "
    "(W_q(decoder_states)), the keys and values from the encoder (W_k, W_v of encoder_states).",
    "keys from decoder": "the keys come from the decoder: they must come from the encoder, "
    "W_k(encoder_states); each decoder query is compared with the encoder positions it may read.",
    "values from decoder": "the values come from the decoder: they must come from the encoder, "
    "W_v(encoder_states); what a decoder position reads is encoder content.",
    "self-attention on encoder": "the queries come from the encoder too, which makes this self-attention "
    "over the encoder: the queries must come from decoder_states.",
    "self-attention on decoder": "the keys and values come from the decoder too, which makes this "
    "self-attention over the decoder (the encoder is never read): keys and values must come from encoder_states.",
    "no scaling": "the scores are not scaled: divide Q K^T by sqrt(d_k) before the softmax.",
    "scaled by d_model": "the scores are divided by sqrt(d_model); each head works in d_k = d_model / num_heads "
    "features, so divide by sqrt(d_k).",
    "scaled by d_k": "the scores are divided by d_k; divide them by sqrt(d_k).",
    "softmax over queries": "the softmax runs over the wrong axis (the queries): each decoder position's "
    "weights over the encoder positions must sum to 1, so take the softmax over the last axis (dim=-1).",
    "mask inverted": "the mask is inverted: in this course True means a real encoder position that MAY be "
    "attended; you blocked the real positions and attended to the padding.",
    "mask ignored": "padded encoder positions get weight: apply encoder_mask so that they get exactly zero.",
    "mask on queries": "the mask is applied to the queries (the rows): encoder_mask marks encoder positions, "
    "i.e. keys, the LAST axis of the (B, h, n, m) weights; give it the shape (B, 1, 1, m).",
    "mask not unsqueezed": "encoder_mask (B, 1, m) was used without a head axis: against the (B, h, n, m) "
    "scores it lines up as (1, B, 1, m), so head j gets batch item j's mask. Make it (B, 1, 1, m) first "
    "(encoder_mask.unsqueeze(1)).",
    "masked with 0": "masked scores were set to 0 (or multiplied by the mask): after the softmax a score of 0 "
    "still gets weight. Fill them with -inf or a very negative number before the softmax "
    "(scaled_dot_product_attention(Q, K, V, mask) does this for you).",
    "masked after softmax": "the mask was applied after the softmax without renormalising, so the rows no "
    "longer sum to 1: mask the scores before the softmax.",
    "no output projection": "the output projection is missing: after merging the heads, apply self.W_o.",
    "merge without transpose": "the heads are merged without moving the head axis back: (B, h, n, d_k) "
    "needs transpose(1, 2) to (B, n, h, d_k) before the reshape to (B, n, d_model).",
    "split without transpose": "the heads are split by reshaping straight to (B, h, T, d_k), which mixes "
    "positions and features: view(B, T, h, d_k) first, then transpose(1, 2).",
    "weights transposed": "the weights are transposed: return them as (B, h, n, m), rows = decoder queries, "
    "columns = encoder keys.",
}


def check_cross_attention(layer_cls: type) -> bool:
    """Task: ``layer_cls(d_model, num_heads)`` is a cross-attention layer (the notebook's ``__init__``
    with ``W_q, W_k, W_v, W_o``) whose ``forward(decoder_states (B, n, d_model), encoder_states
    (B, m, d_model), encoder_mask=None)`` returns ``(output (B, n, d_model), weights (B, h, n, m))``;
    ``encoder_mask`` is ``(B, 1, m)`` bool, True = real encoder position (may be attended)."""
    return _report("CrossAttention", lambda: _check_cross_layer(layer_cls))


def _cross_case_inputs(B: int, n: int, m: int, lengths: tuple[int, ...] | None, seed: int):
    g = torch.Generator().manual_seed(seed)
    dec = torch.randn(B, n, _CROSS_D_MODEL, generator=g)
    enc = torch.randn(B, m, _CROSS_D_MODEL, generator=g)
    mask = None if lengths is None else (torch.arange(m) < torch.tensor(lengths)[:, None]).unsqueeze(1)  # (B, 1, m)
    return dec, enc, mask


def _cross_variant(layer, dec: torch.Tensor, enc: torch.Tensor, mask: torch.Tensor | None, mistake: str | None = None):
    """Cross-attention with ``layer``'s own projections: the reference (``mistake=None``) or one known mistake.

    Returns ``(output (B, n, d), weights (B, h, n, m), rows (B, n))``: ``rows`` marks the query rows
    worth comparing (those that keep at least one key under this mistake's mask).
    """
    q_src, k_src, v_src = {
        "swapped": (enc, dec, dec),
        "keys from decoder": (dec, dec, enc),
        "values from decoder": (dec, enc, dec),
        "self-attention on encoder": (enc, enc, enc),
        "self-attention on decoder": (dec, dec, dec),
    }.get(mistake, (dec, enc, enc))
    h = layer.num_heads
    d = layer.W_q.out_features
    d_k = d // h

    def split(x: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, h, T, d_k)
        B, T, _ = x.shape
        if mistake == "split without transpose":
            return x.reshape(B, h, T, d_k)
        return x.reshape(B, T, h, d_k).transpose(1, 2)

    Q, K, V = split(layer.W_q(q_src)), split(layer.W_k(k_src)), split(layer.W_v(v_src))
    divisor = {"no scaling": 1.0, "scaled by d_model": d**0.5, "scaled by d_k": float(d_k)}.get(mistake, d_k**0.5)
    scores = Q @ K.transpose(-2, -1) / divisor  # (B, h, n, m)
    keep = None
    if mask is not None and mistake != "mask ignored":
        if mistake == "mask on queries":
            keep = mask.transpose(-2, -1).unsqueeze(1)  # (B, 1, m, 1): marks rows
        elif mistake == "mask not unsqueezed":
            keep = mask.unsqueeze(0)  # (1, B, 1, m): batch axis against the head axis
        else:
            keep = mask.unsqueeze(1)  # (B, 1, 1, m)
        keep = (~keep if mistake == "mask inverted" else keep).expand_as(scores)
    axis = -2 if mistake == "softmax over queries" else -1
    if keep is None:
        weights = torch.softmax(scores, dim=axis)
    elif mistake == "masked with 0":
        weights = torch.softmax(scores.masked_fill(~keep, 0.0), dim=-1)
    elif mistake == "masked after softmax":
        weights = torch.softmax(scores, dim=-1) * keep
    else:
        weights = torch.softmax(scores.masked_fill(~keep, torch.finfo(scores.dtype).min), dim=axis) * keep
    heads = weights @ V  # (B, h, n, d_k)
    B, _, n, _ = heads.shape
    merged = heads.reshape(B, n, d) if mistake == "merge without transpose" else heads.transpose(1, 2).reshape(B, n, d)
    out = merged if mistake == "no output projection" else layer.W_o(merged)
    if mistake == "weights transposed":
        weights = weights.transpose(-2, -1)
    rows = torch.ones(B, n, dtype=torch.bool) if keep is None else keep.any(-1).all(1)
    return out, weights, rows


def _close_on_rows(out, w, ref_out, ref_w, rows) -> bool:
    if out.shape != ref_out.shape or w.shape != ref_w.shape:
        return False
    out, w = torch.nan_to_num(out), torch.nan_to_num(w)  # -inf masking can give NaN where the reference gives 0
    return torch.allclose(out[rows], ref_out[rows], atol=1e-5, rtol=1e-4) and torch.allclose(
        w.transpose(1, 2)[rows], ref_w.transpose(1, 2)[rows], atol=1e-5, rtol=1e-4
    )


def _cross_crash_hint(err: Exception, desc: str, n: int, m: int, mask, solved: list) -> Hint | None:
    text = str(err)
    if mask is None and "NoneType" in text:
        return Hint("encoder_mask=None means 'no mask' (every encoder position may be attended): handle it, "
                    "e.g. with `if encoder_mask is not None:`.")
    if n != m and solved:
        return Hint(f"your layer works when decoder and encoder have the same length but fails in case '{desc}' "
                    f"({type(err).__name__}: {text}). Queries have the decoder's length n, keys and values the "
                    "encoder's length m: reshape each with its own length, and let the mask mark keys (the last axis).")
    if "mask" in text and isinstance(err, ValueError):
        return Hint(f"the mask does not fit the weights ({text}). encoder_mask (B, 1, m) marks encoder positions "
                    "(keys, the last axis): add a head axis so that it broadcasts to (B, h, n, m).")
    if "same length m" in text:
        return Hint(f"{text}. Keys and values must both come from the encoder.")
    if isinstance(err, RuntimeError) and any(s in text for s in ("must match the size", "cannot be multiplied", "Expected size")):
        return Hint(f"a matrix product got mismatched shapes ({text}). The scores are Q @ K.transpose(-2, -1): "
                    "(..., n, d_k) @ (..., d_k, m) -> (..., n, m); then weights @ V: (..., n, m) @ (..., m, d_k).")
    return None


def _check_cross_layer(layer_cls: type) -> None:
    with torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers alone
        torch.manual_seed(0)
        layer = layer_cls(_CROSS_D_MODEL, _CROSS_HEADS)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        if not isinstance(getattr(layer, name, None), torch.nn.Linear):
            raise Hint(f"keep the given __init__: the layer needs its nn.Linear {name}.")
    if getattr(layer, "num_heads", None) != _CROSS_HEADS:
        raise Hint("keep the given __init__: it stores self.num_heads.")
    h, d = _CROSS_HEADS, _CROSS_D_MODEL
    solved: list[str] = []
    for seed, (desc, B, n, m, lengths) in enumerate(_CROSS_LAYER_CASES):
        dec, enc, mask = _cross_case_inputs(B, n, m, lengths, seed)
        with torch.no_grad():
            try:
                got = layer(dec, enc, mask)
            except NotImplementedError:
                raise
            except Exception as err:
                hint = _cross_crash_hint(err, desc, n, m, mask, solved)
                if hint is None:
                    raise
                raise hint from None
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                raise Hint("forward must return a pair: (output, weights).")
            out = _expect_tensor(got[0], "the output").detach().float()
            w = _expect_tensor(got[1], "the weights").detach().float()
            _cross_shape_hint(out, w, B, h, n, m, d)
            ref_out, ref_w, rows = _cross_variant(layer, dec, enc, mask)
            if _close_on_rows(out, w, ref_out, ref_w, rows):
                solved.append(desc)
                continue
            for mistake, hint in _CROSS_MISTAKES.items():
                try:
                    wrong = _cross_variant(layer, dec, enc, mask, mistake)
                except RuntimeError:  # this mistake cannot run on these shapes
                    continue
                if _close_on_rows(out, w, *wrong):
                    raise Hint(hint)
            _cross_generic_hint(out, w, ref_out, ref_w, mask, desc)


def _cross_shape_hint(out, w, B: int, h: int, n: int, m: int, d: int) -> None:
    if out.shape == (B, n, d) and w.shape == (B, h, n, m):
        return
    if out.shape == (B, m, d) and n != m:
        raise Hint(_CROSS_MISTAKES["swapped"] + " The output then has one row per decoder position.")
    if w.shape == (B, n, m):
        raise Hint("return the per-head weights (B, num_heads, n, m), not weights averaged over the heads "
                   "or those of a single head.")
    if w.shape == (B, n, h, h):
        raise Hint("the heads are split without transpose(1, 2): after view(B, T, h, d_k) the head axis must move "
                   "in front of the time axis, otherwise attention runs across heads instead of positions.")
    if w.shape == (B, h, m, n):
        raise Hint(_CROSS_MISTAKES["weights transposed"])
    raise Hint(f"expected output (B, n, d_model) = {(B, n, d)} and weights (B, h, n, m) = {(B, h, n, m)}, "
               f"got {tuple(out.shape)} and {tuple(w.shape)}.")


def _cross_generic_hint(out, w, ref_out, ref_w, mask, desc: str) -> None:
    if out.isnan().any() or w.isnan().any():
        raise Hint(f"your output or weights contain NaN in case '{desc}'.")
    sums = w.sum(-1)
    if (w < -1e-6).any() or (w > 1 + 1e-6).any() or not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        raise Hint("the weights are not probabilities (each row over the encoder positions must be >= 0 and "
                   "sum to 1): return the softmax output, not the scores.")
    if mask is not None and (w * ~mask.unsqueeze(1)).abs().max() > 1e-6:
        raise Hint("padded encoder positions get weight: apply encoder_mask so that they get exactly zero.")
    if torch.allclose(w, ref_w, atol=1e-5, rtol=1e-4):
        raise Hint("your weights are right but the output is not: the values come from encoder_states through W_v, "
                   "the heads are merged with transpose(1, 2) and a reshape, then W_o is applied.")
    diff = (w - ref_w).abs().max().item()
    raise Hint(f"your weights differ from the expected ones in case '{desc}' (max difference {diff:.3g}). Check: "
               "Q = W_q(decoder_states), K = W_k(encoder_states), V = W_v(encoder_states), split into heads, "
               "softmax(Q K^T / sqrt(d_k)) over the encoder axis, padded encoder positions masked.")


_SOURCE_CASES = ((2, 3, 4, 6), (3, 2, 5, 3))  # (B, h, n, m)
_SOURCE_MISTAKES = {  # mistake -> (answer from weights (B, h, n, m), hint)
    "first head only": (lambda w: w[:, 0].argmax(-1), "you used one head only: average the weights over "
                        "all heads (dim=1) first."),
    "last head only": (lambda w: w[:, -1].argmax(-1), "you used one head only: average the weights over "
                       "all heads (dim=1) first."),
    "max over heads": (lambda w: w.amax(1).argmax(-1), "you took the maximum over the heads: average the weights "
                       "over the heads (mean over dim=1), then take the argmax."),
    "vote": (lambda w: w.argmax(-1).mode(1).values, "you let every head vote with its own argmax: average the "
             "weights over the heads first, then take one argmax."),
    "argmin": (lambda w: w.mean(1).argmin(-1), "argmin gives the encoder position with the SMALLEST weight: "
               "use argmax."),
    "one-based": (lambda w: w.mean(1).argmax(-1) + 1, "positions count from 0: return the index argmax gives, "
                  "without adding 1."),
}


def check_strongest_source(fn: Callable) -> bool:
    """Task: ``fn(weights (B, h, n, m)) -> (B, n)`` integer tensor: for every decoder position, the
    encoder position with the largest weight after averaging over the heads."""
    return _report("strongest_source", lambda: _check_strongest_source(fn))


def _check_strongest_source(fn: Callable) -> None:
    for seed, (B, h, n, m) in enumerate(_SOURCE_CASES):
        g = torch.Generator().manual_seed(100 + seed)
        weights = torch.softmax(2.0 * torch.randn(B, h, n, m, generator=g), dim=-1)
        weights[:, :, :, -1] = 0.0  # a padded encoder position: zero weight everywhere
        weights = weights / weights.sum(-1, keepdim=True)
        got = _expect_tensor(fn(weights.clone()), "the answer")
        expected = weights.mean(1).argmax(-1)  # (B, n)
        if got.dtype.is_floating_point:
            raise Hint("return positions (integer indices, as argmax gives), not weights (as max or amax give).")
        shape_hints = {
            (B, m): "you took the argmax over the decoder axis: for each decoder position (a row of the n x m "
            "matrix) look along its row, i.e. argmax over the last axis (encoder positions).",
            (B, h, n): "one answer per decoder position, not per head: average the weights over the head "
            "axis (dim=1) before the argmax.",
            (B, n, m): "you took the argmax over the head axis: average over the heads (dim=1), then take the "
            "argmax over the encoder positions (the last axis).",
            (n,): "keep the batch axis: you combined the batch items too; the answer is (B, n).",
            (B,): "one answer per decoder position: take the argmax along each row (the last axis), not over the "
            "whole n x m matrix.",
            (B, h): "you averaged over the decoder positions: average over the heads (dim=1) instead.",
        }
        if tuple(got.shape) != (B, n):
            raise Hint(shape_hints.get(tuple(got.shape), f"expected shape (B, n) = {(B, n)}, got {tuple(got.shape)}."))
        if torch.equal(got.long(), expected):
            continue
        for answer, hint in _SOURCE_MISTAKES.values():
            if torch.equal(got.long(), answer(weights)):
                raise Hint(hint)
        b, i = (got.long() != expected).nonzero()[0].tolist()
        raise Hint(f"for batch item {b}, decoder position {i} the largest head-averaged weight is at encoder "
                   f"position {expected[b, i].item()}, you gave {got[b, i].item()}.")

# --- 07 head patterns ------------------------------------------------------


def _ln(x: float) -> float:
    """Natural log of a number (without importing math into the shared header)."""
    return torch.tensor(float(x), dtype=torch.float64).log().item()


def _head_pattern_inputs() -> list[torch.Tensor]:
    """Two batches of attention weights ``(B, h, n, n)`` (B, h and n all different) with exact zeros."""
    g = torch.Generator().manual_seed(7)
    B, h, n = 3, 4, 5
    scores = 2 * torch.randn(B, h, n, n, generator=g)
    first = scores.softmax(-1)  # head 2 stays a random softmax
    first[:, 0] = torch.nn.functional.one_hot(torch.randint(0, n, (B, n), generator=g), n).float()  # H = 0
    first[:, 1] = 1.0 / n  # uniform: H = log n
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    first[:, 3] = scores[:, 3].masked_fill(~causal, float("-inf")).softmax(-1)  # zeros above the diagonal
    B, h, n = 2, 6, 7
    offset = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # i - j
    scores = 2 * torch.randn(B, h, n, n, generator=g)
    second = scores.softmax(-1)
    second[:, 0] = scores[:, 0].masked_fill(offset.abs() > 1, float("-inf")).softmax(-1)  # neighbours only
    second[:, 1] = (offset == 1).float()  # the previous key (query 0: itself)
    second[:, 1, 0, 0] = 1.0
    second[:, 2] = scores[:, 2].masked_fill(offset < 0, float("-inf")).softmax(-1)  # causal
    return [first, second]


def _row_entropy(w: torch.Tensor) -> torch.Tensor:
    """``(..., n, m) -> (..., n)`` entropy in nats, 0 log 0 = 0."""
    return -(w * torch.where(w > 0, w.log(), torch.zeros_like(w))).sum(-1)


def _key_distance(n: int, signed: bool = False) -> torch.Tensor:
    """``(n, n)`` distance ``|i - j|`` (or ``i - j``) between query i and key j."""
    offset = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).float()
    return offset if signed else offset.abs()


def _entropy_reference(w: torch.Tensor) -> torch.Tensor:
    return _row_entropy(w).mean(dim=(0, 2))


def _distance_reference(w: torch.Tensor) -> torch.Tensor:
    return (w * _key_distance(w.shape[-1])).sum(-1).mean(dim=(0, 2))


def _entropy_mistakes(w: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    B, h, n, m = w.shape
    ref = _entropy_reference(w)
    mean_pattern = w.mean(dim=(0, 2))  # (h, m)
    return [
        ("your values are the expected ones divided by ln 2: that is entropy in bits (log base 2). "
         "This notebook measures entropy in nats: use the natural log, torch.log.", ref / _ln(2)),
        ("your values are the expected ones divided by ln 10: log base 10. Use the natural log, torch.log "
         "(entropy in nats).", ref / _ln(10)),
        ("your entropies are negative: the minus sign is missing. H = -sum_j a_j log a_j, and since log a <= 0 "
         "for 0 < a <= 1, H >= 0.", -ref),
        ("bits and no minus sign: use -sum a log a with the natural log.", -ref / _ln(2)),
        (f"your values are 1/m = 1/{m} of the expected: you took the mean over the keys. The entropy of a row "
         "is a SUM over its keys; only the rows (batch and queries) are averaged.", ref / m),
        (f"your values are {n} times too large: you summed over the queries. Sum over the keys (within a row), "
         "then AVERAGE over batch and queries.", ref * n),
        (f"your values are {B} times too large: you summed over the batch. Average over it.", ref * B),
        (f"your values are {B * n} times too large: you summed over batch and queries; average over them.",
         ref * B * n),
        (f"your values are divided by log m = log {m}: that is the normalised entropy (1 = uniform). "
         "Return the plain entropy in nats.", ref / _ln(m)),
        ("you took the entropy of the AVERAGE attention pattern (mean over batch and queries first, then the "
         "entropy). Compute the entropy of every row first, then average: a head whose every query looks at its "
         "own neighbour is sharp (low entropy) although its average pattern is spread out.",
         _row_entropy(mean_pattern)),
    ]


def _distance_mistakes(w: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    B, h, n, m = w.shape
    ref = _distance_reference(w)
    signed = _key_distance(n, signed=True)
    j = torch.arange(m).float()
    nearest = w.argmax(-1)  # (B, h, n) most-attended key
    i = torch.arange(n)[None, None, :]
    return [
        ("signed distance i - j: keys before and after the query cancel out. Use the absolute value |i - j|.",
         (w * signed).sum(-1).mean(dim=(0, 2))),
        ("signed distance j - i: keys before and after the query cancel out. Use the absolute value |i - j|.",
         (w * -signed).sum(-1).mean(dim=(0, 2))),
        ("every head gets the same value: you averaged |i - j| over all (query, key) pairs without the "
         "attention weights. Weight each distance by the attention it gets: sum_j a_ij |i - j|.",
         _key_distance(n).mean().expand(h)),
        (f"your values are 1/{m} of the expected: you took the mean over the keys (or divided by the length). "
         "The weights of a row already sum to 1, so SUM a_ij |i - j| over the keys; distances are in positions.",
         ref / m),
        (f"your values are divided by n - 1 = {n - 1}: a distance as a fraction of the longest one. Report it "
         "in positions.", ref / (n - 1)),
        ("you weighted squared distances (i - j)^2: use |i - j|.", (w * signed**2).sum(-1).mean(dim=(0, 2))),
        ("you used only the most-attended key of each query (argmax): weight every key's distance by its "
         "attention, sum_j a_ij |i - j|.", (nearest - i).abs().float().mean(dim=(0, 2))),
        ("you weighted the key positions j, not the distances: subtract the query position, |i - j|.",
         (w * j).sum(-1).mean(dim=(0, 2))),
        (f"your values are {n} times too large: you summed over the queries. Average over batch and queries.",
         ref * n),
        (f"your values are {B} times too large: you summed over the batch. Average over it.", ref * B),
        (f"your values are {B * n} times too large: you summed over batch and queries; average over them.",
         ref * B * n),
    ]


def _per_head_shape_hint(shape: tuple[int, ...], B: int, h: int, n: int) -> str:
    known = {
        (): "a single number: you averaged over the heads too",
        (B,): "one value per batch item: you averaged over the heads (and queries)",
        (n,): "one value per query position: you averaged over the heads instead of over the queries",
        (B, h): "one value per (batch item, head): average over the batch too",
        (h, n): "one value per (head, query): average over the queries too",
        (B, h, n): "one value per row: average over the batch and the queries",
        (B, n): "one value per (batch item, query): you averaged over the heads, which must stay",
        (h, 1): "shape (h, 1): drop the kept dimension (no keepdim=True)",
    }
    what = known.get(shape, "not one value per head")
    return f"for weights of shape ({B}, {h}, {n}, {n}) (B, h, n, m) expected shape ({h},) (h,), got {shape}: {what}."


def _check_per_head(fn, name: str, reference, mistakes) -> None:
    for w in _head_pattern_inputs():
        B, h, n, _ = w.shape
        given = w.clone()
        try:
            result = fn(given)
        except NotImplementedError:
            raise
        except Exception as err:
            raise Hint(f"with weights of shape {tuple(w.shape)} (B, h, n, m) your code raised "
                       f"{type(err).__name__}: {err}. Read the sizes from weights.shape; "
                       "don't hard-code them.") from None
        if not torch.equal(given, w):
            raise Hint(f"{name} changed the weights you passed in (an in-place edit such as w[w == 0] = 1 or "
                       "w.log_()): compute new tensors and leave the caller's weights alone.")
        if type(result).__name__ == "ndarray" or isinstance(result, (list, tuple, float)):
            kind = "NumPy array" if type(result).__name__ == "ndarray" else f"Python {type(result).__name__}"
            raise Hint(f"{name} returned a {kind}: return a torch.Tensor of shape (h,).")
        result = _expect_tensor(result, f"the result of {name}")
        if tuple(result.shape) != (h,):
            raise Hint(_per_head_shape_hint(tuple(result.shape), B, h, n))
        result = result.detach().double()
        if torch.isnan(result).any():
            raise Hint("NaN in your result: some weights are exactly 0, and log(0) = -inf, 0 * -inf = NaN. A term "
                       "0 * log 0 counts as 0 (its limit): skip zero weights, e.g. with torch.where, or use "
                       "torch.xlogy(w, w), which gives 0 there.")
        expected = reference(w).double()
        if torch.allclose(result, expected, atol=1e-5, rtol=1e-4):
            continue
        for hint, candidate in mistakes(w):
            if torch.allclose(result, candidate.double(), atol=1e-5, rtol=1e-4):
                raise Hint(hint)
        raise Hint(f"for weights of shape {tuple(w.shape)} you returned {[round(v, 4) for v in result.tolist()]}, "
                   f"expected {[round(v, 4) for v in expected.tolist()]}. Compute one number per row (query) of "
                   "every head, then average over the batch and the queries.")


def check_head_entropy(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Check ``fn(weights (B, h, n, m)) -> (h,)``: mean attention entropy per head, in nats, 0 log 0 = 0."""
    return _report("head_entropy", lambda: _check_per_head(fn, "head_entropy", _entropy_reference, _entropy_mistakes))


def check_head_mean_distance(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Check ``fn(weights (B, h, n, n)) -> (h,)``: mean over batch and queries of ``sum_j a_ij |i - j|``."""
    return _report(
        "head_mean_distance", lambda: _check_per_head(fn, "head_mean_distance", _distance_reference, _distance_mistakes)
    )


def _classify_rule(reference_distance: Callable[[int], float], local_below=None, global_above=None,
                   labels=("local", "mixed", "global"), split: str | None = None):
    """A rule: ratio = distance / reference_distance(n) against the thresholds (``split``: only two labels)."""

    def rule(distance: torch.Tensor, n: int, lo: float, hi: float) -> list[str]:
        lo = lo if local_below is None else local_below
        hi = hi if global_above is None else global_above
        out = []
        for d in distance.tolist():
            ratio = d / reference_distance(n)
            if split:
                out.append(labels[0] if ratio < (lo if split == "lo" else hi) else labels[2])
            else:
                out.append(labels[0] if ratio < lo else labels[2] if ratio > hi else labels[1])
        return out

    return rule


def _uniform_distance(n: int) -> float:
    """Mean |i - j| when every query spreads its attention evenly over n keys: (n^2 - 1) / (3n)."""
    return (n * n - 1) / (3 * n)


# (distance, n, local_below, global_above); None thresholds = call with the defaults 0.5, 0.75
_CLASSIFY_CASES = [
    (torch.tensor([0.5, 1.9, 1.995, 2.05, 2.9, 2.99, 3.05, 4.2]), 12, None, None),
    (torch.tensor([0.5, 0.8, 1.5, 2.4, 2.5, 3.0]), 8, 0.3, 0.9),
    (torch.tensor([0.62, 0.64, 0.9, 1.2]), 4, None, None),
]


def _classify_mistakes() -> list[tuple[str, Callable]]:
    return [
        ("local and global are swapped: a SMALL mean distance (ratio below local_below) means local.",
         _classify_rule(_uniform_distance, labels=("global", "mixed", "local"))),
        ("only two labels: a head between the two thresholds is 'mixed' (ratio from local_below to global_above).",
         _classify_rule(_uniform_distance, split="lo")),
        ("only two labels, split at global_above: a ratio below local_below is 'local', from local_below to "
         "global_above 'mixed', above global_above 'global'.",
         _classify_rule(_uniform_distance, split="hi")),
        ("you compared the raw distances with the thresholds: divide each distance by the mean distance of "
         "uniform attention over n positions first.", _classify_rule(lambda n: 1.0)),
        ("your reference distance looks like n / 3: close, but uniform attention over n positions has mean "
         "distance slightly below n / 3. Compute it exactly, e.g. with your head_mean_distance on uniform weights.",
         _classify_rule(lambda n: n / 3)),
        ("your reference distance looks like n / 2: that is about the largest distance, not the mean distance "
         "of uniform attention. Compute it, e.g. with your head_mean_distance on uniform weights (all 1/n).",
         _classify_rule(lambda n: n / 2)),
        ("your reference distance looks like (n - 1) / 2: uniform attention has a smaller mean distance. Compute "
         "it, e.g. with your head_mean_distance on uniform weights (all 1/n).", _classify_rule(lambda n: (n - 1) / 2)),
        ("your reference distance looks like (n + 1) / 3, the mean over pairs with j != i: uniform attention also "
         "gives weight 1/n to the query's own position (distance 0).", _classify_rule(lambda n: (n + 1) / 3)),
        ("your reference distance ignores n: it is the one for n = 12. Use the n you are given.",
         _classify_rule(lambda n: _uniform_distance(12))),
        ("the thresholds are hard-coded: use the arguments local_below and global_above.",
         _classify_rule(_uniform_distance, local_below=0.5, global_above=0.75)),
    ]


def _call_classify(fn, distance: torch.Tensor, n: int, lo, hi):
    return fn(distance.clone(), n) if lo is None else fn(distance.clone(), n, local_below=lo, global_above=hi)


def _check_classify_heads(fn) -> None:
    answers = []
    for distance, n, lo, hi in _CLASSIFY_CASES:
        call = f"classify_heads({[round(d, 3) for d in distance.tolist()]}, n={n}" + (
            ")" if lo is None else f", local_below={lo}, global_above={hi})")
        try:
            labels = _call_classify(fn, distance, n, lo, hi)
        except NotImplementedError:
            raise
        except Exception as err:
            raise Hint(f"{call} raised {type(err).__name__}: {err}") from None
        if isinstance(labels, torch.Tensor) or not isinstance(labels, (list, tuple)):
            raise Hint(f"return a list of strings ('local', 'mixed' or 'global'), got {type(labels).__name__}.")
        if len(labels) != len(distance):
            raise Hint(f"{call} returned {len(labels)} labels for {len(distance)} heads: one label per head.")
        unknown = {repr(x) for x in labels} - {"'local'", "'mixed'", "'global'"}
        if unknown:
            raise Hint(f"unknown label(s) {sorted(unknown)}: use exactly the strings 'local', 'mixed' and 'global'.")
        answers.append(list(labels))
    expected = [_classify_rule(_uniform_distance)(d, n, lo or 0.5, hi or 0.75) for d, n, lo, hi in _CLASSIFY_CASES]
    if answers == expected:
        return
    for hint, rule in _classify_mistakes():
        if answers == [rule(d, n, lo or 0.5, hi or 0.75) for d, n, lo, hi in _CLASSIFY_CASES]:
            raise Hint(hint)
    for (distance, n, lo, hi), got, want in zip(_CLASSIFY_CASES, answers, expected):
        for k, (g, e) in enumerate(zip(got, want)):
            if g != e:
                raise Hint(f"with n={n}" + ("" if lo is None else f", local_below={lo}, global_above={hi}") +
                           f", a head with mean distance {distance[k].item():g} should be {e!r}, you said {g!r}. "
                           "Compare distance / (mean distance of uniform attention over n positions) with the "
                           "thresholds.")


def check_classify_heads(fn) -> bool:
    """Check ``fn(distance (h,), n, local_below=0.5, global_above=0.75) -> list of 'local'/'mixed'/'global'``."""
    return _report("classify_heads", lambda: _check_classify_heads(fn))

# --- 08 attention vs none --------------------------------------------------

# Hand-made reversal predictions (PAD = 0, EOS = 2, symbols 3..11); each row shows one situation.
_ACC_TARGET = [
    [4, 3, 2, 0, 0, 0, 0],  # source length 2: right
    [5, 6, 7, 2, 0, 0, 0],  # length 3: right, then garbage after <eos> (that must not count)
    [8, 9, 10, 11, 2, 0, 0],  # length 4: every symbol right, but no <eos> (the model did not stop)
    [3, 4, 5, 6, 7, 8, 2],  # length 6: one wrong symbol
    [9, 9, 9, 9, 9, 9, 2],  # length 6: stopped far too early
    [6, 7, 2, 0, 0, 0, 0],  # length 2: both symbols wrong
]
_ACC_PRED = [
    [4, 3, 2, 0, 0, 0, 0],
    [5, 6, 7, 2, 9, 9, 0],
    [8, 9, 10, 11, 11, 11, 11],
    [3, 4, 5, 9, 7, 8, 2],
    [9, 2, 0, 0, 0, 0, 0],
    [7, 6, 2, 0, 0, 0, 0],
]
_ACC_LENGTHS = [2, 3, 4, 6, 6, 2]  # no length 5: only lengths present are keys


def _acc_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.tensor(_ACC_PRED), torch.tensor(_ACC_TARGET), torch.tensor(_ACC_LENGTHS)


def _real(target: torch.Tensor) -> torch.Tensor:
    return target != 0


def _token_acc_ref(pred, target) -> float:
    real = _real(target)
    return ((pred == target) & real).sum().item() / real.sum().item()


def _exact_ref(pred, target) -> float:
    return ((pred == target) | ~_real(target)).all(dim=1).float().mean().item()


def _by_length_ref(pred, target, lengths, metric=_token_acc_ref) -> dict[int, float]:
    return {int(n): metric(pred[lengths == n], target[lengths == n]) for n in torch.unique(lengths).tolist()}


def _token_acc_mistakes(pred, target) -> list[tuple[str, float]]:
    real, right = _real(target), pred == target
    symbols = real & (target != 2)
    per_row = (right & real).sum(1).float() / real.sum(1)
    return [
        ("you counted the padding positions: only positions where the TARGET is not <pad> are tokens.",
         right.float().mean().item()),
        ("you divided by every position, padding included: divide by the number of non-pad target tokens.",
         (right & real).sum().item() / target.numel()),
        ("you chose the positions by the PREDICTION (pred != PAD): which positions count is decided by the "
         "target alone; what the model writes after its <eos> is ignored, a missing token is wrong.",
         (right & (pred != 0)).sum().item() / (pred != 0).sum().item()),
        ("<eos> is a target token too: count it (only <pad> is excluded). A model that does not stop is wrong "
         "at the <eos> position.", (right & symbols).sum().item() / symbols.sum().item()),
        ("you averaged the per-sequence accuracies: pool all tokens of all sequences instead (correct tokens / "
         "all real tokens), so that a long sequence weighs more than a short one.", per_row.mean().item()),
        ("that is the exact-sequence accuracy (whole sequences right): token accuracy counts single tokens.",
         _exact_ref(pred, target)),
    ]


def _exact_mistakes(pred, target) -> list[tuple[str, float]]:
    real, right = _real(target), pred == target
    symbols = real & (target != 2)
    return [
        ("that is the token accuracy: a sequence counts only if ALL its target tokens are right.",
         _token_acc_ref(pred, target)),
        ("you compared the padding positions too: what the model writes where the target is <pad> does not "
         "count (e.g. use (pred == target) | (target == PAD)).", right.all(dim=1).float().mean().item()),
        ("the <eos> position must be right too: a model that never stops, or stops too early, is not exactly right.",
         (right | ~symbols).all(dim=1).float().mean().item()),
        ("you used any() instead of all(): one right token does not make a sequence right.",
         (right & real).any(dim=1).float().mean().item()),
    ]


def _as_number(value, what: str) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise Hint(f"{what} returned a tensor of shape {tuple(value.shape)}: return one number for the whole batch.")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Hint(f"{what} should return a number (a float between 0 and 1), got {type(value).__name__}.")
    return float(value)


def _check_fraction(fn, name: str, reference, mistakes) -> None:
    pred, target, _ = _acc_case()
    checks = [(pred, target), (target.clone(), target)]  # the hand-made case, and a perfect prediction
    for p, t in checks:
        p0, t0 = p.clone(), t.clone()
        got = _as_number(fn(p, t), name)
        if not (torch.equal(p, p0) and torch.equal(t, t0)):
            raise Hint(f"{name} changed its inputs in place: compute new tensors instead.")
        expected = reference(p, t)
        if abs(got - expected) < 1e-6:
            continue
        if abs(got - 100 * expected) < 1e-4:
            raise Hint("you returned a percentage: return a fraction between 0 and 1.")
        for hint, value in mistakes(p, t):
            if abs(got - value) < 1e-6:
                raise Hint(hint)
        if got > 1:
            raise Hint(f"you returned {got:g}, more than 1: return a fraction (divide the count by the total).")
        raise Hint(f"for the example in the checker you returned {got:.4f}, expected {expected:.4f}. "
                   "Compare the prediction with the target only where the target is not <pad>.")


def check_token_accuracy(fn) -> bool:
    """Check ``fn(pred (N, T), target (N, T)) -> float``: right tokens / non-pad target tokens, pooled."""
    return _report("token_accuracy", lambda: _check_fraction(fn, "token_accuracy", _token_acc_ref, _token_acc_mistakes))


def check_exact_match(fn) -> bool:
    """Check ``fn(pred (N, T), target (N, T)) -> float``: fraction of sequences right at every non-pad target position."""
    return _report("exact_match", lambda: _check_fraction(fn, "exact_match", _exact_ref, _exact_mistakes))


def _check_accuracy_by_length(fn) -> None:
    pred, target, lengths = _acc_case()
    try:
        result = fn(pred.clone(), target.clone(), lengths.clone())
    except ZeroDivisionError:
        raise Hint("division by zero: a length with no sequences has no accuracy. Use only the source lengths "
                   "present in the batch (e.g. torch.unique(src_lengths)), not a range of lengths.") from None
    if not isinstance(result, dict):
        raise Hint(f"return a dict {{source length: accuracy}}, got {type(result).__name__}.")
    expected = _by_length_ref(pred, target, lengths)
    keys = list(result)
    if any(isinstance(k, torch.Tensor) for k in keys):
        raise Hint("your keys are tensors: use Python ints, e.g. int(n), so that result[5] finds length 5 "
                   "(a tensor key is never equal to an int key in a dict).")
    if not all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
        raise Hint(f"the keys should be the source lengths as ints, got {[type(k).__name__ for k in keys]}.")
    got_keys, want = set(keys), set(expected)
    if got_keys == {n + 1 for n in want}:
        raise Hint("your lengths are one too large: you counted the target tokens, which include <eos>. "
                   "Use the source lengths you are given.")
    if got_keys == {n - 1 for n in want}:
        raise Hint("your lengths are one too small: use the source lengths you are given.")
    if got_keys > want:
        raise Hint(f"you returned lengths that do not occur ({sorted(got_keys - want)}): only the source lengths "
                   "present in the batch are keys (no 0/0 buckets).")
    if got_keys < want:
        raise Hint(f"lengths {sorted(want - got_keys)} are missing: every source length present in the batch "
                   "needs a key, the shortest and the longest included.")
    if got_keys == set(range(min(got_keys), max(got_keys) + 1)) and got_keys & want:
        raise Hint(f"your keys {sorted(got_keys)} look like a range of lengths, but the source lengths present are "
                   f"{sorted(want)}: a range can skip the longest length (range stops before its end) and include "
                   "lengths with no sequences. Use the lengths present, e.g. torch.unique(src_lengths).")
    if got_keys != want:
        raise Hint(f"your keys {sorted(got_keys)} are not the source lengths present, {sorted(want)}: bucket the "
                   "sequences by the source lengths you are given, not by counting tokens of pred or target.")
    values = {k: _as_number(v, f"the value for length {k}") for k, v in result.items()}
    if all(abs(values[k] - expected[k]) < 1e-6 for k in want):
        return
    variants = [
        ("your values are exact-sequence accuracies: the task asks for TOKEN accuracy per length.",
         _by_length_ref(pred, target, lengths, _exact_ref)),
        ("you counted the padding positions: only positions where the target is not <pad> are tokens.",
         _by_length_ref(pred, target, lengths, lambda p, t: (p == t).float().mean().item())),
        ("you left out the <eos> position: it is a target token too (only <pad> is excluded).",
         _by_length_ref(pred, target, lengths, lambda p, t: ((p == t) & (t > 2)).sum().item() / (t > 2).sum().item())),
        ("every length got the accuracy of the whole batch: compute it over the sequences of that length only.",
         {k: _token_acc_ref(pred, target) for k in want}),
    ]
    for hint, candidate in variants:
        if all(abs(values[k] - candidate[k]) < 1e-6 for k in want):
            raise Hint(hint)
    k = next(k for k in sorted(want) if abs(values[k] - expected[k]) >= 1e-6)
    raise Hint(f"for source length {k} you returned {values[k]:.4f}, expected {expected[k]:.4f}: the token accuracy "
               "of the sequences with that source length.")


def check_accuracy_by_length(fn) -> bool:
    """Check ``fn(pred (N, T), target (N, T), src_lengths (N,)) -> {length: token accuracy}``."""
    return _report("accuracy_by_length", lambda: _check_accuracy_by_length(fn))
