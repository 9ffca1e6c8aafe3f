"""Checkers for lesson 05 (the causal mask): ``causal_mask``, ``masked_attention`` and the leak test
``leaks_future`` (whose layers are ``fixtures.LeakLayer``: they record what the answer did with them)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .attention_mistakes import attention_mistakes, describe_weights, implied_scale, softmax_masked
from .compare import ALLCLOSE, Answers, call_unchanged, close, expect_like, largest_difference
from .fixtures import LeakLayer
from .registry import register
from .report import Hint, StudentCrash, call, error_tip, expect_tensor, generator, kind_of

NOTEBOOK = "05_causal_mask"


def _causal_reference(n: int) -> torch.Tensor:
    """``(n, n)`` bool, True on and below the diagonal: query i may attend keys 0..i."""
    return torch.ones(n, n, dtype=torch.bool).tril()


def _mask_patterns(n: int) -> list[tuple[str, torch.Tensor]]:
    ones, ref = torch.ones(n, n, dtype=torch.bool), _causal_reference(n)
    return [
        ("inverted triangle: True above the diagonal is the 'True = blocked' convention (nn.MultiheadAttention, "
         "triu(diagonal=1)). Here True = may attend.", ~ref),
        ("upper triangle: query i would attend keys i..n-1, the future. Rows are queries, columns keys; query i may "
         "attend keys j <= i: the LOWER triangle.", ones.triu()),
        ("diagonal excluded: a token may attend to itself (j <= i, not j < i); without the diagonal query 0 has no "
         "key at all.", ones.tril(-1)),
        ("one key of the future allowed: tril(diagonal=1) lets query i see key i+1; keep the main diagonal "
         "(diagonal=0).", ones.tril(1)),
        ("all True (all ones): every query may attend every key, the future included: that masks nothing.", ones),
        ("all False: every key is blocked; query i may attend keys 0..i.", ~ones),
        ("only the diagonal: query i may also attend the earlier keys 0..i-1.", torch.eye(n, dtype=torch.bool)),
    ]


def _mask_shapes(masks: dict[int, torch.Tensor], sizes: tuple[int, ...]) -> None:
    shapes = {n: tuple(mask.shape) for n, mask in masks.items()}
    wrong = [n for n in sizes if shapes[n] != (n, n)]
    if wrong and len(set(shapes.values())) == 1:
        raise Hint(f"causal_mask(n) has shape {shapes[1]} for every n in {sorted(sizes)}: the size must come from n "
                   "(ignoring n).")
    if wrong == [1]:
        raise Hint(f"causal_mask(1) has shape {shapes[1]}, expected (1, 1) (the n=1 edge case): a one-token sequence "
                   "still needs a 2-D mask. Did .squeeze() drop the size-1 axes?")
    if wrong:
        n = wrong[0]
        raise Hint(f"wrong size: causal_mask({n}) has shape {shapes[n]}, expected ({n}, {n}) (one row per query, one "
                   "column per key).", f"n={n}")


def _mask_dtype(sample: torch.Tensor) -> None:
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


def _mask_otherwise(case) -> str:
    mask, ref = case.got, case.expected
    n = ref.shape[0]
    i, j = (mask != ref).nonzero()[0].tolist()
    return (f"causal_mask({n})[{i}, {j}] is {bool(mask[i, j])}, expected {bool(ref[i, j])} ({int((mask != ref).sum())} of "
            f"the {n * n} entries are wrong): query i may attend key j exactly when j <= i.")


@register("causal_mask", twins={"causal_mask": "course_utils.core.masks.causal_mask"})
def check_causal_mask(fn: Callable[[int], torch.Tensor], seed: int) -> None:
    """Check ``fn(n)`` returns the ``(n, n)`` bool causal mask, True = may attend, for n = 5, 1, 2, 3, 8
    and two hidden sizes between 9 and 40 (drawn from ``seed``; a fresh one each run by default)."""
    g = generator(seed)
    extra = sorted({int(v) for v in torch.randint(9, 41, (2,), generator=g)})  # hidden sizes well above 8
    sizes = (5, 1, 2, 3, 8, *extra)
    masks = {}
    for n in sizes:
        mask = call(fn, n, case=f"n={n}")
        if isinstance(mask, (list, tuple)):
            raise Hint(f"causal_mask({n}) returned a Python {type(mask).__name__}: the task asks for a torch.Tensor.")
        if type(mask).__module__ == "numpy":
            raise Hint(f"causal_mask({n}) returned a NumPy array: the task asks for a torch.Tensor, built with "
                       "torch functions.")
        masks[n] = expect_tensor(mask, f"causal_mask({n})").detach().cpu()
    _mask_shapes(masks, sizes)
    _mask_dtype(masks[5])
    answers = Answers(lambda a, b: isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b),
                      _mask_otherwise)
    for n in (8, 5, 3, 2, 1, *extra):  # the largest fixed size first: its pattern is the least ambiguous
        answers.add(f"n={n}", masks[n], _causal_reference(n), lambda n=n: _mask_patterns(n))
    answers.verdict()


# --- masked_attention ------------------------------------------------------------------------------


def _describe(Q, K, V, mask) -> str:
    return f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}, mask {tuple(mask.shape)}"


def _attention_answer(fn, Q, K, V, mask, first: bool):
    where = _describe(Q, K, V, mask)
    try:
        result = call_unchanged(fn, Q, K, V, mask, names=("Q", "K", "V", "mask"), case=where,
                                tip="compute new tensors instead (Q / ..., not Q /= ...)")
    except StudentCrash as crash:
        crash.tip = error_tip(crash.error, shapes=False) or (
            "Check the shapes: scores = Q @ K^T is (n, m) and output = weights @ V is (n, d_v)." if first else
            "It works for 2-D inputs: for batched ones use the last two axes only: K.transpose(-2, -1) "
            "(K.T reverses EVERY axis), Q.shape[-1], softmax(dim=-1), and masked_fill (it broadcasts the mask).")
        raise
    if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Hint(f"return a pair (output, weights), got {kind_of(result)}.", where)
    out = expect_like(result[0], Q, "output (the first thing you return)", where, why=ALLCLOSE)
    weights = expect_like(result[1], Q, "weights (the second thing you return)", where, why=ALLCLOSE)
    w_shape, o_shape = (*Q.shape[:-1], K.shape[-2]), (*Q.shape[:-1], V.shape[-1])
    if tuple(weights.shape) == o_shape and tuple(out.shape) == w_shape and w_shape != o_shape:
        raise Hint("output and weights are swapped: return (output, weights).", where)
    if tuple(weights.shape) != w_shape:
        raise Hint(f"the weights should have shape {w_shape} (..., n, m), got {tuple(weights.shape)}.", where)
    if tuple(out.shape) != o_shape:
        raise Hint(f"the output should have shape {o_shape} (..., n, d_v), got {tuple(out.shape)}.", where)
    return out.detach().cpu().float(), weights.detach().cpu().float()


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


def _attention_cases(seed: int):
    g = torch.Generator().manual_seed(505)
    # 1. One square self-attention with the causal mask (Q @ K without a transpose runs here).
    Q, K, V = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g), torch.randn(4, 3, generator=g)
    yield Q, K, V, _causal_reference(4)
    # 2. A batch, n != m, and a mask that is not causal; every size differs (d_k=3, d_v=7, n=5, m=6, B=2).
    Q, K, V = torch.randn(2, 5, 3, generator=g), torch.randn(2, 6, 3, generator=g), torch.randn(2, 6, 7, generator=g)
    yield Q, K, V, torch.tensor([[1, 0, 1, 1, 0, 1], [0, 1, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 1],
                                 [1, 1, 0, 1, 1, 1]], dtype=torch.bool)
    # 3. Heads (B, h, n, d_k) with a padding-style mask (B, 1, 1, m): sequence 0 has 2 padding keys.
    Q, K = torch.randn(2, 2, 3, 4, generator=g), torch.randn(2, 2, 5, 4, generator=g)
    V = torch.randn(2, 2, 5, 2, generator=g)
    yield Q, K, V, torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    # 4-5. Hidden random cases: batch and head axes, n != m (9 to 30), all sizes distinct.
    g = generator(seed)
    for lead_dims in (1, 2):
        n, m = (int(v) + 9 for v in torch.randperm(22, generator=g)[:2])
        d_k, d_v, B, h = (int(v) + 2 for v in torch.randperm(7, generator=g)[:4])  # 2..8, all different
        lead = (B, h)[:lead_dims]
        Q, K = torch.randn(*lead, n, d_k, generator=g), torch.randn(*lead, m, d_k, generator=g)
        yield Q, K, torch.randn(*lead, m, d_v, generator=g), _random_mask(g, lead, n, m)


@register("masked_attention",
          twins={"scaled_dot_product_attention": "course_utils.core.attention.scaled_dot_product_attention"})
def check_masked_attention(fn, seed: int) -> None:
    """Check ``fn(Q, K, V, mask) -> (output, weights)``: masked scaled dot-product attention, True = may
    attend, on 3 fixed cases and 2 hidden random ones (batch/head axes, n != m, causal, padding or irregular masks)."""
    inputs = {}

    def otherwise(case) -> str:
        Q, K, mask = inputs[case.description]
        return describe_weights(case.got, case.expected, lambda: implied_scale(case.got, Q, K, mask), Q.shape[-1])

    weights = Answers(lambda a, b: close(a, b, nan_ok=True), otherwise)
    outputs = Answers(lambda a, b: close(a, b, nan_ok=True),
                      lambda case: "the weights are right but the output is not: output = weights @ V.")
    for k, (Q, K, V, mask) in enumerate(_attention_cases(seed)):
        out, w = _attention_answer(fn, Q, K, V, mask, first=k == 0)
        expected = softmax_masked(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, mask)
        where = _describe(Q, K, V, mask)
        if not close(w, expected):
            where += f"; largest weight error {largest_difference(w, expected):.3g}"
        inputs[where] = (Q, K, mask)
        weights.add(where, w, expected, lambda a=(Q, K, V, mask): attention_mistakes(*a))
        error = "" if close(out, expected @ V) else f"; largest output error {largest_difference(out, expected @ V):.3g}"
        outputs.add(_describe(Q, K, V, mask) + error, out, expected @ V)
    weights.verdict()
    outputs.verdict()


def _diagnose_missed(rec: LeakLayer, source: int | None, hint: str, n: int) -> str:
    """Why a leak was missed, from what the student's function did with the layer."""
    if rec.calls == 0:
        return hint + " Your function never ran attn_fn: run it on x and on changed copies of x."
    if not rec.changes:
        return hint + " Your function never ran attn_fn on a changed input: x2 = x is the same tensor, so " \
                      "both runs see the same input; use x.clone() and change the copy."
    if source is not None and source not in rec.changed_positions():
        return hint + f" Your function never changed token {source} (n = {n}): change every position t = 1..n-1."
    return hint


