"""Positions: the fixed sinusoidal encodings and learned position embeddings. Built in notebook 09.

Shapes: ``B`` batch, ``T`` sequence length, ``d_model`` features per token.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .validation import (
    check_sequence, require_device, require_float_dtype, require_module_input, require_positive, require_positive_float,
)


def sinusoidal_positional_encoding(
    num_positions: int,
    d_model: int,
    base: float = 10000.0,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """The fixed encodings of Vaswani et al. (2017) for positions ``0 .. num_positions-1``.

    ``PE[p, 2i] = sin(p * w_i)`` and ``PE[p, 2i+1] = cos(p * w_i)`` with frequency
    ``w_i = base ** (-2i / d_model)``, for ``i = 0 .. d_model/2 - 1``.

    The angles are computed in float32 at least (float64 for ``dtype=torch.float64``) and the
    result is cast to ``dtype`` at the end: in bfloat16, positions 256 and 257 would otherwise be
    the same number and get the same encoding.

    Returns:
        ``(num_positions, d_model)`` in ``dtype`` on ``device``. ``d_model`` must be even
        (sin and cos come in pairs); ``base`` must be a finite number > 0. Built in notebook 09.
    """
    _check_sizes(d_model, base, num_positions=num_positions)
    require_float_dtype("dtype", dtype)
    device = require_device(device)
    work = torch.promote_types(dtype, torch.float32)  # float32 for float16 and bfloat16
    positions = torch.arange(num_positions, dtype=work, device=device).unsqueeze(1)  # (P, 1)
    i = torch.arange(d_model // 2, dtype=work, device=device)  # (d_model/2,)
    frequencies = float(base) ** (-2 * i / d_model)  # (d_model/2,)
    angles = positions * frequencies  # (P, d_model/2)
    pe = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1)  # (P, d_model/2, 2): sin, cos interleaved
    return pe.reshape(num_positions, d_model).to(dtype)


def _check_sizes(d_model: int, base: float, **sizes: int) -> None:
    require_positive(**sizes, d_model=d_model)
    require_positive_float(base=base)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (one sin and one cos per frequency), got d_model={d_model}")


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal encodings: ``forward(x (B, T, d_model)) -> x + PE[:T]``.

    No parameters; works for any length T. Built in notebook 09.
    """

    def __init__(self, d_model: int, base: float = 10000.0) -> None:
        super().__init__()
        _check_sizes(d_model, base)
        self.d_model, self.base = d_model, base

    def forward(self, x: Tensor) -> Tensor:
        check_sequence(x, self.d_model)
        pe = sinusoidal_positional_encoding(x.shape[1], self.d_model, self.base, dtype=x.dtype, device=x.device)
        return x + pe


class LearnedPositionalEmbedding(nn.Module):
    """Adds one learned vector per position: ``forward(x (B, T, d_model)) -> x + table[:T]``.

    ``table`` is an ``nn.Embedding(max_len, d_model)`` (``max_len * d_model`` parameters);
    sequences longer than ``max_len`` raise ValueError: there is no row for their positions. Built in notebook 09.
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        require_positive(max_len=max_len, d_model=d_model)
        self.max_len, self.d_model = max_len, d_model
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, x: Tensor) -> Tensor:
        check_sequence(x, self.d_model)
        require_module_input(self, x=x)
        T = x.shape[1]
        if T > self.max_len:
            raise ValueError(
                f"sequence length T={T} exceeds max_len={self.max_len}: the learned table has rows only "
                f"for positions 0..{self.max_len - 1}, so it cannot encode position {self.max_len} or later"
            )
        return x + self.table(torch.arange(T, device=x.device))
