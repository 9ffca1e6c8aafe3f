"""Checkers for lesson 06 (cross-attention): the shapes, the ``CrossAttention`` layer and the strongest
source. The layer is judged as a class: the checker constructs it with plain arguments, calls
instances, and reads their parameters through ``state_dict()``; every known mistake is computed with
the student's own parameters, on fixed and hidden random cases, and named only if it explains every case."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .attention_mistakes import LAYER_MISTAKES, PROJECTIONS, close_on_rows, layer_variant
from .compare import Answers, as_int, call_unchanged
from .registry import register
from .report import Hint, StudentCrash, call, call_setup, expect_tensor, failing_case, generator, kind_of

NOTEBOOK = "06_cross_attention"

# --- task 1: shapes ------------------------------------------------------------------------------

_CROSS_SHAPE_CASES = ((2, 3, 5, 24, 4), (3, 7, 4, 16, 2), (1, 6, 9, 10, 5))  # (B, n, m, d_model, num_heads)


def _random_shape_cases(seed: int) -> list[tuple[int, int, int, int, int]]:
    g, cases = generator(seed), []
    for _ in range(2):
        B, h, k = (int(v) + 1 for v in torch.randperm(7, generator=g)[:3])  # 1..7, different
        n, m = (int(v) + 9 for v in torch.randperm(32, generator=g)[:2])  # 9..40, n != m
        d = h * (k + 8)  # d_model divisible by h, and different from n, m, B, h
        cases.append((B, n, m, d, h))
    return cases


def _as_shape(value, what: str) -> tuple[int, ...]:
    """A shape from a tuple, list or torch.Size of integers (NumPy and 0-d torch integers included)."""
    try:
        return tuple(as_int(size) for size in value)
    except (TypeError, ValueError):
        raise Hint(f"{what} should be a tuple of ints such as (2, 3), got {value!r}.") from None


@register("cross-attention shapes", takes="cross_attention_shapes")
def check_cross_attention_shapes(fn: Callable, seed: int) -> None:
    """Task: ``fn(B, n, m, d_model, num_heads)`` returns ``(output_shape, weights_shape)`` of
    multi-head cross-attention with n decoder positions (queries) and m encoder positions (keys, values).
    Checked on 3 fixed and 2 hidden random size sets (all five sizes different, n and m up to 40)."""
    solved = []
    for B, n, m, d, h in (*_CROSS_SHAPE_CASES, *_random_shape_cases(seed)):
        sizes = f"B={B}, n={n}, m={m}, d_model={d}, num_heads={h}"
        got = call(fn, B, n, m, d, h, case=sizes)
        if isinstance(got, torch.Size) or not isinstance(got, (tuple, list)) or len(got) != 2:
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
            raise Hint(out_hints[out], sizes)
        if w != (B, h, n, m) and w in w_hints:
            raise Hint(w_hints[w], sizes)
        if solved:
            raise Hint(
                f"right for B, n, m, d_model, num_heads = {solved[0]} but not for {sizes}: "
                "build the shapes from the arguments, do not type in numbers."
            )
        raise Hint(
            f"for {sizes} you gave output {out} and weights {w}. Think of one output vector per query "
            "and one weight per (head, query, key) triple, for every batch item."
        )


# --- task 2: the layer ----------------------------------------------------------------------------

_HINTS = dict(LAYER_MISTAKES)
# (description, B, n, m, lengths of the encoder sequences or None for no mask)
_CROSS_LAYER_CASES = (
    ("decoder and encoder of the same length, no mask", 2, 5, 5, None),
    ("same length, encoder padded", 2, 5, 5, (3, 4)),
    ("different lengths (n=3, m=6), encoder padded", 3, 3, 6, (4, 6, 2)),
)
_CROSS_D_MODEL, _CROSS_HEADS = 8, 2

def _cross_case_inputs(B: int, n: int, m: int, lengths: tuple[int, ...] | None, g: torch.Generator, d: int):
    dec, enc = torch.randn(B, n, d, generator=g), torch.randn(B, m, d, generator=g)
    mask = None if lengths is None else (torch.arange(m) < torch.tensor(lengths)[:, None]).unsqueeze(1)  # (B, 1, m)
    return dec, enc, mask


def _cross_crash_hint(err: Exception, desc: str, n: int, m: int, mask, solved: list) -> Hint | None:
    text = str(err)
    if mask is None and "NoneType" in text:
        return Hint("encoder_mask=None means 'no mask' (every encoder position may be attended): handle it, "
                    "e.g. with `if encoder_mask is not None:`.")
    if n != m and solved:
        return Hint(f"your layer works when decoder and encoder have the same length but fails in case '{desc}' "
                    f"({type(err).__name__}: {text}). Queries have the decoder's length n, keys and values the "
                    "encoder's length m: reshape each with its own length, and let the mask mark keys (the last axis).")
    if "mask" in text and type(err).__name__ == "ValueError":
        return Hint(f"the mask does not fit the weights ({text}). encoder_mask (B, 1, m) marks encoder positions "
                    "(keys, the last axis): add a head axis so that it broadcasts to (B, h, n, m).")
    if "same length m" in text:
        return Hint(f"{text}. Keys and values must both come from the encoder.")
    shapes = ("must match the size", "cannot be multiplied", "Expected size")
    if type(err).__name__ == "RuntimeError" and any(s in text for s in shapes):
        return Hint(f"a matrix product got mismatched shapes ({text}). The scores are Q @ K.transpose(-2, -1): "
                    "(..., n, d_k) @ (..., d_k, m) -> (..., n, m); then weights @ V: (..., n, m) @ (..., m, d_k).")
    return None


def _make_layer(layer_cls, d: int, h: int):
    name = getattr(layer_cls, "__name__", "CrossAttention")
    with torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers alone
        torch.manual_seed(0)
        layer = call_setup(layer_cls, d, h, case=f"{name}(d_model={d}, num_heads={h})")
    params = call_setup(layer.state_dict, case=f"{name}(d_model={d}, num_heads={h}).state_dict()")
    for proj in PROJECTIONS:
        weight = params.get(f"{proj}.weight") if isinstance(params, dict) else None
        if not isinstance(weight, torch.Tensor) or tuple(weight.shape) != (d, d):
            raise Hint(f"keep the given __init__: the layer needs its nn.Linear {proj} (d_model -> d_model).")
    if getattr(layer, "num_heads", None) != h:
        raise Hint("keep the given __init__: it stores self.num_heads.")
    return layer, {k: v.detach().float() for k, v in params.items() if isinstance(v, torch.Tensor)}


def _random_layer_cases(seed: int) -> list[tuple[str, int, int, int, tuple[int, ...], int, int]]:
    g, cases = generator(seed), []
    for d, h in ((_CROSS_D_MODEL, _CROSS_HEADS), (12, 3)):
        B = int(torch.randint(1, 4, (1,), generator=g))
        n, m = (int(v) + 2 for v in torch.randperm(11, generator=g)[:2])  # 2..12, n != m
        lengths = torch.randint(1, m + 1, (B,), generator=g).tolist()
        lengths[0] = 1  # the boundary: one real encoder position
        if B > 1:
            lengths[-1] = m  # and a sequence without padding
        cases.append((f"hidden random case B={B}, n={n}, m={m}, encoder lengths {lengths}, d_model={d}, "
                      f"num_heads={h}", B, n, m, tuple(lengths), d, h))
    return cases


def _layer_answer(layer, dec, enc, mask, desc, solved):
    B, n, d = dec.shape
    m, h = enc.shape[1], layer.num_heads
    try:
        got = call(layer, dec, enc, mask, case=desc)
    except StudentCrash as crash:
        hint = _cross_crash_hint(crash.error, desc, n, m, mask, solved)
        crash.tip = str(hint) if hint is not None else crash.tip
        raise
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Hint(f"forward must return a pair: (output, weights), got {kind_of(got)}.")
    out = expect_tensor(got[0], "the output").detach().cpu().float()
    w = expect_tensor(got[1], "the weights").detach().cpu().float()
    _cross_shape_hint(out, w, B, h, n, m, d)
    return out, w


@register("CrossAttention", kind="class", twins={"MultiHeadAttention": "course_utils.core.multihead.MultiHeadAttention"})
def check_cross_attention(layer_cls: type, seed: int) -> None:
    """Task: ``layer_cls(d_model, num_heads)`` is a cross-attention layer (the notebook's ``__init__``
    with ``W_q, W_k, W_v, W_o``) whose ``forward(decoder_states (B, n, d_model), encoder_states
    (B, m, d_model), encoder_mask=None)`` returns ``(output (B, n, d_model), weights (B, h, n, m))``;
    ``encoder_mask`` is ``(B, 1, m)`` bool, True = real encoder position (may be attended).
    Checked on 3 fixed cases and 2 hidden random ones (n != m up to 12, encoder lengths from 1 to m, a second
    layer size d_model=12, num_heads=3).
    """
    layers, solved, masks = {}, [], {}
    answers = Answers(close_on_rows,
                      lambda case: _cross_generic_hint(*case.got, *case.expected[:2], masks[case.description]))
    fixed = [(desc, B, n, m, lengths, _CROSS_D_MODEL, _CROSS_HEADS) for desc, B, n, m, lengths in _CROSS_LAYER_CASES]
    g_random = generator(seed + 1)
    for k, (desc, B, n, m, lengths, d, h) in enumerate(fixed + _random_layer_cases(seed)):
        if (d, h) not in layers:
            layers[d, h] = _make_layer(layer_cls, d, h)
        layer, params = layers[d, h]
        g = torch.Generator().manual_seed(k) if k < len(fixed) else g_random
        dec, enc, mask = _cross_case_inputs(B, n, m, lengths, g, d)
        with torch.no_grad(), failing_case(desc):  # the layer gets copies: the reference reads the checker's own
            got = _layer_answer(layer, dec.clone(), enc.clone(), None if mask is None else mask.clone(), desc, solved)
            reference = layer_variant(params, h, dec, enc, mask)
            masks[desc] = mask
            if answers.add(desc, got, reference, lambda a=(params, h, dec, enc, mask): [
                    (name, hint, lambda name=name: layer_variant(*a, name)) for name, hint in LAYER_MISTAKES]):
                solved.append(desc)
    with torch.no_grad():
        answers.verdict()
        _check_dependence(layers[_CROSS_D_MODEL, _CROSS_HEADS][0], generator(seed + 2))


def _check_dependence(layer, g: torch.Generator) -> None:
    """The outputs depend on the inputs as attention's do, whatever the parameters the layer reports: a
    change of one decoder position changes its own output row and no other; a change of a real encoder
    position changes the outputs; a change of a padded one changes nothing. (A layer that ignores its
    inputs, has zero weights or reports other parameters than it uses fails here.)"""
    B, n, m, length = 2, 3, 5, 3
    dec, enc, mask = _cross_case_inputs(B, n, m, (length, m), g, _CROSS_D_MODEL)
    desc = f"a change of one input position (B={B}, n={n}, m={m}, encoder lengths ({length}, {m}))"

    def out(dec_x, enc_x):
        with failing_case(desc):
            return _layer_answer(layer, dec_x.clone(), enc_x.clone(), mask.clone(), desc, [])[0]

    base, bump = out(dec, enc), 1.0 + dec.abs().max()

    def moved(other: torch.Tensor) -> torch.Tensor:  # (B, n): which output rows changed
        return ((other - base).abs() > 1e-5 * (1 + base.abs())).any(-1)

    dec_changed = dec.clone()
    dec_changed[0, 1] += bump
    rows = moved(out(dec_changed, enc))
    expected = torch.zeros(B, n, dtype=torch.bool)
    expected[0, 1] = True
    if not torch.equal(rows, expected):
        raise Hint("a change of decoder position 1 should change its own output row and no other: each output row "
                   "is attention from that position's query (W_q(decoder_states)) over the encoder positions."
                   if rows[0, 1] else "your output does not change when decoder_states change: the queries are "
                   "W_q(decoder_states), and each output row depends on its own decoder position.", desc)
    enc_changed = enc.clone()
    enc_changed[0, 0] += bump
    if not moved(out(dec, enc_changed))[0].any():
        raise Hint("your output does not change when a real encoder position changes: keys and values are "
                   "W_k(encoder_states) and W_v(encoder_states), and the parameters state_dict() reports must be "
                   "the ones forward uses.", desc)
    enc_padded = enc.clone()
    enc_padded[0, length:] += 100 * bump
    if moved(out(dec, enc_padded)).any():
        raise Hint("your output changes when a padded encoder position changes: apply encoder_mask to the scores, "
                   "so that padded positions get exactly zero weight.", desc)


def _cross_shape_hint(out, w, B: int, h: int, n: int, m: int, d: int) -> None:
    if out.shape == (B, n, d) and w.shape == (B, h, n, m):
        return
    if out.shape == (B, m, d) and n != m:
        raise Hint(_HINTS["swapped"] + " The output then has one row per decoder position.")
    if w.shape == (B, n, m):
        raise Hint("return the per-head weights (B, num_heads, n, m), not weights averaged over the heads "
                   "or those of a single head.")
    if w.shape == (B, n, h, h):
        raise Hint("the heads are split without transpose(1, 2): after view(B, T, h, d_k) the head axis must move "
                   "in front of the time axis, otherwise attention runs across heads instead of positions.")
    if w.shape == (B, h, m, n):
        raise Hint(_HINTS["weights transposed"])
    raise Hint(f"expected output (B, n, d_model) = {(B, n, d)} and weights (B, h, n, m) = {(B, h, n, m)}, "
               f"got {tuple(out.shape)} and {tuple(w.shape)}.")


_AXES = ((2, "the decoder positions (the queries, dim=2 or -2)"), (1, "the heads (dim=1)"), (0, "the batch (dim=0)"))


def _cross_generic_hint(out, w, ref_out, ref_w, mask) -> str:
    """A factual line about an answer no known mistake explains."""
    finite = w.nan_to_num(0.0)
    for axis, name in _AXES:
        sums = finite.sum(axis)
        ones = (sums - 1).abs() < 1e-4
        if w.shape[axis] > 1 and (ones | (sums.abs() < 1e-6)).all() and ones.any() and (finite >= 0).all():
            return (f"the softmax runs over the wrong axis: over {name}. Each decoder position's weights over "
                       "the encoder positions must sum to 1: softmax over the last axis (dim=-1).")
    if out.isnan().any() or w.isnan().any():
        return ("your output or weights contain NaN.")
    sums = w.sum(-1)
    if (w < -1e-6).any() or (w > 1 + 1e-6).any() or not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        return ("the weights are not probabilities (each row over the encoder positions must be >= 0 and "
                   "sum to 1): return the softmax output, not the scores.")
    if mask is not None and (w * ~mask.unsqueeze(1)).abs().max() > 1e-6:
        return ("padded encoder positions get weight: apply encoder_mask so that they get exactly zero.")
    if torch.allclose(w, ref_w, atol=1e-5, rtol=1e-4):
        return ("your weights are right but the output is not: the values come from encoder_states through W_v, "
                   "the heads are merged with transpose(1, 2) and a reshape, then W_o is applied.")
    diff = (w - ref_w).abs().max().item()
    return (f"your weights differ from the expected ones (max difference {diff:.3g}). Check: "
               "Q = W_q(decoder_states), K = W_k(encoder_states), V = W_v(encoder_states), split into heads, "
               "softmax(Q K^T / sqrt(d_k)) over the encoder axis, padded encoder positions masked.")


# --- task 3: the strongest source ---------------------------------------------------------------------

_SOURCE_CASES = ((2, 3, 4, 6), (3, 2, 5, 3))  # (B, h, n, m)
_SOURCE_MISTAKES = (  # (answer from weights (B, h, n, m), hint)
    (lambda w: w[:, 0].argmax(-1), "you used one head only: average the weights over all heads (dim=1) first."),
    (lambda w: w[:, -1].argmax(-1), "you used one head only: average the weights over all heads (dim=1) first."),
    (lambda w: w.amax(1).argmax(-1), "you took the maximum over the heads: average the weights over the heads "
                                     "(mean over dim=1), then take the argmax."),
    (lambda w: w.argmax(-1).mode(1).values, "you let every head vote with its own argmax: average the weights "
                                            "over the heads first, then take one argmax."),
    (lambda w: w.mean(1).argmin(-1), "argmin gives the encoder position with the SMALLEST weight: use argmax."),
    (lambda w: w.mean(1).argmax(-1) + 1, "positions count from 0: return the index argmax gives, without adding 1."),
)


def _source_weights(g: torch.Generator, B: int, h: int, n: int, m: int, padded: int) -> torch.Tensor:
    weights = torch.softmax(2.0 * torch.randn(B, h, n, m, generator=g), dim=-1)
    if padded:
        weights[..., m - padded:] = 0.0  # padded encoder positions: zero weight everywhere
    return weights / weights.sum(-1, keepdim=True)


_SOURCE_SHAPES = {  # the shape of an answer -> what it means ((B, h, n, m) weights; the answer is (B, n))
    "B m": "you took the argmax over the decoder axis: for each decoder position (a row of the n x m matrix) look "
           "along its row, i.e. argmax over the last axis (encoder positions).",
    "B h n": "one answer per decoder position, not per head: average the weights over the head axis (dim=1) before "
             "the argmax.",
    "B n m": "you took the argmax over the head axis: average over the heads (dim=1), then take the argmax over the "
             "encoder positions (the last axis).",
    "n": "keep the batch axis: you combined the batch items too; the answer is (B, n).",
    "B": "one answer per decoder position: take the argmax along each row (the last axis), not over the whole n x m "
         "matrix.",
    "B h": "you averaged over the decoder positions: average over the heads (dim=1) instead.",
}


def _source_answer(fn: Callable, weights: torch.Tensor) -> torch.Tensor:
    B, h, n, m = weights.shape
    got = call_unchanged(fn, weights, names=("weights",))
    if type(got).__module__ == "numpy":
        raise Hint("you returned a NumPy array: the task asks for a torch.Tensor (argmax on the tensor gives one).")
    got = expect_tensor(got, "the answer").detach().cpu()
    if got.dtype.is_floating_point or got.is_complex():
        raise Hint("return positions (integer indices, as argmax gives), not weights (as max or amax give).")
    sizes = {"B": B, "h": h, "n": n, "m": m}
    for names, hint in _SOURCE_SHAPES.items():
        if tuple(got.shape) == tuple(sizes[k] for k in names.split()) and tuple(got.shape) != (B, n):
            raise Hint(hint)
    if tuple(got.shape) != (B, n):
        raise Hint(f"expected shape (B, n) = {(B, n)}, got {tuple(got.shape)}.")
    return got.long()


def _source_otherwise(case) -> str:
    got, expected = case.got, case.expected
    b, i = (got != expected).nonzero()[0].tolist()
    return (f"for batch item {b}, decoder position {i} the largest head-averaged weight is at encoder position "
            f"{expected[b, i].item()}, you gave {got[b, i].item()} ({int((got != expected).sum())} of "
            f"{got.numel()} answers differ).")


@register("strongest_source", twins={"strongest_source": "course_utils.core.metrics.strongest_source"})
def check_strongest_source(fn: Callable, seed: int) -> None:
    """Task: ``fn(weights (B, h, n, m)) -> (B, n)`` integer tensor: for every decoder position, the
    encoder position with the largest weight after averaging over the heads. Checked on 2 fixed and
    2 hidden random cases (n != m, m up to 30, padded encoder positions with weight 0)."""
    cases = [(torch.Generator().manual_seed(100 + k), (B, h, n, m), 1) for k, (B, h, n, m) in enumerate(_SOURCE_CASES)]
    g = generator(seed)
    for _ in range(2):
        B, h = (int(v) + 1 for v in torch.randperm(6, generator=g)[:2])
        n, m = (int(v) + 2 for v in torch.randperm(29, generator=g)[:2])
        cases.append((g, (B, h, n, m), int(torch.randint(0, m, (1,), generator=g))))
    answers = Answers(lambda a, b: isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b),
                      _source_otherwise)
    for g_case, (B, h, n, m), padded in cases:
        weights = _source_weights(g_case, B, h, n, m, padded)
        where = f"weights of shape {(B, h, n, m)} (B, h, n, m), {padded} padded encoder position(s)"
        with failing_case(where):
            got = _source_answer(fn, weights)
        answers.add(where, got, weights.mean(1).argmax(-1),
                    lambda w=weights: [(f"source {k}", hint, lambda f=f: f(w))
                                       for k, (f, hint) in enumerate(_SOURCE_MISTAKES)])
    answers.verdict()
