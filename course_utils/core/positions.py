"""Positions: the fixed sinusoidal encodings and learned position embeddings.

Shapes: ``B`` batch, ``T`` sequence length, ``d_model`` features per token.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .validation import check_sequence, require_positive


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

    Returns:
        ``(num_positions, d_model)``. ``d_model`` must be even (sin and cos come in pairs).
    """
    require_positive(num_positions=num_positions, d_model=d_model)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (one sin and one cos per frequency), got d_model={d_model}")
    positions = torch.arange(num_positions, dtype=dtype, device=device).unsqueeze(1)  # (P, 1)
    i = torch.arange(d_model // 2, dtype=dtype, device=device)  # (d_model/2,)
    frequencies = base ** (-2 * i / d_model)  # (d_model/2,)
    angles = positions * frequencies  # (P, d_model/2)
    pe = torch.empty(num_positions, d_model, dtype=dtype, device=device)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal encodings: ``forward(x (B, T, d_model)) -> x + PE[:T]``.

    No parameters; works for any length T.
    """

    def __init__(self, d_model: int, base: float = 10000.0) -> None:
        super().__init__()
        require_positive(d_model=d_model)
        if d_model % 2 != 0:
            raise ValueError(f"d_model must be even, got d_model={d_model}")
        self.d_model, self.base = d_model, base

    def forward(self, x: Tensor) -> Tensor:
        check_sequence(x, self.d_model)
        pe = sinusoidal_positional_encoding(x.shape[1], self.d_model, self.base, dtype=x.dtype, device=x.device)
        return x + pe


class LearnedPositionalEmbedding(nn.Module):
    """Adds one learned vector per position: ``forward(x (B, T, d_model)) -> x + table[:T]``.

    ``table`` is an ``nn.Embedding(max_len, d_model)`` (``max_len * d_model`` parameters);
    sequences longer than ``max_len`` raise ValueError: there is no row for their positions.
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        require_positive(max_len=max_len, d_model=d_model)
        self.max_len, self.d_model = max_len, d_model
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, x: Tensor) -> Tensor:
        check_sequence(x, self.d_model)
        T = x.shape[1]
        if T > self.max_len:
            raise ValueError(
                f"sequence length T={T} exceeds max_len={self.max_len}: the learned table has rows only "
                f"for positions 0..{self.max_len - 1}, so it cannot encode position {self.max_len} or later"
            )
        return x + self.table(torch.arange(T, device=x.device))
