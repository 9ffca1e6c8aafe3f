"""Positions and the Transformer block: sinusoidal encodings, learned embeddings, one encoder layer.

Shapes: ``B`` batch, ``T`` sequence length, ``d_model`` features per token, ``d_ff``
hidden size of the feed-forward network, ``h`` heads.

Mask convention as everywhere in the project: **True = may attend**.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .attention import _require_positive, _shape
from .multihead import MultiHeadAttention, to_torch_multihead


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
    _require_positive(num_positions=num_positions, d_model=d_model)
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


def _check_sequence(x: Tensor, d_model: int) -> None:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"x must have shape (B, T, {d_model}), got shape {_shape(x)}")


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal encodings: ``forward(x (B, T, d_model)) -> x + PE[:T]``.

    No parameters; works for any length T.
    """

    def __init__(self, d_model: int, base: float = 10000.0) -> None:
        super().__init__()
        _require_positive(d_model=d_model)
        if d_model % 2 != 0:
            raise ValueError(f"d_model must be even, got d_model={d_model}")
        self.d_model, self.base = d_model, base

    def forward(self, x: Tensor) -> Tensor:
        _check_sequence(x, self.d_model)
        pe = sinusoidal_positional_encoding(x.shape[1], self.d_model, self.base, dtype=x.dtype, device=x.device)
        return x + pe


class LearnedPositionalEmbedding(nn.Module):
    """Adds one learned vector per position: ``forward(x (B, T, d_model)) -> x + table[:T]``.

    ``table`` is an ``nn.Embedding(max_len, d_model)`` (``max_len * d_model`` parameters);
    sequences longer than ``max_len`` raise ValueError: there is no row for their positions.
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        _require_positive(max_len=max_len, d_model=d_model)
        self.max_len, self.d_model = max_len, d_model
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, x: Tensor) -> Tensor:
        _check_sequence(x, self.d_model)
        T = x.shape[1]
        if T > self.max_len:
            raise ValueError(
                f"sequence length T={T} exceeds max_len={self.max_len}: the learned table has rows only "
                f"for positions 0..{self.max_len - 1}, so it cannot encode position {self.max_len} or later"
            )
        return x + self.table(torch.arange(T, device=x.device))


class PositionwiseFeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2``, the same two-layer MLP at every position.

    ``(B, T, d_model) -> (B, T, d_model)`` through a hidden layer of ``d_ff`` units.
    """

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        _require_positive(d_model=d_model, d_ff=d_ff)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(torch.relu(self.linear1(x)))


class TransformerBlock(nn.Module):
    """One Transformer encoder layer: self-attention and a feed-forward network, each with residual + LayerNorm.

    Post-norm (Vaswani et al., the default)::

        y = LayerNorm(x + SelfAttention(x));  out = LayerNorm(y + FFN(y))

    Pre-norm (``norm_first=True``, the common modern variant)::

        y = x + SelfAttention(LayerNorm(x));  out = y + FFN(LayerNorm(y))

    No dropout (the paper used 0.1). ``4 d^2 + 2 d d_ff + 9 d + d_ff`` parameters.

    ``forward(x (B, T, d_model), mask=None)`` returns ``out (B, T, d_model)`` and the
    attention ``weights (B, h, T, T)``; ``mask`` (True = may attend) is passed to
    ``MultiHeadAttention``, e.g. ``causal_mask(T)`` or ``padding_mask(tokens, pad)``.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False) -> None:
        super().__init__()
        self.d_model, self.num_heads, self.d_ff, self.norm_first = d_model, num_heads, d_ff, norm_first
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.ffn = PositionwiseFeedForward(d_model, d_ff)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        _check_sequence(x, self.d_model)
        if self.norm_first:
            h = self.norm1(x)
            attended, weights = self.attn(h, h, h, mask)
            y = x + attended
            return y + self.ffn(self.norm2(y)), weights
        attended, weights = self.attn(x, x, x, mask)
        y = self.norm1(x + attended)
        return self.norm2(y + self.ffn(y)), weights


def to_torch_encoder_layer(block: TransformerBlock) -> nn.TransformerEncoderLayer:
    """A ``torch.nn.TransformerEncoderLayer(batch_first=True, dropout=0)`` holding copies of ``block``'s weights.

    Its mask convention is the opposite of ours: pass ``src_mask=~mask``.
    """
    weight = block.norm1.weight
    layer = nn.TransformerEncoderLayer(
        block.d_model, block.num_heads, block.d_ff, dropout=0.0, activation="relu",
        layer_norm_eps=block.norm1.eps, batch_first=True, norm_first=block.norm_first,
        device=weight.device, dtype=weight.dtype,
    )
    with torch.no_grad():
        layer.self_attn.load_state_dict(to_torch_multihead(block.attn).state_dict())
        for name in ("linear1", "linear2"):
            getattr(layer, name).load_state_dict(getattr(block.ffn, name).state_dict())
        for name in ("norm1", "norm2"):
            getattr(layer, name).load_state_dict(getattr(block, name).state_dict())
    return layer
