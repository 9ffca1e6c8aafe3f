"""Checker for exercise 06's ``CrossAttention`` layer: a bank of known mistakes, each computed with the
student's own projections (``_cross_variant``), on fixed and hidden random cases."""

from __future__ import annotations

import torch

from ...core.multihead import MultiHeadAttention
from .report import Hint, StudentCrash, call, expect_tensor, failing_case, generator, report

_LAYER_TWINS = (("MultiHeadAttention", MultiHeadAttention.forward),)

# (description, B, n, m, lengths of the encoder sequences or None for no mask)
_CROSS_LAYER_CASES = (
    ("decoder and encoder of the same length, no mask", 2, 5, 5, None),
    ("same length, encoder padded", 2, 5, 5, (3, 4)),
    ("different lengths (n=3, m=6), encoder padded", 3, 3, 6, (4, 6, 2)),
)
_CROSS_D_MODEL, _CROSS_HEADS = 8, 2

_CROSS_MISTAKES = (  # (mistake, hint); _cross_variant computes each one
    ("swapped", "queries and keys/values are swapped: the queries come from the decoder "
    "(W_q(decoder_states)), the keys and values from the encoder (W_k, W_v of encoder_states)."),
    ("keys from decoder", "the keys come from the decoder: they must come from the encoder, "
    "W_k(encoder_states); each decoder query is compared with the encoder positions it may read."),
    ("values from decoder", "the values come from the decoder: they must come from the encoder, "
    "W_v(encoder_states); what a decoder position reads is encoder content."),
    ("self-attention on encoder", "the queries come from the encoder too, which makes this self-attention "
    "over the encoder: the queries must come from decoder_states."),
    ("self-attention on decoder", "the keys and values come from the decoder too, which makes this "
    "self-attention over the decoder (the encoder is never read): keys and values must come from encoder_states."),
    ("no scaling", "the scores are not scaled: divide Q K^T by sqrt(d_k) before the softmax."),
    ("scaled by d_model", "the scores are divided by sqrt(d_model); each head works in d_k = d_model / num_heads "
    "features, so divide by sqrt(d_k)."),
    ("scaled by d_k", "the scores are divided by d_k; divide them by sqrt(d_k)."),
    ("softmax over queries", "the softmax runs over the wrong axis (the queries): each decoder position's "
    "weights over the encoder positions must sum to 1, so take the softmax over the last axis (dim=-1)."),
    ("mask inverted", "the mask is inverted: in this course True means a real encoder position that MAY be "
    "attended; you blocked the real positions and attended to the padding."),
    ("mask ignored", "padded encoder positions get weight: apply encoder_mask so that they get exactly zero."),
    ("mask on queries", "the mask is applied to the queries (the rows): encoder_mask marks encoder positions, "
    "i.e. keys, the LAST axis of the (B, h, n, m) weights; give it the shape (B, 1, 1, m)."),
    ("mask not unsqueezed", "encoder_mask (B, 1, m) was used without a head axis: against the (B, h, n, m) "
    "scores it lines up as (1, B, 1, m), so head j gets batch item j's mask. Make it (B, 1, 1, m) first "
    "(encoder_mask.unsqueeze(1))."),
    ("masked with 0", "masked scores were set to 0 (or multiplied by the mask): after the softmax a score of 0 "
    "still gets weight. Fill them with -inf or a very negative number before the softmax "
    "(scaled_dot_product_attention(Q, K, V, mask) does this for you)."),
    ("masked after softmax", "the mask was applied after the softmax without renormalising, so the rows no "
    "longer sum to 1: mask the scores before the softmax."),
    ("no output projection", "the output projection is missing: after merging the heads, apply self.W_o."),
    ("merge without transpose", "the heads are merged without moving the head axis back: (B, h, n, d_k) "
    "needs transpose(1, 2) to (B, n, h, d_k) before the reshape to (B, n, d_model)."),
    ("split without transpose", "the heads are split by reshaping straight to (B, h, T, d_k), which mixes "
    "positions and features: view(B, T, h, d_k) first, then transpose(1, 2)."),
    ("weights transposed", "the weights are transposed: return them as (B, h, n, m), rows = decoder queries, "
    "columns = encoder keys."),
)


