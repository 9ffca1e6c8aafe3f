"""Checker for lesson 15 (the KV cache): ``cached_attention``, the attention of s new queries over t
cached and s new keys, and the extended cache, on an empty cache, one new token, a prompt of several,
a long cache and a hidden random case (every size different)."""

from __future__ import annotations

import torch

from .attention_mistakes import scale_mistakes, softmax_masked
from .compare import Answers, call_unchanged, close, largest_difference
from .registry import register
from .report import Hint, StudentCrash, expect_tensor, failing_case, generator, kind_of

NOTEBOOK = "15_kv_cache"


def _new_rows_mask(t: int, s: int) -> torch.Tensor:
    """``(s, t + s)``: new query i (position t + i) may attend keys 0 .. t + i."""
    return torch.arange(t + s) <= torch.arange(t, t + s)[:, None]


def _mistakes(q, k_cache, v_cache, k_new, v_new) -> list[tuple]:
    t, s, d_k = k_cache.shape[-2], q.shape[-2], q.shape[-1]
    K, V = torch.cat([k_cache, k_new], -2), torch.cat([v_cache, v_new], -2)
    raw = q @ K.transpose(-2, -1)
    scores, mask = raw / d_k**0.5, _new_rows_mask(t, s)
    wrong = [
        ("the new queries attended only to the NEW keys: the cached keys (the whole past) must be part of it.",
         lambda: softmax_masked(q @ k_new.transpose(-2, -1) / d_k**0.5, torch.ones(s, s, dtype=torch.bool).tril()) @ v_new),
        ("the new queries attended only to the OLD cache: append the new keys and values first, then attend.",
         lambda: softmax_masked(q @ k_cache.transpose(-2, -1) / d_k**0.5, None) @ v_cache),
        ("no mask: with several new tokens, new query i saw the new keys after it. New query i sits at position t + i "
         "and may attend keys 0 .. t + i.", lambda: softmax_masked(scores, None) @ V),
        ("mask aligned at the top-left (torch.tril of an (s, t + s) block, or is_causal=True): new query i sits at "
         "position t + i, not i. Take the LAST s rows of causal_mask(t + s).",
         lambda: softmax_masked(scores, torch.ones(s, t + s, dtype=torch.bool).tril()) @ V),
        ("each new query was blocked from its own key (j < position instead of j <= position).",
         lambda: softmax_masked(scores, torch.arange(t + s) < torch.arange(t, t + s)[:, None]) @ V),
        ("no scaling: divide the scores by sqrt(d_k).", lambda: softmax_masked(raw, mask) @ V),
        ("softmax over the wrong axis: use dim=-1, over the keys.", lambda: softmax_masked(scores, mask, -2) @ V),
    ]
    sizes = {"the number of keys t + s": t + s, "d_v = v_new.shape[-1]": v_new.shape[-1]}
    scales = scale_mistakes(raw, mask, d_k, sizes, "q_new.shape[-1]")
    return wrong + [(key, hint, lambda w=w: w() @ V) for key, hint, w in scales]


def _cache_hints(name: str, got, want, old, new, t: int) -> None:
    if got.shape == want.shape and torch.equal(got, want):
        return
    if t > 0 and got.shape == want.shape and torch.equal(got, torch.cat([new, old], -2)):
        raise Hint(f"{name}: the new entries went BEFORE the cached ones; append them at the end (cache first).")
    if got.shape == old.shape and torch.equal(got, old):
        raise Hint(f"{name} is the old cache: return it with the new entries appended along dim=-2.")
    raise Hint(f"{name} should be the cache with the new entries appended along dim=-2, shape {tuple(want.shape)}; "
               f"got shape {tuple(got.shape)}" + (f" and dtype {got.dtype}" if got.dtype != want.dtype else "") + ".")


def _case(fn, B: int, h: int, t: int, s: int, d_k: int, d_v: int, g: torch.Generator, where: str):
    q, k_new = torch.randn(B, h, s, d_k, generator=g), torch.randn(B, h, s, d_k, generator=g)
    v_new = torch.randn(B, h, s, d_v, generator=g)
    k_cache, v_cache = torch.randn(B, h, t, d_k, generator=g), torch.randn(B, h, t, d_v, generator=g)
    try:
        result = call_unchanged(fn, q, k_new, v_new, k_cache, v_cache, case=where,
                                names=("q_new", "k_new", "v_new", "k_cache", "v_cache"))
    except StudentCrash as crash:
        crash.tip = ("Append the new keys and values along the length axis, dim=-2 (an empty cache has length 0 there, "
                     "and torch.cat handles it), and transpose with K.transpose(-2, -1).")
        raise
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise Hint(f"return three things (output, k_all, v_all), got {kind_of(result)}.")
    out, k_all, v_all = (expect_tensor(r, name) for r, name in zip(result, ("output", "k_all", "v_all")))
    K, V = torch.cat([k_cache, k_new], -2), torch.cat([v_cache, v_new], -2)
    _cache_hints("k_all", k_all, K, k_cache, k_new, t)
    _cache_hints("v_all", v_all, V, v_cache, v_new, t)
    expected = softmax_masked(q @ K.transpose(-2, -1) / d_k**0.5, _new_rows_mask(t, s)) @ V
    if tuple(out.shape) != tuple(expected.shape):
        raise Hint(f"the output should have shape {tuple(expected.shape)} (B, h, s, d_v), got {tuple(out.shape)}.")
    if out.dtype != q.dtype:
        raise Hint(f"the output has dtype {out.dtype}, the inputs {q.dtype}: keep the inputs' dtype, as the task says "
                   "(a .double() or a float64 tensor of your own turned it). The cell after the check compares your "
                   "output with a float32 pass through torch.allclose, which raises on two dtypes.")
    return out, expected, (q, k_cache, v_cache, k_new, v_new)


@register("cached_attention")
def check_cached_attention(fn, seed: int) -> None:
    """Check ``fn(q_new, k_new, v_new, k_cache, v_cache) -> (output, k_all, v_all)``: the cached attention step."""
    g = torch.Generator().manual_seed(1515)
    sizes = [(2, 3, 5, 1, 4, 6), (1, 1, 0, 1, 4, 4), (1, 2, 0, 5, 8, 8), (2, 2, 4, 3, 8, 5), (1, 4, 200, 7, 16, 16)]
    hidden = generator(seed)
    t, s, d_k, d_v = (int(v) for v in torch.randperm(12, generator=hidden)[:4] + 1)  # 1..12, all different
    sizes.append((2, 2, t, s, d_k, d_v))
    answers = Answers(lambda a, b: close(a, b, atol=1e-5, rtol=1e-4, nan_ok=True), lambda c: (
        "the output differs from attention over all t + s keys with the causal mask (largest difference "
        f"{largest_difference(c.got, c.expected):.3g})."))
    for k, (B, h, t, s, d_k, d_v) in enumerate(sizes):
        where = f"B={B}, h={h}, t={t} cached, s={s} new, d_k={d_k}, d_v={d_v}"
        with failing_case(where):
            out, expected, inputs = _case(fn, B, h, t, s, d_k, d_v, g if k < 5 else hidden, where)
        answers.add(where, out, expected, lambda a=inputs: _mistakes(*a))
    answers.verdict()
