"""The Transformer block: self-attention and a feed-forward network, each with residual + LayerNorm.

Shapes: ``B`` batch, ``T`` sequence length, ``d_model`` features per token, ``d_ff``
hidden size of the feed-forward network, ``h`` heads.

Mask convention as everywhere in the project: **True = may attend**. Built in notebook 09b.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .multihead import MultiHeadAttention, to_torch_multihead
from .validation import check_sequence, require_bool, require_instance, require_module_input, require_positive, shape_of


class PositionwiseFeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2``, the same two-layer MLP at every position.

    ``(B, T, d_model) -> (B, T, d_model)`` through a hidden layer of ``d_ff`` units. Built in notebook 09b.
    """

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        require_positive(d_model=d_model, d_ff=d_ff)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        require_module_input(self, x=x)
        if x.dim() < 1 or x.shape[-1] != self.linear1.in_features:  # any leading dimensions
            raise ValueError(f"x must have shape (..., {self.linear1.in_features}), got shape {shape_of(x)}")
        return self.linear2(torch.relu(self.linear1(x)))


class TransformerBlock(nn.Module):
    """One Transformer encoder layer: self-attention and a feed-forward network, each with residual + LayerNorm.

    Post-norm (Vaswani et al., the default)::

        y = LayerNorm(x + SelfAttention(x));  out = LayerNorm(y + FFN(y))

    Pre-norm (``norm_first=True``, the common modern variant)::

        y = x + SelfAttention(LayerNorm(x));  out = y + FFN(LayerNorm(y))

    ``dropout``: attention dropout only (see ``MultiHeadAttention``; default 0), none on the
    residual branches (the paper used 0.1 on both). ``4 d^2 + 2 d d_ff + 9 d + d_ff`` parameters.

    ``forward(x (B, T, d_model), mask=None)`` returns ``out (B, T, d_model)`` and the
    attention ``weights (B, h, T, T)``; ``mask`` (True = may attend) is passed to
    ``MultiHeadAttention``, e.g. ``causal_mask(T)`` or ``padding_mask(tokens, pad)``. Built in notebook 09b.
    """

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False, dropout: float = 0.0
    ) -> None:
        super().__init__()
        require_bool(norm_first=norm_first)
        self.d_model, self.num_heads, self.d_ff, self.norm_first = d_model, num_heads, d_ff, norm_first
        self.attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.ffn = PositionwiseFeedForward(d_model, d_ff)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        check_sequence(x, self.d_model)
        require_module_input(self, x=x)
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

    Its attention dropout is set to the block's (no dropout elsewhere, as in the block).

    Its mask convention is the opposite of ours: pass ``src_mask=~mask``. Built in notebook 09b.
    """
    require_instance("block", block, TransformerBlock)
    weight = block.norm1.weight
    layer = nn.TransformerEncoderLayer(
        block.d_model, block.num_heads, block.d_ff, dropout=0.0, activation="relu",
        layer_norm_eps=block.norm1.eps, batch_first=True, norm_first=block.norm_first,
        device=weight.device, dtype=weight.dtype,
    )
    with torch.no_grad():
        layer.self_attn.load_state_dict(to_torch_multihead(block.attn).state_dict())
        layer.self_attn.dropout = block.attn.dropout
        for name in ("linear1", "linear2"):
            getattr(layer, name).load_state_dict(getattr(block.ffn, name).state_dict())
        for name in ("norm1", "norm2"):
            getattr(layer, name).load_state_dict(getattr(block, name).state_dict())
    return layer
