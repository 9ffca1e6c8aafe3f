"""Numbers that describe an attention pattern."""

from __future__ import annotations

from numbers import Integral

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


def offset_share(weights: Tensor, offset: int) -> Tensor:
    """Mean weight that a query puts on the key ``offset`` positions away from it (built in notebook 02).

    Args:
        weights: ``(..., n, m)``, query i in row i, key j in column j.
        offset: ``k = j - i``: 0 is the diagonal, -1 the previous position, +1 the next one.

    Returns:
        ``(...)``: the mean of ``weights[..., i, i + k]`` over the queries i that have that key,
        ``0 <= i + k < m`` (a query without it is left out, not counted as 0).
    """
    require_tensor("weights", weights, min_ndim=2, floating=True)
    n, m = weights.shape[-2:]
    if not isinstance(offset, Integral) or isinstance(offset, bool) or not -n < offset < m:
        raise ValueError(f"offset must be an integer from {1 - n} to {m - 1} (so that some query has a key at "
                         f"i + offset) for weights of shape {tuple(weights.shape)}, got {offset!r}")
    return weights.diagonal(int(offset), dim1=-2, dim2=-1).mean(dim=-1)


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
