"""Softmax in one pass with a running maximum, and attention over key blocks (FlashAttention-style).

``online_softmax`` reads the scores block by block and keeps two numbers per row: the largest
score so far ``m`` and the sum ``l`` of ``exp(score - m)`` so far. When a block raises the
maximum, the old sum is rescaled by ``exp(m_old - m_new)``. ``tiled_attention`` does the same
with a running weighted sum of values, so it never holds the ``n x m`` score matrix, only
``n x block_size`` scores at a time. Both give the ordinary results to float tolerance.

Shapes: ``n`` queries, ``m`` keys, ``d_k`` / ``d_v`` features; ``...`` any leading dimensions.
Mask convention as everywhere in the project: **True = may attend**. Built in notebook 16.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .attention import check_qkv
from .masks import check_mask
from .validation import broadcast_shape, require_bool, require_positive, require_tensor


def online_softmax(x: Tensor, block_size: int = 1) -> Tensor:
    """``softmax(x, dim=-1)`` whose maximum and normaliser are found in one pass over blocks of the last axis.

    ``x (..., m)`` floating point; returns the same shape. ``-inf`` entries get weight 0; a row
    that is ``-inf`` everywhere gives zeros (not NaN). Built in notebook 16.
    """
    require_tensor("x", x, min_ndim=1, floating=True, shape="(..., m)")
    require_positive(block_size=block_size)
    m = torch.full(x.shape[:-1], -math.inf, dtype=x.dtype, device=x.device)  # running maximum
    l = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)  # running sum of exp(x - m)
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start : start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        safe = m_new.nan_to_num(neginf=0.0)  # a row with no finite score yet: exp(-inf - 0) = 0, not NaN
        l = l * torch.exp(m - safe) + torch.exp(block - safe[..., None]).sum(dim=-1)
        m = m_new
    safe = m.nan_to_num(neginf=0.0)[..., None]
    return torch.exp(x - safe) / l.clamp_min(torch.finfo(x.dtype).tiny)[..., None]


def tiled_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None, *, causal: bool = False,
    block_size: int = 128, query_block_size: int | None = None,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V over blocks of keys, without the ``n x m`` score matrix.

    Args:
        Q: ``(..., n, d_k)``; K: ``(..., m, d_k)``; V: ``(..., m, d_v)``, one floating dtype and device.
        mask: optional bool, broadcastable to ``(..., n, m)``, True = may attend.
        causal: query ``i`` may attend keys ``j <= i`` (top-left aligned, like
            ``F.scaled_dot_product_attention(..., is_causal=True)``); key blocks wholly in a
            query block's future are skipped.
        block_size: keys per block; the largest scores tensor is ``(..., query block, block_size)``.
        query_block_size: queries per block (default None: all ``n`` at once).

    Returns:
        ``(..., n, d_v)``; a query with no key to attend to gets zeros, as in ``scaled_dot_product_attention``.
    Built in notebook 16.
    """
    check_qkv(Q, K, V)
    require_bool(causal=causal)
    n, m = Q.shape[-2], K.shape[-2]
    query_block_size = n if query_block_size is None else query_block_size
    require_positive(block_size=block_size, query_block_size=query_block_size)
    lead = broadcast_shape(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    if mask is not None:  # a view of shape (..., n, m), so that blocks can be sliced out of it
        mask = check_mask(mask, torch.Size((*lead, n, m)), device=Q.device)
        mask = mask.expand(*mask.shape[:-2], n, m)
    Q = Q / math.sqrt(Q.shape[-1])
    out = []
    for q0 in range(0, n, query_block_size):
        q = Q[..., q0 : q0 + query_block_size, :]  # (..., nq, d_k)
        last = q0 + q.shape[-2] - 1  # the last query of this block
        rows = torch.arange(q0, last + 1, device=Q.device)[:, None]
        m_run = torch.full((*lead, q.shape[-2]), -math.inf, dtype=Q.dtype, device=Q.device)
        l_run = torch.zeros_like(m_run)
        acc = torch.zeros((*lead, q.shape[-2], V.shape[-1]), dtype=Q.dtype, device=Q.device)
        for k0 in range(0, m, block_size):
            if causal and k0 > last:
                break  # every later key is in the future of every query of this block
            s = q @ K[..., k0 : k0 + block_size, :].transpose(-2, -1)  # (..., nq, b): the only scores held
            allowed = None
            if causal:
                allowed = torch.arange(k0, k0 + s.shape[-1], device=Q.device) <= rows
            if mask is not None:
                block_mask = mask[..., q0 : q0 + q.shape[-2], k0 : k0 + s.shape[-1]]
                allowed = block_mask if allowed is None else allowed & block_mask
            if allowed is not None:
                s = s.masked_fill(~allowed, -math.inf)
            m_new = torch.maximum(m_run, s.amax(dim=-1))
            safe = m_new.nan_to_num(neginf=0.0)  # rows with nothing allowed yet stay at l = 0, acc = 0
            p = (s - safe[..., None]).exp_()  # (..., nq, b); exp_ in place: one block fewer alive
            rescale = torch.exp(m_run - safe)  # shrinks the old sums when the maximum grew
            l_run = l_run * rescale + p.sum(dim=-1)
            acc = acc * rescale[..., None] + p @ V[..., k0 : k0 + block_size, :]
            m_run = m_new
        out.append(acc / l_run.clamp_min(torch.finfo(Q.dtype).tiny)[..., None])
    return torch.cat(out, dim=-2)

