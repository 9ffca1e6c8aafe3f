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
        uniform row. ``0 log 0`` counts as 0. Built in notebook 02 (per head: 07).
    """
    require_tensor("weights", weights, min_ndim=1, floating=True, shape="(..., m)")
    return torch.special.entr(weights).sum(dim=-1)  # entr(a) = -a log a, and entr(0) = 0


def mean_attention_distance(weights: Tensor) -> Tensor:
    """Average ``|i - j|`` between query position i and key position j, weighted by attention.

    Args:
        weights: ``(..., n, m)`` with query i and key j in the same positions
            (self-attention), rows summing to 1.

    Returns:
        ``(...)``: the mean over the n queries of ``sum_j a_ij |i - j|``. Small for
        local heads, large for heads that look far away. Built in notebook 07.
    """
    require_tensor("weights", weights, min_ndim=2, floating=True, shape="(..., n, m)")
    n, m = weights.shape[-2:]
    i = torch.arange(n, device=weights.device).unsqueeze(1)
    j = torch.arange(m, device=weights.device).unsqueeze(0)
    distance = (i - j).abs().to(weights.dtype)  # (n, m)
    return (weights * distance).sum(dim=-1).mean(dim=-1)
