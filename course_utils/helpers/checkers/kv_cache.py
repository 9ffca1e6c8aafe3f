"""Checker for notebook 15 (KV cache): attention of new queries over cached and new keys."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .report import Hint, expect_tensor, report


def _softmax_rows(scores: torch.Tensor, mask: torch.Tensor | None, dim: int = -1) -> torch.Tensor:
    return (scores if mask is None else scores.masked_fill(~mask, float("-inf"))).softmax(dim)


def _new_rows_mask(t: int, s: int) -> torch.Tensor:
    """``(s, t + s)``: new query i (position t + i) may attend keys 0 .. t + i."""
    return torch.arange(t + s) <= torch.arange(t, t + s)[:, None]


def _mistakes(q, k_cache, v_cache, k_new, v_new) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    t, s, d_k = k_cache.shape[-2], q.shape[-2], q.shape[-1]
    K, V = torch.cat([k_cache, k_new], -2), torch.cat([v_cache, v_new], -2)
    raw = q @ K.transpose(-2, -1)
    scores, mask = raw / d_k**0.5, _new_rows_mask(t, s)
    return [
        ("the new queries attended only to the NEW keys: the cached keys (the whole past) must be part of it.",
         lambda: _softmax_rows(q @ k_new.transpose(-2, -1) / d_k**0.5, torch.ones(s, s, dtype=torch.bool).tril()) @ v_new),
        ("the new queries attended only to the OLD cache: append the new keys and values first, then attend.",
         lambda: _softmax_rows(q @ k_cache.transpose(-2, -1) / d_k**0.5, None) @ v_cache),
        ("no mask: with several new tokens, new query i saw the new keys after it. New query i sits at "
         "position t + i and may attend keys 0 .. t + i.", lambda: _softmax_rows(scores, None) @ V),
        ("mask aligned at the top-left (torch.tril of an (s, t + s) block, or is_causal=True): new query i sits at "
         "position t + i, not i. Take the LAST s rows of causal_mask(t + s).",
         lambda: _softmax_rows(scores, torch.ones(s, t + s, dtype=torch.bool).tril()) @ V),
        ("each new query was blocked from its own key (j < position instead of j <= position).",
         lambda: _softmax_rows(scores, torch.arange(t + s) < torch.arange(t, t + s)[:, None]) @ V),
        ("no scaling: divide the scores by sqrt(d_k).", lambda: _softmax_rows(raw, mask) @ V),
        (f"scaled by sqrt(number of keys) = sqrt({t + s}): the scale is sqrt(d_k) = sqrt({d_k}).",
         lambda: _softmax_rows(raw / (t + s) ** 0.5, mask) @ V),
        ("softmax over the wrong axis: use dim=-1, over the keys.", lambda: _softmax_rows(scores, mask, -2) @ V),
    ]


def _check_case(fn, B: int, h: int, t: int, s: int, d_k: int, d_v: int, g: torch.Generator) -> None:
    q, k_new = torch.randn(B, h, s, d_k, generator=g), torch.randn(B, h, s, d_k, generator=g)
    v_new = torch.randn(B, h, s, d_v, generator=g)
    k_cache, v_cache = torch.randn(B, h, t, d_k, generator=g), torch.randn(B, h, t, d_v, generator=g)
    inputs = (q, k_new, v_new, k_cache, v_cache)
    copies = [x.clone() for x in inputs]
    where = f"(B={B}, h={h}, t={t} cached, s={s} new, d_k={d_k}, d_v={d_v})"
    try:
        result = fn(*copies)
    except NotImplementedError:
        raise
    except Exception as err:
        raise Hint(f"with {where} your code raised {type(err).__name__}: {str(err).rstrip('.')}. Append the new keys and values "
                   "along the length axis, dim=-2 (an empty cache has length 0 there, and torch.cat handles it), "
                   "and transpose with K.transpose(-2, -1).") from None
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise Hint(f"return three things (output, k_all, v_all), got {type(result).__name__}.")
    out, k_all, v_all = (expect_tensor(r, name) for r, name in zip(result, ("output", "k_all", "v_all")))
    for name, before, after in zip(("q_new", "k_new", "v_new", "k_cache", "v_cache"), inputs, copies):
        if not torch.equal(before, after):
            raise Hint(f"your function changed its input {name} in place: compute new tensors instead.")
    K, V = torch.cat([k_cache, k_new], -2), torch.cat([v_cache, v_new], -2)
    for name, got, want, old, new in (("k_all", k_all, K, k_cache, k_new), ("v_all", v_all, V, v_cache, v_new)):
        if got.shape == want.shape and torch.equal(got, want):
            continue
        if t > 0 and got.shape == want.shape and torch.equal(got, torch.cat([new, old], -2)):
            raise Hint(f"{name}: the new entries went BEFORE the cached ones; append them at the end (cache first).")
        if got.shape == old.shape and torch.equal(got, old):
            raise Hint(f"{name} is the old cache: return it with the new entries appended along dim=-2.")
        raise Hint(f"with {where} {name} should be the cache with the new entries appended along dim=-2, "
                   f"shape {tuple(want.shape)}; got shape {tuple(got.shape)}.")
    expected = _softmax_rows(q @ K.transpose(-2, -1) / d_k**0.5, _new_rows_mask(t, s)) @ V
    if tuple(out.shape) != tuple(expected.shape):
        raise Hint(f"with {where} the output should have shape {tuple(expected.shape)} (B, h, s, d_v), got {tuple(out.shape)}.")
    if torch.allclose(out.double(), expected.double(), atol=1e-5, rtol=1e-4):
        return
    for hint, mistake in _mistakes(q, k_cache, v_cache, k_new, v_new):
        try:
            candidate = mistake()
        except RuntimeError:
            continue
        if candidate.shape == out.shape and torch.allclose(out, candidate, atol=1e-5, rtol=1e-4, equal_nan=True):
            raise Hint(f"with {where}: {hint}")
    diff = (out - expected).abs().nan_to_num(float("inf")).max().item()
    raise Hint(f"with {where} the output differs from attention over all t + s keys with the causal mask "
               f"(largest difference {diff:.3g}).")


def _check_cached_attention(fn) -> None:
    g = torch.Generator().manual_seed(1515)
    for B, h, t, s, d_k, d_v in [(1, 1, 0, 1, 4, 4), (2, 3, 5, 1, 4, 6), (1, 2, 0, 5, 8, 8),
                                 (2, 2, 4, 3, 8, 5), (1, 4, 200, 7, 16, 16)]:
        _check_case(fn, B, h, t, s, d_k, d_v, g)


def check_cached_attention(fn) -> bool:
    """Check ``fn(q_new, k_new, v_new, k_cache, v_cache) -> (output, k_all, v_all)``: the cached attention step."""
    return report("cached_attention", lambda: _check_cached_attention(fn))
