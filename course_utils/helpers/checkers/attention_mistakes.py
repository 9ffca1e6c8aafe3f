"""The known mistakes of attention, shared by the checkers: masked scaled dot-product attention (05's
masked attention, 15's cached attention; each ``(key, hint, weights)`` for ``compare.Answers``) and
a multi-head cross-attention layer computed from its ``state_dict`` (06's ``CrossAttention``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F


def softmax_masked(scores: torch.Tensor, mask: torch.Tensor | None, dim: int = -1) -> torch.Tensor:
    """softmax over ``dim`` with the blocked entries (mask False) at -inf; ``mask=None``: no mask."""
    return (scores if mask is None else scores.masked_fill(~mask, float("-inf"))).softmax(dim)


def scale_mistakes(raw: torch.Tensor, mask, d_k: int, sizes: Mapping[str, int], d_k_is: str = "Q.shape[-1]") -> list[tuple]:
    """Scores divided by sqrt(size) for a size that is not d_k (``sizes``: what the student may have read,
    e.g. ``{"d_v = V.shape[-1]": 7}``); the key names the size, so that cases with other sizes agree."""
    return [(f"scale {name}", f"scaled by sqrt({name}) = sqrt({size}): the scale is sqrt(d_k), d_k = {d_k_is} = "
             f"{d_k}.", lambda size=size: softmax_masked(raw / size**0.5, mask)) for name, size in sizes.items()]


def attention_mistakes(Q, K, V, mask) -> list[tuple]:
    """Mistakes of masked attention for Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v) and a bool mask."""
    d_k = Q.shape[-1]
    raw = Q @ K.transpose(-2, -1)
    scores = raw / d_k**0.5
    mistakes: list[tuple] = [
        ("no scaling: divide the scores Q K^T by sqrt(d_k).", lambda: softmax_masked(raw, mask)),
        ("divided the scores by d_k: the scale is sqrt(d_k).", lambda: softmax_masked(raw / d_k, mask)),
        ("scaled after the softmax: divide the scores by sqrt(d_k) before the softmax.",
         lambda: softmax_masked(raw, mask) / d_k**0.5),
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
         lambda: softmax_masked(K @ Q.transpose(-2, -1) / d_k**0.5, mask)),
        ("transposes forgotten: Q @ K multiplies the wrong axes; the scores are Q @ K.transpose(-2, -1).",
         lambda: softmax_masked(Q @ K / d_k**0.5, mask)),
    ]
    nd = scores.dim()  # a wrong axis counted from the end (dim=-2) or from the start (dim=1): keys for both
    for dim in [*range(-2, -nd - 1, -1), *range(nd - 1)]:
        mistakes.append((f"axis {dim}", f"softmax over the wrong axis (dim={dim % nd}, the same as dim={dim % nd - nd} "
                         "here): use dim=-1, over the keys, so that each query's weights sum to 1.",
                         lambda dim=dim: softmax_masked(scores, mask, dim)))
    sizes = {"d_v = V.shape[-1]": V.shape[-1], "n (the number of queries)": Q.shape[-2],
             "m (the number of keys)": K.shape[-2], "Q.shape[0]": Q.shape[0], "Q.shape[1]": Q.shape[1]}
    return mistakes + scale_mistakes(raw, mask, d_k, sizes)


def implied_scale(weights: torch.Tensor, Q, K, mask) -> float | None:
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


def describe_weights(weights: torch.Tensor, expected: torch.Tensor, scale: Callable[[], float | None], d_k: int) -> str:
    """A factual line about weights no known mistake explains: a fixed scale, blocked keys with weight,
    rows that do not sum to 1, or simply the largest difference."""
    blocked = expected == 0
    leaks = bool(blocked.any()) and weights[blocked].abs().max() > 1e-6
    c = None if leaks else scale()
    if c is not None and abs(c - d_k**0.5) > 1e-3:
        return (f"your weights are softmax(Q K^T / {c:.4g}): a fixed number, but the scale is sqrt(d_k) with d_k = "
                f"Q.shape[-1] (= {d_k} here, so sqrt(d_k) = {d_k ** 0.5:.4g}). Read d_k from the input.")
    if leaks:
        return "blocked keys (mask False) get nonzero weight: set their scores to -inf before the softmax."
    if not torch.allclose(weights.double().sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64), atol=1e-5):
        return "the rows of the weights do not sum to 1: softmax over the keys (dim=-1), after masking."
    return "the weights differ from softmax(Q K^T / sqrt(d_k)) with blocked keys at -inf."


# --- a multi-head cross-attention layer (06) ----------------------------------------------------------

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")
LAYER_MISTAKES = (  # (mistake, hint); _cross_variant computes each one
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



def _linear(params: dict, name: str, x: torch.Tensor) -> torch.Tensor:
    return F.linear(x, params[f"{name}.weight"].to(x.dtype), params.get(f"{name}.bias"))


def layer_variant(params: dict, h: int, dec: torch.Tensor, enc: torch.Tensor, mask, mistake: str | None = None):
    """Cross-attention with the layer's own parameters (``state_dict``): the reference (``mistake=None``) or
    one known mistake. Returns ``(output (B, n, d), weights (B, h, n, m), rows (B, n))``: ``rows`` marks the
    query rows worth comparing (those that keep at least one key under this mistake's mask)."""
    q_src, k_src, v_src = {"swapped": (enc, dec, dec), "keys from decoder": (dec, dec, enc),
                           "values from decoder": (dec, enc, dec), "self-attention on encoder": (enc, enc, enc),
                           "self-attention on decoder": (dec, dec, dec)}.get(mistake, (dec, enc, enc))
    d = params["W_q.weight"].shape[0]
    d_k = d // h

    def split(x: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, h, T, d_k)
        B, T, _ = x.shape
        return x.reshape(B, h, T, d_k) if mistake == "split without transpose" else x.reshape(B, T, h, d_k).transpose(1, 2)

    Q, K, V = (split(_linear(params, name, src)) for name, src in zip(PROJECTIONS, (q_src, k_src, v_src)))
    divisor = {"no scaling": 1.0, "scaled by d_model": d**0.5, "scaled by d_k": float(d_k)}.get(mistake, d_k**0.5)
    scores = Q @ K.transpose(-2, -1) / divisor  # (B, h, n, m)
    keep = None
    if mask is not None and mistake != "mask ignored":
        keep = {"mask on queries": lambda: mask.transpose(-2, -1).unsqueeze(1),  # (B, 1, m, 1): marks rows
                "mask not unsqueezed": lambda: mask.unsqueeze(0)}.get(mistake, lambda: mask.unsqueeze(1))()
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
    out = merged if mistake == "no output projection" else _linear(params, "W_o", merged)
    if mistake == "weights transposed":
        weights = weights.transpose(-2, -1)
    rows = torch.ones(B, n, dtype=torch.bool) if keep is None else keep.any(-1).all(1)
    return out, weights, rows


def close_on_rows(got, variant) -> bool:
    (out, w), (ref_out, ref_w, rows) = got, variant
    if out.shape != ref_out.shape or w.shape != ref_w.shape:
        return False
    out, w = torch.nan_to_num(out), torch.nan_to_num(w)  # -inf masking can give NaN where the reference gives 0
    return torch.allclose(out[rows], ref_out[rows], atol=1e-5, rtol=1e-4) and torch.allclose(
        w.transpose(1, 2)[rows], ref_w.transpose(1, 2)[rows], atol=1e-5, rtol=1e-4)


