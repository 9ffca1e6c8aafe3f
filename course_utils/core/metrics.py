"""Numbers that describe an attention pattern."""

from __future__ import annotations

import torch
from torch import Tensor

from .validation import require_tensor


def attention_entropy(weights: Tensor) -> Tensor:
    """Entropy ``H = -sum_j a_j log a_j`` (nats) of each attention row.

    Args:
        weights: ``(..., n, m)``, rows summing to 1 (or all zero for a fully masked row).

    Returns:
        ``(..., n)``: 0 for a row that puts all weight on one key, ``log m`` for a
        uniform row. ``0 log 0`` counts as 0.
    """
    require_tensor("weights", weights, min_ndim=1, floating=True)
    return torch.special.entr(weights).sum(dim=-1)  # entr(a) = -a log a, and entr(0) = 0


def mean_attention_distance(weights: Tensor) -> Tensor:
    """Average ``|i - j|`` between query position i and key position j, weighted by attention.

    Args:
        weights: ``(..., n, m)`` with query i and key j in the same positions
            (self-attention), rows summing to 1.

    Returns:
        ``(...)``: the mean over the n queries of ``sum_j a_ij |i - j|``. Small for
        local heads, large for heads that look far away.
    """
    require_tensor("weights", weights, floating=True)
    if weights.dim() < 2:
        raise ValueError(f"weights must have shape (..., n, m), got shape {tuple(weights.shape)}")
    n, m = weights.shape[-2:]
    i = torch.arange(n, device=weights.device).unsqueeze(1)
    j = torch.arange(m, device=weights.device).unsqueeze(0)
    distance = (i - j).abs().to(weights.dtype)  # (n, m)
    return (weights * distance).sum(dim=-1).mean(dim=-1)


def strongest_source(weights: Tensor) -> Tensor:
    """The key (encoder) position each query (decoder) position reads most, the heads averaged.

    Built in notebook 06 (its task 3), where it measures which encoder item each question reads.

    Args:
        weights: per-head attention weights ``(B, h, n, m)``: n queries, m keys.

    Returns:
        ``(B, n)`` long tensor: entry ``[b, i]`` is the key position ``j`` with the largest
        weight for query ``i`` of batch item ``b`` after averaging over the ``h`` heads
        (the first such ``j`` when several tie).
    """
    require_tensor("weights", weights, ndim=4, floating=True)
    return weights.mean(dim=1).argmax(dim=-1)