def _leak_cases(seed: int) -> list[tuple[LeakLayer, bool, int | str | None, str]]:
    """(layer, leaks?, the future position the leak comes from, hint when the answer is wrong): 7 fixed
    layers on a (6, 4) input, then 3 on a hidden random longer one (causal, and leaks near and far)."""
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(5))
    cases = [
        (LeakLayer("causal", x), False, None, "says a CAUSAL attention leaks. Compare only outputs 0..t-1, BEFORE the "
         "position t you changed: output t itself and later ones may change."),
        (LeakLayer("running mean", x), False, None, "says a running mean (output t = mean of x[0..t]) leaks. Compare "
         "only the outputs before the position you changed."),
        (LeakLayer("unmasked", x), True, None, "says attention WITHOUT a mask does not leak."),
        (LeakLayer("extra key", x, (0, 1)), True, 1, "missed a leak from token 1 into output 0: a leak can come from any "
         "future position, so change every position t = 1..n-1 (not only the last) and compare outputs 0..t-1."),
        (LeakLayer("extra key", x, (-2, -1)), True, -1, "missed a leak from the LAST token into output n-2: does your "
         "loop reach t = n-1, with n = x.shape[0] (not a fixed length)?"),
        (LeakLayer("small leak", x), True, "small", ""),
        (LeakLayer("mean leak", x), True, None, "missed a leak that is not in the attention weights (the layer adds the "
         "mean over the whole sequence)."),
    ]
    g = generator(seed)
    n = int(torch.randint(7, 21, (1,), generator=g))
    x = torch.randn(n, 4, generator=g)
    i, j = sorted(torch.randperm(n, generator=g)[:2].tolist())  # query i sees key j > i: any distance
    far = int(torch.randint(0, n // 2, (1,), generator=g))  # query far..., key n-1-... at least n/2 apart
    far_j = int(torch.randint(far + (n + 1) // 2, n, (1,), generator=g))
    cases.append((LeakLayer("causal", x), False, None, f"says a CAUSAL attention leaks (n = {n}). Compare only outputs "
                  "0..t-1, before the position you changed."))
    for q, k in ((i, j), (far, far_j)):
        cases.append((LeakLayer("extra key", x, (q, k)), True, k, f"missed a leak from token {k} into output {q} (n = "
                      f"{n}, {k - q} positions apart): change every position t = 1..n-1 of x, with n = x.shape[0], and "
                      "compare outputs 0..t-1."))
    return cases


@register("leaks_future")
def check_leaks_future(fn, seed: int) -> None:
    """Check ``fn(attn_fn, x) -> bool`` on 7 fixed layers that do or do not let the future leak into earlier
    outputs, and on 3 hidden random ones (n from 7 to 20; a leak from a random future key, near and far)."""
    cases = _leak_cases(seed)
    answers = []
    for layer, _, _, _ in cases:
        answer = call_unchanged(fn, layer, layer.x, names=("attn_fn", "x"), case=f"x of shape {tuple(layer.x.shape)}",
                                tip="change a copy, x.clone() (e.g. not x[t] += 1)")
        if isinstance(answer, np.bool_):  # a NumPy bool is a valid yes/no
            answer = bool(answer)
        if not isinstance(answer, bool):
            raise Hint(f"return a Python bool (True = leaks), got {kind_of(answer)}: for a one-element tensor use "
                       ".item() or bool(...).")
        answers.append(answer)
    if all(a != leaks for a, (_, leaks, _, _) in zip(answers, cases)):
        raise Hint("every answer is inverted: return True when an earlier output changes (the layer leaks).")
    for answer, (layer, leaks, source, hint) in zip(answers, cases):
        if answer == leaks:
            continue
        n = layer.x.shape[0]
        case = f"x of shape {tuple(layer.x.shape)}"
        if not leaks:
            raise Hint(hint, case)
        if source == "small":
            if layer.changes and layer.smallest_change() < 0.5:
                raise Hint(f"missed a small leak: you changed a token by only {layer.smallest_change():.1g}, so a leak "
                           "shows up as a change far below the 1e-5 tolerance. Add 1.0 to the token, as the docstring "
                           "says.", case)
            hint = ("missed a small leak (earlier outputs changed by about 1e-3): your tolerance is too loose; any "
                    "change above 1e-5 counts (torch.allclose(..., atol=1e-5, rtol=0)).")
            source = None
        raise Hint(_diagnose_missed(layer, None if source is None else source % n, hint, n), case)