_HINTS = dict(_CROSS_MISTAKES)


def check_cross_attention(layer_cls: type, *, seed: int | None = None):
    """Task: ``layer_cls(d_model, num_heads)`` is a cross-attention layer (the notebook's ``__init__``
    with ``W_q, W_k, W_v, W_o``) whose ``forward(decoder_states (B, n, d_model), encoder_states
    (B, m, d_model), encoder_mask=None)`` returns ``(output (B, n, d_model), weights (B, h, n, m))``;
    ``encoder_mask`` is ``(B, 1, m)`` bool, True = real encoder position (may be attended).
    Checked on 3 fixed cases and 2 hidden random ones (n != m up to 12, encoder lengths from 1 to m, a second
    layer size d_model=12, num_heads=3).
    """
    return report("CrossAttention", lambda s: _check_cross_layer(layer_cls, s), seed)


def _cross_case_inputs(B: int, n: int, m: int, lengths: tuple[int, ...] | None, g: torch.Generator, d: int):
    dec = torch.randn(B, n, d, generator=g)
    enc = torch.randn(B, m, d, generator=g)
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


def _make_layer(layer_cls: type, d: int, h: int):
    with torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers alone
        torch.manual_seed(0)
        layer = call(layer_cls, d, h, case=f"{layer_cls.__name__}(d_model={d}, num_heads={h})")
    for name in ("W_q", "W_k", "W_v", "W_o"):
        if not isinstance(getattr(layer, name, None), torch.nn.Linear):
            raise Hint(f"keep the given __init__: the layer needs its nn.Linear {name}.")
    if getattr(layer, "num_heads", None) != h:
        raise Hint("keep the given __init__: it stores self.num_heads.")
    return layer


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


def _check_cross_layer(layer_cls: type, seed: int) -> None:
    layers = {(_CROSS_D_MODEL, _CROSS_HEADS): _make_layer(layer_cls, _CROSS_D_MODEL, _CROSS_HEADS)}
    fixed = [(desc, B, n, m, lengths, _CROSS_D_MODEL, _CROSS_HEADS) for desc, B, n, m, lengths in _CROSS_LAYER_CASES]
    solved: list[str] = []
    g_random = generator(seed + 1)
    for k, (desc, B, n, m, lengths, d, h) in enumerate(fixed + _random_layer_cases(seed)):
        if (d, h) not in layers:
            layers[d, h] = _make_layer(layer_cls, d, h)
        layer = layers[d, h]
        g = torch.Generator().manual_seed(k) if k < len(fixed) else g_random
        dec, enc, mask = _cross_case_inputs(B, n, m, lengths, g, d)
        with torch.no_grad(), failing_case(desc):
            try:
                got = call(layer, dec, enc, mask, twins=_LAYER_TWINS)
            except StudentCrash as crash:
                hint = _cross_crash_hint(crash.error, desc, n, m, mask, solved)
                crash.tip = str(hint) if hint is not None else crash.tip
                raise
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                raise Hint("forward must return a pair: (output, weights).")
            out = expect_tensor(got[0], "the output").detach().cpu().float()
            w = expect_tensor(got[1], "the weights").detach().cpu().float()
            _cross_shape_hint(out, w, B, h, n, m, d)
            ref_out, ref_w, rows = _cross_variant(layer, dec, enc, mask)
            if _close_on_rows(out, w, ref_out, ref_w, rows):
                solved.append(desc)
                continue
            for mistake, hint in _CROSS_MISTAKES:
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


def _cross_generic_hint(out, w, ref_out, ref_w, mask, desc: str) -> None:
    finite = w.nan_to_num(0.0)
    for axis, name in _AXES:
        sums = finite.sum(axis)
        ones = (sums - 1).abs() < 1e-4
        if w.shape[axis] > 1 and (ones | (sums.abs() < 1e-6)).all() and ones.any() and (finite >= 0).all():
            raise Hint(f"the softmax runs over the wrong axis: over {name}. Each decoder position's weights over "
                       "the encoder positions must sum to 1: softmax over the last axis (dim=-1).")
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


