"""Rotary position embeddings (RoPE, Su et al. 2021): position enters as a rotation of queries and keys.

Features are taken in adjacent pairs ``(x[2i], x[2i+1])``; at position ``p`` pair ``i`` is
rotated by the angle ``p * w_i`` with ``w_i = base ** (-2i / d)``, the frequencies of the
sinusoidal encoding. Rotations compose: ``R(p)^T R(q) = R(q - p)``, so the score
``rope(q, p) . rope(k, p')`` depends on the positions only through the offset ``p' - p``.
(Some libraries pair feature ``i`` with ``i + d/2`` instead; the property is the same.)

Shapes: ``T`` positions, ``d`` features (even), ``...`` any leading dimensions such as ``(B, h)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .attention import scaled_dot_product_attention
from .multihead import MultiHeadAttention
from .validation import require_positive, shape_of


def rope_angles(positions: Tensor, d: int, base: float = 10000.0) -> Tensor:
    """Rotation angles ``positions[t] * base ** (-2i / d)``: ``(T,)`` positions -> ``(T, d/2)``, in ``positions``' dtype."""
    require_positive(d=d)
    if d % 2 != 0:
        raise ValueError(f"d must be even (features are rotated in pairs), got d={d}")
    if positions.dim() != 1 or not positions.is_floating_point():
        raise ValueError(f"positions must be a floating-point tensor of shape (T,), got {positions.dtype} {shape_of(positions)}")
    i = torch.arange(d // 2, dtype=positions.dtype, device=positions.device)
    return positions[:, None] * base ** (-2 * i / d)


def apply_rope(x: Tensor, offset: int = 0, base: float = 10000.0) -> Tensor:
    """Rotate ``x (..., T, d)``: row ``t`` sits at position ``offset + t``; returns a new tensor of the same shape.

    Pair ``(a, b) = (x[..., 2i], x[..., 2i+1])`` becomes ``(a cos - b sin, a sin + b cos)``.
    ``offset`` lets a KV cache rotate new tokens at their true positions.
    """
    if not isinstance(x, Tensor) or not x.is_floating_point() or x.dim() < 2:
        raise TypeError(f"x must be a floating-point tensor of shape (..., T, d), got {type(x).__name__} "
                        f"{shape_of(x) if isinstance(x, Tensor) else ''}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
    T, d = x.shape[-2], x.shape[-1]
    positions = torch.arange(offset, offset + T, device=x.device).to(x.dtype)
    angles = rope_angles(positions, d, base)  # (T, d/2)
    cos, sin = torch.cos(angles), torch.sin(angles)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def rope_rotation_matrix(position: int, d: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float64,
                         device: torch.device | str | None = None) -> Tensor:
    """The ``(d, d)`` block-diagonal matrix ``R(position)``: ``apply_rope(x)[t] == R(t) @ x[t]``."""
    angles = rope_angles(torch.tensor([float(position)], dtype=dtype, device=device), d, base)[0]  # (d/2,)
    R = torch.zeros(d, d, dtype=dtype, device=device)
    idx = torch.arange(0, d, 2, device=device)
    R[idx, idx], R[idx, idx + 1] = torch.cos(angles), -torch.sin(angles)
    R[idx + 1, idx], R[idx + 1, idx + 1] = torch.sin(angles), torch.cos(angles)
    return R


class RotaryMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` whose queries and keys are rotated per head (``apply_rope``) after projection.

    Queries sit at positions ``0..n-1``, keys at ``0..m-1``. Same parameters, same ``forward``
    signature and outputs as ``MultiHeadAttention``; values are not rotated.
    """

    def __init__(self, d_model: int, num_heads: int, base: float = 10000.0) -> None:
        super().__init__(d_model, num_heads)
        if self.d_k % 2 != 0:
            raise ValueError(f"d_model / num_heads = d_k must be even for RoPE, got d_k={self.d_k}")
        self.base = base

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        self._check_inputs(query, key, value)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        Q = apply_rope(self.split_heads(self.W_q(query)), base=self.base)  # (B, h, n, d_k)
        K = apply_rope(self.split_heads(self.W_k(key)), base=self.base)  # (B, h, m, d_k)
        heads, weights = scaled_dot_product_attention(Q, K, self.split_heads(self.W_v(value)), mask)
        return self.W_o(self.merge_heads(heads)), weights

