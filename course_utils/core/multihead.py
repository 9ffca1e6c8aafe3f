"""Multi-head attention: h scaled dot-product attentions side by side. Built in notebook 03."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .attention import scaled_dot_product_attention
from .validation import (require_instance, require_module_input, require_positive, require_positive_int,
                         require_probability, require_tensor, shape_of)


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """``(B, T, d_model) -> (B, h, T, d_k)`` with ``d_k = d_model // h``: head i gets features
    ``i*d_k .. (i+1)*d_k - 1`` of every token (built in notebook 03)."""
    require_tensor("x", x, ndim=3)
    require_positive_int(num_heads=num_heads)
    B, T, d_model = x.shape
    if d_model % num_heads != 0:
        raise ValueError(f"the last axis of x {shape_of(x)} (d_model = {d_model}) must be divisible by num_heads = {num_heads}")
    return x.reshape(B, T, num_heads, d_model // num_heads).transpose(1, 2)  # reshape: a view when x is contiguous


class MultiHeadAttention(nn.Module):
    """Multi-head attention with biases on the four projections (4 d^2 + 4 d parameters).

    Args:
        d_model: feature size of queries, keys, values and the output.
        num_heads: number of heads h; each head works in ``d_k = d_model // h`` features.
        dropout: attention dropout p, ``0 <= p < 1`` (default 0: none), as in ``nn.MultiheadAttention``:
            in training mode each attention weight is zeroed with probability p after the softmax,
            before the weighted sum of the values, and the kept ones are scaled by ``1 / (1 - p)``.
            Off in eval mode (``mha.eval()``).

    ``forward(query (B, n, d_model), key (B, m, d_model), value (B, m, d_model), mask=None)``
    returns ``output (B, n, d_model)`` and per-head ``weights (B, h, n, m)``.
    ``mask`` (True = may attend) broadcasts to ``(B, h, n, m)``; a 3-D mask such as
    ``(B, n, m)`` or ``padding_mask``'s ``(B, 1, m)`` is shared by all heads.
    Self-attention: ``mha(x, x, x)``; cross-attention: ``mha(decoder, encoder, encoder)``.
    The returned weights are the ones applied to the values: in training mode with dropout,
    the weights after dropout (rows no longer sum to 1). Built in notebook 03.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        require_positive(d_model=d_model, num_heads=num_heads)
        require_probability("dropout", dropout)
        if d_model % num_heads != 0:
            raise ValueError(f"d_model must be divisible by num_heads, got d_model={d_model}, num_heads={num_heads} "
                             f"({d_model} / {num_heads} = {d_model / num_heads:g} features per head)")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.dropout = float(dropout)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def split_heads(self, x: Tensor) -> Tensor:
        """``(B, T, d_model) -> (B, h, T, d_k)``."""
        require_tensor("x", x, ndim=3, shape=f"(B, T, d_model={self.d_model})")
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (B, T, d_model={self.d_model}), got shape {shape_of(x)}")
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x: Tensor) -> Tensor:
        """``(B, h, T, d_k) -> (B, T, d_model)``, the inverse of ``split_heads``."""
        require_tensor("x", x, ndim=4, shape=f"(B, h={self.num_heads}, T, d_k={self.d_k})")
        if x.shape[1] != self.num_heads or x.shape[3] != self.d_k:
            raise ValueError(f"x must have shape (B, h={self.num_heads}, T, d_k={self.d_k}), got shape {shape_of(x)}")
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.d_model)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        require_module_input(self, query=query, key=key, value=value)
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3 or t.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (B, length, {self.d_model}), got shape {shape_of(t)}")
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key and value must have the same length m: key has shape {shape_of(key)}, "
                             f"value has shape {shape_of(value)}")
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(f"query, key and value must have the same batch size B, got shapes "
                             f"{shape_of(query)}, {shape_of(key)}, {shape_of(value)}")

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        self._check_inputs(query, key, value)
        if isinstance(mask, Tensor) and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, n or 1, m) -> (B, 1, n or 1, m): same mask for every head
        Q = self.split_heads(self.W_q(query))  # (B, h, n, d_k)
        K = self.split_heads(self.W_k(key))  # (B, h, m, d_k)
        V = self.split_heads(self.W_v(value))  # (B, h, m, d_k)
        p = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(Q, K, V, mask, p)  # (B, h, n, d_k), (B, h, n, m)
        return self.W_o(self.merge_heads(heads)), weights


def to_torch_multihead(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """A ``torch.nn.MultiheadAttention(batch_first=True)`` holding copies of ``mha``'s weights and dropout.

    Remember its mask convention is the opposite of ours: pass ``attn_mask=~mask``. Built in notebook 03.
    """
    require_instance("mha", mha, MultiHeadAttention)
    torch_mha = nn.MultiheadAttention(mha.d_model, mha.num_heads, dropout=mha.dropout, batch_first=True)
    torch_mha = torch_mha.to(device=mha.W_q.weight.device, dtype=mha.W_q.weight.dtype)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]))
        torch_mha.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
        torch_mha.out_proj.weight.copy_(mha.W_o.weight)
        torch_mha.out_proj.bias.copy_(mha.W_o.bias)
    return torch_mha.train(mha.training)
