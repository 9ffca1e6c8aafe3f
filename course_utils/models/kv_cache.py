"""Generation with a KV cache for the course's ``CausalLM`` (sinusoidal, learned or rotary positions).

Without a cache, ``generate`` runs the whole sequence through the model at every step. In a
causal model the keys and values of a position never change once it is computed (later tokens
cannot reach it), so they can be kept: ``forward_with_cache`` computes only the new positions,
appends their keys and values to a ``KVCache`` and lets the new queries attend to everything
cached. ``generate_cached`` is ``generate`` built on it; both give the same tokens and logits.

Shapes: ``B`` batch, ``s`` new tokens, ``t`` cached positions, ``h`` heads, ``d_k`` features
per head, ``L`` layers, ``V`` vocabulary size. Used in notebook 15 (where the student writes the
attention step); with a RoPE model (``models/rotary.py``) in notebook 17.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from ..core.attention import scaled_dot_product_attention
from ..core.positions import LearnedPositionalEmbedding, sinusoidal_positional_encoding
from ..core.rope import RotaryMultiHeadAttention
from ..core.validation import (
    require_bool, require_float_dtype, require_generator, require_index_range, require_instance, require_positive,
    require_positive_float, require_tensor, shape_of,
)
from .language_model import CausalLM, check_prompt


@dataclass
class KVCache:
    """Per layer, the keys and values of every position seen so far: ``(B, h, t, d_k)`` each. Used in notebook 15.

    ``owner`` is a weak reference to the model that filled it (``forward_with_cache`` sets it and refuses
    the cache for any other model); None for a cache filled by hand.
    """

    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)
    owner: weakref.ref | None = field(default=None, repr=False, compare=False)

    @property
    def length(self) -> int:
        """Number of cached positions ``t`` (0 when empty)."""
        return self.keys[0].shape[-2] if self.keys else 0

    @property
    def nbytes(self) -> int:
        """Bytes held: every cached key and value tensor, ``2 L B h t d_k`` numbers."""
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)


def kv_cache_bytes(num_layers: int, batch: int, kv_heads: int, length: int, d_k: int,
                   dtype: torch.dtype = torch.float32) -> int:
    """Bytes of a KV cache, without allocating it: ``2 (K and V) * L * B * kv_heads * T * d_k * element size``.

    ``kv_heads`` is the number of key/value heads: the query heads in ordinary multi-head
    attention, fewer with grouped-query attention (1 for multi-query attention). Used in notebook 15.
    """
    require_positive(num_layers=num_layers, batch=batch, kv_heads=kv_heads, length=length, d_k=d_k)
    require_float_dtype("dtype", dtype)
    return 2 * num_layers * batch * kv_heads * length * d_k * torch.empty(0, dtype=dtype).element_size()


def _check_model(model: CausalLM) -> None:
    if not isinstance(model, CausalLM):
        raise TypeError(f"model must be a course_utils CausalLM, got {type(model).__name__}")
    if not model.causal:
        raise ValueError("a KV cache needs a causal model: without the mask every new token changes the keys and "
                         "values of all earlier positions, so nothing can be kept")


def _check_cache(model: CausalLM, cache: KVCache, tokens: Tensor) -> None:
    """A cache this model filled (or one of its shape, filled by hand), for this batch size."""
    require_instance("cache", cache, KVCache)
    if cache.owner is not None and cache.owner() is not model:
        raise ValueError("cache was filled by another model: its keys and values mean nothing to this one; "
                         "start with cache=None")
    if not cache.keys and not cache.values:
        return
    attn, weight = model.blocks[0].attn, model.head.weight
    want = (tokens.shape[0], attn.num_heads, cache.length, attn.d_k)
    layers_fit = len(cache.keys) == len(cache.values) == len(model.blocks)
    if not layers_fit or any(t.shape != want or t.dtype != weight.dtype or t.device != weight.device
                             for t in cache.keys + cache.values):
        raise ValueError(f"cache does not fit this model and batch: it needs {len(model.blocks)} layers of keys and "
                         f"values of shape {want} ({weight.dtype}, {weight.device}), got "
                         f"{[(shape_of(t), t.dtype, str(t.device)) for t in cache.keys[:1]]} in {len(cache.keys)} layers")


def _positions(model: CausalLM, x: Tensor, start: int) -> Tensor:
    """Add the model's position encoding for positions ``start .. start + s - 1`` to ``x (B, s, d_model)``."""
    s, d_model = x.shape[1], x.shape[2]
    if isinstance(model.position, LearnedPositionalEmbedding):
        return x + model.position.table(torch.arange(start, start + s, device=x.device))
    if isinstance(model.position, nn.Identity):  # RoPE: position enters inside attention
        return x
    pe = sinusoidal_positional_encoding(start + s, d_model, model.position.base, dtype=x.dtype, device=x.device)
    return x + pe[start:]


