"""RoPE in a language model, and the feature layout that LLaMA's code and Hugging Face use.

The course's ``apply_rope`` (``core/rope.py``) rotates **adjacent pairs** ``(x[2i], x[2i+1])``.
LLaMA's reference code and Hugging Face's ``rotate_half`` pair feature ``i`` with feature
``i + d/2`` instead: the **halves** layout. Pair ``i`` turns by the same angle ``p * w_i`` in
both, so the two differ only by a fixed permutation of the features (``halves_permutation``)::

    apply_rope_halves(x[..., perm]) == apply_rope(x)[..., perm]

and since a dot product does not change when both vectors are permuted alike, the scores are
equal. Weights trained for one layout run correctly in the other only after the rows of
``W_Q`` and ``W_K`` are permuted per head (``to_layout``). Built in notebook 17.

Shapes: ``T`` positions, ``d`` features (even), ``...`` any leading dimensions such as ``(B, h)``.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from ..core.rope import RotaryMultiHeadAttention, _cos_sin  # the angles in float64, as apply_rope's
from ..core.validation import require_nonnegative_int, require_positive, require_positive_float, require_tensor
from .language_model import CausalLM

LAYOUTS = ("pairs", "halves")


def apply_rope_halves(x: Tensor, offset: int = 0, base: float = 10000.0) -> Tensor:
    """RoPE in the halves layout: ``(x[..., i], x[..., i + d/2])`` is rotated by ``(offset + t) * w_i``.

    ``x (..., T, d)`` -> a new tensor of x's shape and dtype (cos and sin in float32 at least), as
    Hugging Face's ``x * cos + rotate_half(x) * sin``; angles in float64, as ``apply_rope``'s. Built in notebook 17.
    """
    require_tensor("x", x, min_ndim=2, floating=True, shape="(..., T, d)")
    require_nonnegative_int(offset=offset)
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"the feature size d of x (..., T, d) must be even (features are rotated in pairs), got d={d}")
    require_positive_float(base=base)
    cos, sin = _cos_sin(int(offset), T, d, base, torch.promote_types(x.dtype, torch.float32), x.device)  # (T, d/2)
    a, b = x[..., : d // 2], x[..., d // 2:]  # first and second half, (..., T, d/2) each
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1).to(x.dtype)


def halves_permutation(d: int, device: torch.device | str | None = None) -> Tensor:
    """The features ``[0, 2, 4, ..., d-2, 1, 3, ..., d-1]``: ``x[..., perm]`` puts each adjacent pair
    ``(2i, 2i+1)`` at ``(i, i + d/2)``, so ``apply_rope_halves(x[..., perm]) == apply_rope(x)[..., perm]``.
    ``(d,)``. Built in notebook 17."""
    require_positive(d=d)
    if d % 2:
        raise ValueError(f"d must be even (features are rotated in pairs), got d={d}")
    return torch.cat([torch.arange(0, d, 2, device=device), torch.arange(1, d, 2, device=device)])


class HalvesRotaryMultiHeadAttention(RotaryMultiHeadAttention):
    """``RotaryMultiHeadAttention`` that rotates in the halves layout; same parameters. Used in notebook 17."""

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        """``apply_rope_halves`` of ``x (B, h, T, d_k)`` at positions ``offset..``."""
        return apply_rope_halves(x, offset=offset, base=self.base)


def rotary_lm(vocab_size: int, max_len: int, **kwargs) -> CausalLM:
    """A ``CausalLM`` with RoPE instead of added positions: no position encoding on the input, and every
    block's attention a ``RotaryMultiHeadAttention`` holding the same weights.

    Built from ``CausalLM(..., positions="sinusoidal", **kwargs)``, so with the same seed its
    parameters equal those of the sinusoidal model: the two differ only in how position enters. Used in notebook 17.
    """
    if "positions" in kwargs:
        raise ValueError("rotary_lm sets the positions itself; do not pass positions=")
    model = CausalLM(vocab_size, max_len, positions="sinusoidal", **kwargs)
    model.position = nn.Identity()
    for block in model.blocks:
        rotary = RotaryMultiHeadAttention(block.attn.d_model, block.attn.num_heads)
        rotary.load_state_dict(block.attn.state_dict())
        block.attn = rotary.to(block.attn.W_q.weight.device)
    return model


def layout_of(model: CausalLM) -> str:
    """"pairs" or "halves": the RoPE layout of a ``rotary_lm`` model's attention."""
    kinds = {isinstance(block.attn, HalvesRotaryMultiHeadAttention) for block in _rotary_blocks(model)}
    return "halves" if kinds == {True} else "pairs"


def _rotary_blocks(model: CausalLM) -> list[nn.Module]:
    if not isinstance(model, CausalLM):
        raise TypeError(f"model must be a CausalLM built by rotary_lm, got {type(model).__name__}")
    blocks = list(model.blocks)
    if not all(isinstance(block.attn, RotaryMultiHeadAttention) for block in blocks):
        raise ValueError("model must use RoPE in every block (build it with rotary_lm)")
    return blocks


def run_with_layout(model: CausalLM, layout: str) -> CausalLM:
    """A copy of ``model`` whose attention rotates in ``layout`` ("pairs" or "halves") with the **same** weights:
    what happens when weights trained for one layout are loaded into code written for the other. Used in notebook 17."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    copied = copy.deepcopy(model)
    for block in _rotary_blocks(copied):
        block.attn.__class__ = HalvesRotaryMultiHeadAttention if layout == "halves" else RotaryMultiHeadAttention
    return copied


@torch.no_grad()
def to_layout(model: CausalLM, layout: str) -> CausalLM:
    """A copy of ``model`` converted to ``layout``: the rows of ``W_Q`` and ``W_K`` (weights and biases) are
    permuted within each head by ``halves_permutation`` (or its inverse), so that every score, and so every
    output, stays the same. Used in notebook 17."""
    current = layout_of(model)
    converted = run_with_layout(model, layout)
    if layout == current:
        return converted
    for block in _rotary_blocks(converted):
        attn = block.attn
        perm = halves_permutation(attn.d_k, device=attn.W_q.weight.device)
        if layout == "pairs":
            perm = torch.argsort(perm)  # the inverse permutation
        rows = (torch.arange(attn.num_heads, device=perm.device)[:, None] * attn.d_k + perm).flatten()  # per head
        for linear in (attn.W_q, attn.W_k):
            linear.weight.copy_(linear.weight[rows])
            if linear.bias is not None:
                linear.bias.copy_(linear.bias[rows])
    return converted
