"""KV caches as inference engines build them: one attention layer's cache, step by step.

``KVCache`` (``kv_cache.py``) grows by ``torch.cat``: every step allocates a new tensor and copies
the whole cache into it. Two layouts that serving code uses instead, each with the same method
``attend(q_new, k_new, v_new)`` (the ``s`` new queries, keys and values of one step):

- ``PreallocatedKVCache(max_len)``: one tensor of the maximum length per keys and values,
  allocated at the first step; each step writes its ``s`` rows in place and attends over a view
  of the filled part. Nothing is copied; memory is ``max_len`` rows from the start.
- ``SlidingWindowKVCache(window)``: a ring buffer of ``window`` slots; the key of position ``p``
  lives in slot ``p % window`` until position ``p + window`` overwrites it. A query at position
  ``p`` attends to the keys at positions ``p - window + 1 .. p`` only (sliding-window attention,
  as in Mistral 7B); memory stays ``window`` rows however long the sequence grows.

Shapes: ``B`` batch, ``h`` heads, ``s`` new positions, ``t`` positions seen before, ``d_k``/``d_v``
features per head. Built in notebook 15.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..core.attention import scaled_dot_product_attention
from ..core.validation import require_positive, require_tensor, shape_of


def sliding_window_mask(n: int, window: int, device: torch.device | str | None = None) -> Tensor:
    """``(n, n)`` bool, True = may attend: query ``i`` sees keys ``i - window + 1 .. i``. Used in notebook 15."""
    require_positive(n=n, window=window)
    i = torch.arange(n, device=device)
    offset = i[:, None] - i[None, :]  # query position minus key position
    return (offset >= 0) & (offset < window)


def _check_step(q_new: Tensor, k_new: Tensor, v_new: Tensor) -> None:
    for name, x in (("q_new", q_new), ("k_new", k_new), ("v_new", v_new)):
        require_tensor(name, x, ndim=4, floating=True, shape="(B, h, s, d)")
    if q_new.shape[:3] != k_new.shape[:3] or k_new.shape[:3] != v_new.shape[:3] or q_new.shape[-1] != k_new.shape[-1]:
        raise ValueError(f"q_new (B, h, s, d_k), k_new (B, h, s, d_k) and v_new (B, h, s, d_v) must agree, got "
                         f"{shape_of(q_new)}, {shape_of(k_new)}, {shape_of(v_new)}")
    if q_new.shape[-2] < 1:
        raise ValueError(f"a step needs at least one new position (s >= 1), got shape {shape_of(q_new)}")


class PreallocatedKVCache:
    """A cache of ``max_len`` positions, allocated at the first step and written in place. Built in notebook 15."""

    def __init__(self, max_len: int) -> None:
        require_positive(max_len=max_len)
        self.max_len, self.length = max_len, 0
        self.keys: Tensor | None = None  # (B, h, max_len, d_k) after the first step
        self.values: Tensor | None = None  # (B, h, max_len, d_v)

    def attend(self, q_new: Tensor, k_new: Tensor, v_new: Tensor) -> Tensor:
        """Write the ``s`` new keys and values at positions ``t .. t+s-1``; the new queries' outputs ``(B, h, s, d_v)``."""
        _check_step(q_new, k_new, v_new)
        if self.keys is None:
            B, h, _, d_k = k_new.shape
            self.keys = k_new.new_zeros(B, h, self.max_len, d_k)
            self.values = v_new.new_zeros(B, h, self.max_len, v_new.shape[-1])
        elif k_new.shape[:2] != self.keys.shape[:2] or k_new.shape[-1] != self.keys.shape[-1]:
            raise ValueError(f"this cache holds (B, h, ., d_k) = {shape_of(self.keys)}, got k_new {shape_of(k_new)}")
        t, s = self.length, k_new.shape[-2]
        if t + s > self.max_len:
            raise ValueError(f"{t} cached + {s} new positions exceed max_len={self.max_len}")
        self.keys[..., t : t + s, :] = k_new  # in place: no copy of what is already cached
        self.values[..., t : t + s, :] = v_new
        self.length = t + s
        positions = torch.arange(t + s, device=k_new.device)
        allowed = positions[None, :] <= positions[t:, None]  # (s, t + s): new query i sits at position t + i
        out, _ = scaled_dot_product_attention(q_new, self.keys[..., : t + s, :], self.values[..., : t + s, :], allowed)
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held: the two tensors of ``max_len`` positions (0 before the first step)."""
        return 0 if self.keys is None else self.keys.nbytes + self.values.nbytes


class SlidingWindowKVCache:
    """The last ``window`` positions in a ring buffer; each query attends to the last ``window`` keys. Built in notebook 15."""

    def __init__(self, window: int) -> None:
        require_positive(window=window)
        self.window, self.length = window, 0
        self.keys: Tensor | None = None  # (B, h, window, d_k): slot p % window holds position p
        self.values: Tensor | None = None
        self.positions: Tensor | None = None  # (window,) the position in each slot, -1 while empty

    def attend(self, q_new: Tensor, k_new: Tensor, v_new: Tensor) -> Tensor:
        """Attend the ``s`` new queries over the window; store the last ``min(s, window)`` new keys and values."""
        _check_step(q_new, k_new, v_new)
        B, h, s, d_k = k_new.shape
        if self.keys is None:
            self.keys = k_new.new_zeros(B, h, self.window, d_k)
            self.values = v_new.new_zeros(B, h, self.window, v_new.shape[-1])
            self.positions = torch.full((self.window,), -1, dtype=torch.long, device=k_new.device)
        elif k_new.shape[:2] != self.keys.shape[:2] or d_k != self.keys.shape[-1]:
            raise ValueError(f"this cache holds (B, h, ., d_k) = {shape_of(self.keys)}, got k_new {shape_of(k_new)}")
        new_positions = torch.arange(self.length, self.length + s, device=k_new.device)
        keys, values = torch.cat([self.keys, k_new], dim=-2), torch.cat([self.values, v_new], dim=-2)
        key_positions = torch.cat([self.positions, new_positions])  # slot order: attention ignores the order
        offset = new_positions[:, None] - key_positions[None, :]
        allowed = (key_positions[None, :] >= 0) & (offset >= 0) & (offset < self.window)  # (s, window + s)
        out, _ = scaled_dot_product_attention(q_new, keys, values, allowed)
        kept = slice(max(0, s - self.window), s)  # older new rows would be overwritten at once
        slots = new_positions[kept] % self.window
        self.keys[..., slots, :], self.values[..., slots, :] = k_new[..., kept, :], v_new[..., kept, :]
        self.positions[slots] = new_positions[kept]
        self.length += s
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held: keys and values of ``window`` slots (0 before the first step)."""
        return 0 if self.keys is None else self.keys.nbytes + self.values.nbytes
