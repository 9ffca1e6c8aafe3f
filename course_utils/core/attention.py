"""Scaled dot-product attention, masks and the scoring functions of the course.

Shapes use the course's names: ``n`` queries, ``m`` keys/values, feature sizes
``d_k`` (queries and keys) and ``d_v`` (values); ``...`` stands for any leading
batch/head dimensions, e.g. ``(B, h)``.

Mask convention for the whole project: **True (or 1) = may attend**, the same
as ``torch.nn.functional.scaled_dot_product_attention``. (Beware:
``torch.nn.MultiheadAttention`` uses the opposite, True = blocked.)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .masks import check_mask
from .validation import broadcast_shape, require_probability, require_same_device_and_dtype, require_tensor, shape_of


def check_qkv(Q: Tensor, K: Tensor, V: Tensor | None = None) -> None:
    """Check that ``Q (..., n, d_k)``, ``K (..., m, d_k)`` and ``V (..., m, d_v)`` fit. Built in notebook 01.

    Raises TypeError for a non-tensor, ValueError naming the shapes (dtypes, devices) it got.
    Reads only shapes, dtypes and devices: it costs nothing next to the attention itself.
    """
    named = {"Q": Q, "K": K} if V is None else {"Q": Q, "K": K, "V": V}
    for name, t in named.items():
        require_tensor(name, t, floating=True)
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., length, features), got shape {shape_of(t)}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must have the same feature size d_k: Q has shape {shape_of(Q)} (d_k={Q.shape[-1]}), "
                         f"K has shape {shape_of(K)} (d_k={K.shape[-1]})")
    if V is not None and K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same length m (one value per key): K has shape {shape_of(K)} "
                         f"(m={K.shape[-2]}), V has shape {shape_of(V)} (m={V.shape[-2]})")
    try:
        broadcast_shape(*(t.shape[:-2] for t in named.values()))
    except RuntimeError:
        raise ValueError("the leading (batch/head) dimensions of Q, K, V do not broadcast: "
                         + ", ".join(f"{k} {shape_of(t)}" for k, t in named.items())) from None
    require_same_device_and_dtype(**named)


def scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V, returning ``(output, weights)``. Built in notebook 01 (masks: 01b).

    Args:
        Q: queries ``(..., n, d_k)``.
        K: keys ``(..., m, d_k)``.
        V: values ``(..., m, d_v)``.
        mask: optional, broadcastable to ``(..., n, m)``, on the device of Q; True (or 1) = may attend.
        dropout_p: attention dropout, ``0 <= p < 1``: each weight is zeroed with probability p and the
            kept ones are scaled by ``1 / (1 - p)`` (as ``F.scaled_dot_product_attention(dropout_p=p)``).

    Returns:
        output ``(..., n, d_v)`` and weights ``(..., n, m)``; each weight row sums
        to 1, except a row whose keys are all masked: its weights and its output
        are zero (as in PyTorch's ``F.scaled_dot_product_attention``), never NaN.
        With dropout the weights returned are the ones used, after dropout: rows no longer sum to 1.
    """
    check_qkv(Q, K, V)
    require_probability("dropout_p", dropout_p)
    d_k = Q.shape[-1]
    # Scaling Q (n x d_k numbers) is cheaper than scaling the scores (n x m numbers).
    scores = (Q / math.sqrt(d_k)) @ K.transpose(-2, -1)  # (..., n, m), a new tensor
    if mask is not None:
        mask = check_mask(mask, scores.shape, device=scores.device)
        # The most negative finite number instead of -inf: a fully masked row then gives a finite
        # (uniform) softmax, which the multiplication by the mask turns into zeros, with no NaN in the
        # forward or backward pass. In place: the product's backward pass does not need the scores.
        scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    # With no gradient to compute, on the CPU, the softmax overwrites the scores: a second fresh
    # (..., n, m) tensor would cost about as much as the softmax itself (notebook 14, section 5).
    in_place = not scores.requires_grad and scores.device.type == "cpu"
    weights = torch.softmax(scores, dim=-1, out=scores if in_place else None)
    if mask is not None:
        weights = weights.mul_(mask) if in_place else weights * mask
    if dropout_p > 0:
        weights = torch.nn.functional.dropout(weights, dropout_p)
    return weights @ V, weights


def grouped_query_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Attention of ``h`` query heads over ``h_kv`` shared key/value heads. Built in notebook 15.

    ``Q (B, h, n, d_k)``, ``K (B, h_kv, m, d_k)``, ``V (B, h_kv, m, d_v)``, ``h % h_kv == 0``: query heads
    ``j g .. j g + g - 1`` (``g = h // h_kv``) read key/value head ``j``, as ``F.scaled_dot_product_attention(...,
    enable_gqa=True)``; ``h_kv = 1`` is multi-query attention. ``mask`` broadcasts to ``(B, h, n, m)``.
    Returns ``output (B, h, n, d_v)`` and ``weights (B, h, n, m)``.
    """
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        require_tensor(name, t, ndim=4, floating=True, shape="(B, heads, length, features)")
    h, h_kv = Q.shape[1], K.shape[1]
    if h_kv == 0 or V.shape[1] != h_kv or h % h_kv != 0:
        raise ValueError(f"K and V need the same number h_kv >= 1 of heads, and Q's h heads a multiple of it: got Q "
                         f"{shape_of(Q)} (h={h}), K {shape_of(K)}, V {shape_of(V)} (dimension 1 is the heads)")
    group = h // h_kv  # each key/value head serves this many query heads, one after another
    return scaled_dot_product_attention(Q, K.repeat_interleave(group, dim=1), V.repeat_interleave(group, dim=1), mask)
