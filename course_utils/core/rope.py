"""Rotary position embeddings (RoPE, Su et al. 2021): position enters as a rotation of queries and keys.

Features are taken in adjacent pairs ``(x[2i], x[2i+1])``; at position ``p`` pair ``i`` is
rotated by the angle ``p * w_i`` with ``w_i = base ** (-2i / d)``, the frequencies of the
sinusoidal encoding. Rotations compose: ``R(p)^T R(q) = R(q - p)``, so the score
``rope(q, p) . rope(k, p')`` depends on the positions only through the offset ``p' - p``.
(LLaMA's and Hugging Face's code pair ``i`` with ``i + d/2`` instead: ``models/rotary.py``.)
Angles, cos and sin are computed in float64, then cast (float32 at least): in float32 the angle of
position 8192 is off by 5e-4, and 2**25 + 1 == 2**25. Built in notebook 17.

Shapes: ``T`` positions, ``d`` features (even), ``...`` any leading dimensions such as ``(B, h)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .attention import scaled_dot_product_attention
from .multihead import MultiHeadAttention
from .validation import require_device, require_float_dtype, require_int, require_nonnegative_int, require_positive
from .validation import require_positive_float, require_tensor


def _check_d_base(d: int, base: float, what: str = "d") -> None:
    require_positive(d=d)
    require_positive_float(base=base)
    if d % 2 != 0:
        raise ValueError(f"{what} must be even (features are rotated in pairs), got d={d}")


def rope_angles(positions: Tensor, d: int, base: float = 10000.0) -> Tensor:
    """Angles ``positions[t] * base ** (-2i / d)``, ``(T,)`` -> ``(T, d/2)``, float32 at least. Built in notebook 17."""
    require_tensor("positions", positions, ndim=1, floating=True, shape="(T,)")
    _check_d_base(d, base)
    work = torch.promote_types(positions.dtype, torch.float32)
    i = torch.arange(d // 2, dtype=work, device=positions.device)
    return positions.to(work)[:, None] * float(base) ** (-2 * i / d)


def _cos_sin(start: int, T: int, d: int, base: float, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """cos, sin ``(T, d/2)`` of positions ``start .. start + T - 1`` in float64 (on the CPU for MPS), cast to ``dtype``."""
    if start + T > 2**53:
        raise ValueError(f"positions must stay below 2**53 to be exact in float64, got offset + T = {start + T}")
    where = torch.device("cpu") if device.type == "mps" else device
    angles = rope_angles(torch.arange(start, start + T, dtype=torch.float64, device=where), d, base)
    return angles.cos().to(device, dtype), angles.sin().to(device, dtype)


def apply_rope(x: Tensor, offset: int = 0, base: float = 10000.0) -> Tensor:
    """Rotate ``x (..., T, d)``: row ``t`` sits at position ``offset + t``; a new tensor of x's shape and dtype.

    Pair ``(a, b) = (x[..., 2i], x[..., 2i+1])`` becomes ``(a cos - b sin, a sin + b cos)``, with
    cos and sin from float64 angles, in float32 at least. ``offset`` lets a KV cache rotate new tokens at
    their true positions. Built in notebook 17.
    """
    require_tensor("x", x, min_ndim=2, floating=True, shape="(..., T, d)")
    require_nonnegative_int(offset=offset)
    T, d = x.shape[-2], x.shape[-1]
    _check_d_base(d, base, "the feature size d of x (..., T, d)")
    cos, sin = _cos_sin(int(offset), T, d, base, torch.promote_types(x.dtype, torch.float32), x.device)  # (T, d/2)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each; times cos and sin they become float32 at least
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_rotation_matrix(position: int, d: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float64,
                         device: torch.device | str | None = None) -> Tensor:
    """The ``(d, d)`` block-diagonal ``R(position)``, any whole ``position`` (``R(-p) = R(p)^T``): ``apply_rope(x)[t] ==
    R(t) @ x[t]``. Built in notebook 17."""
    require_int(position=position)
    require_float_dtype("dtype", dtype)
    device = require_device(device) or torch.empty(0).device
    _check_d_base(d, base)
    work = torch.promote_types(dtype, torch.float32)
    cos, sin = (c[0] for c in _cos_sin(int(position), 1, d, base, work, device))  # (d/2,) each, from float64 angles
    R = torch.zeros(d, d, dtype=work, device=device)
    idx = torch.arange(0, d, 2, device=device)
    R[idx, idx], R[idx, idx + 1], R[idx + 1, idx], R[idx + 1, idx + 1] = cos, -sin, sin, cos
    return R.to(dtype)  # cos and sin in float32 at least, cast at the end


class RotaryMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` whose queries and keys are rotated per head (``apply_rope``) after projection.

    Queries sit at positions ``0..n-1``, keys at ``0..m-1``. Same parameters, same ``forward``
    signature and outputs as ``MultiHeadAttention``; values are not rotated. Built in notebook 17.
    """

    def __init__(self, d_model: int, num_heads: int, base: float = 10000.0) -> None:
        super().__init__(d_model, num_heads)
        require_positive_float(base=base)
        if self.d_k % 2 != 0:
            raise ValueError(f"d_model / num_heads = d_k must be even for RoPE, got d_k={self.d_k}")
        self.base = base

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        self._check_inputs(query, key, value)
        if isinstance(mask, Tensor) and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        Q = self.rotate(self.split_heads(self.W_q(query)))  # (B, h, n, d_k)
        K = self.rotate(self.split_heads(self.W_k(key)))  # (B, h, m, d_k)
        heads, weights = scaled_dot_product_attention(Q, K, self.split_heads(self.W_v(value)), mask)
        return self.W_o(self.merge_heads(heads)), weights

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        """``apply_rope`` of ``x (B, h, T, d_k)`` at positions ``offset..``; a KV cache calls it too."""
        return apply_rope(x, offset=offset, base=self.base)