@torch.no_grad()
def forward_with_cache(model: CausalLM, tokens: Tensor, cache: KVCache | None = None) -> tuple[Tensor, KVCache]:
    """Run ``tokens (B, s)``, the positions ``t .. t + s - 1`` after the ``t`` cached ones.

    Returns ``logits (B, s, V)`` (equal to the last ``s`` rows of ``model(all tokens)``) and the
    cache extended by ``s`` positions (a new ``KVCache``; the one passed in is not changed). Used in notebook 15.
    """
    _check_model(model)
    require_tensor("tokens", tokens, integer=True)
    if tokens.dim() != 2 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must have shape (B, s) with s >= 1, got shape {shape_of(tokens)}")
    if tokens.device != model.head.weight.device:
        raise ValueError(f"tokens must be on the model's device {model.head.weight.device}, got {tokens.device}")
    require_index_range("tokens", tokens, 0, model.vocab_size, f" (vocab_size={model.vocab_size})")
    cache = KVCache() if cache is None else cache
    if isinstance(cache, KVCache) and cache.keys and tokens.shape[0] != cache.keys[0].shape[0]:
        raise ValueError(f"tokens have batch size {tokens.shape[0]}, the cache {cache.keys[0].shape[0]}")
    _check_cache(model, cache, tokens)
    t = cache.length
    if t + tokens.shape[1] > model.max_len:
        raise ValueError(f"{t} cached + {tokens.shape[1]} new positions exceed max_len={model.max_len}: cropping to "
                         "the last max_len tokens would move every position and invalidate the cache")
    s = tokens.shape[1]
    rows = torch.arange(t, t + s, device=tokens.device)[:, None]  # new query i sits at position t + i
    mask = torch.arange(t + s, device=tokens.device) <= rows  # (s, t + s): the bottom s rows of causal_mask(t + s)
    x = _positions(model, model.token_embedding(tokens), t)  # (B, s, d_model)
    new = KVCache(owner=weakref.ref(model))
    for layer, block in enumerate(model.blocks):
        attn = block.attn
        h = block.norm1(x)  # CausalLM's blocks are pre-norm
        q, k, v = (attn.split_heads(W(h)) for W in (attn.W_q, attn.W_k, attn.W_v))  # (B, h, s, d_k) each
        if isinstance(attn, RotaryMultiHeadAttention):
            q, k = attn.rotate(q, offset=t), attn.rotate(k, offset=t)  # either RoPE layout
        if cache.keys:
            k, v = torch.cat([cache.keys[layer], k], dim=-2), torch.cat([cache.values[layer], v], dim=-2)
        new.keys.append(k)  # (B, h, t + s, d_k)
        new.values.append(v)
        heads, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, h, s, d_k)
        x = x + attn.W_o(attn.merge_heads(heads))
        x = x + block.ffn(block.norm2(x))
    return model.head(model.norm(x)), new


@torch.no_grad()
def generate_cached(model: CausalLM, prompt: Tensor, num_new: int, temperature: float = 0.0,
                    generator: torch.Generator | None = None, return_logits: bool = False):
    """``generate`` with a KV cache: the prompt in one pass, then one position per new token.

    ``prompt (B, P)`` or ``(P,)``; returns the tokens ``(B, P + num_new)`` (or ``(P + num_new,)``)
    and, with ``return_logits=True``, also the logits each step chose from, ``(B, num_new, V)``.
    Needs ``P + num_new - 1 <= max_len`` (the last token is chosen, never run). Used in notebook 15.
    """
    _check_model(model)
    require_positive(num_new=num_new)
    require_positive_float(allow_zero=True, temperature=temperature)
    require_generator(generator)
    require_bool(return_logits=return_logits)
    check_prompt(model, prompt)  # a CausalLM: its vocab_size bounds the ids
    if prompt.shape[-1] + num_new - 1 > model.max_len:
        raise ValueError(f"prompt of {prompt.shape[-1]} + {num_new} new tokens need {prompt.shape[-1] + num_new - 1} "
                         f"positions, more than max_len={model.max_len}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    tokens = (prompt.unsqueeze(0) if prompt.dim() == 1 else prompt).to(device)
    step_input, cache, chosen_from = tokens, None, []
    for _ in range(num_new):
        logits, cache = forward_with_cache(model, step_input, cache)
        last = logits[:, -1]  # (B, V)
        chosen_from.append(last)
        if temperature == 0:
            next_token = last.argmax(dim=-1)
        else:
            probs = torch.softmax(last / temperature, dim=-1).cpu()
            next_token = torch.multinomial(probs, 1, generator=generator).squeeze(1).to(device)
        step_input = next_token[:, None]  # only the new token goes through the model next time
        tokens = torch.cat([tokens, step_input], dim=1)
    model.train(was_training)
    tokens = tokens.squeeze(0) if prompt.dim() == 1 else tokens
    return (tokens, torch.stack(chosen_from, dim=1)) if return_logits else tokens


@contextmanager
def count_positions(model: CausalLM) -> Iterator[list[int]]:
    """Count the token positions the model embeds (= runs through every layer) inside the ``with`` block.

    ``with count_positions(model) as count: ...`` then ``count[0]`` is the total over all calls. Used in notebook 15.
    """
    if not isinstance(model, nn.Module) or not isinstance(getattr(model, "token_embedding", None), nn.Module):
        raise TypeError(f"model must be a language model with a token_embedding such as CausalLM, got {type(model).__name__}")
    count = [0]
    handle = model.token_embedding.register_forward_hook(lambda _m, args, _out: count.__setitem__(0, count[0] + args[0].numel()))
    try:
        yield count
    finally:
        handle.remove()
