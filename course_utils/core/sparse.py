"""Attention weights with exact zeros: sparsemax and top-k softmax.

Both map a row of scores ``(..., m)`` to weights that are non-negative and sum
to 1, like softmax, but give some keys a weight of exactly 0:

- ``sparsemax`` (Martins & Astudillo, 2016, "From Softmax to Sparsemax") is
  the Euclidean projection of the scores onto the probability simplex:
  ``max(z_j - tau, 0)`` with the threshold ``tau`` chosen so the row sums to 1.
- ``topk_softmax`` keeps the ``k`` largest scores of a row, takes the softmax
  over them and gives every other key exactly 0.

Mask convention as everywhere in the project: True (or 1) = may attend. A row
whose keys are all masked gets zero weights, never NaN.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .masks import check_mask


def _check_scores(scores: Tensor) -> None:
    if not isinstance(scores, Tensor) or not scores.dtype.is_floating_point:
        kind = scores.dtype if isinstance(scores, Tensor) else type(scores).__name__
        raise ValueError(f"scores must be a floating-point tensor (..., m), got {kind}")
    if scores.dim() < 1 or scores.shape[-1] == 0:
        raise ValueError(f"scores must have shape (..., m) with m >= 1 keys, got shape {tuple(scores.shape)}")


def sparsemax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Sparsemax over the last axis: the point of the probability simplex closest to the scores.

    Args:
        scores: ``(..., m)``, e.g. attention scores ``(B, h, n, m)``.
        mask: optional, broadcastable to ``scores``; True (or 1) = may attend.

    Returns:
        weights ``(..., m)``: ``max(scores - tau, 0)``, with one threshold ``tau``
        per row chosen so that each row sums to 1. Keys scoring at or below ``tau``
        get exactly 0; a fully masked row gets all zeros.
    """
    _check_scores(scores)
    if mask is not None:
        mask = check_mask(mask, scores.shape)
        # tau >= (largest score - 1) always, so a score 2 below the largest allowed
        # one gets exactly 0: a finite stand-in for -inf (no inf - inf = NaN).
        largest = scores.masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True)
        largest = torch.where(torch.isfinite(largest), largest, torch.zeros_like(largest))
        scores = torch.where(mask, scores, largest - 2)
    z = scores - scores.amax(dim=-1, keepdim=True)  # same result, and the top score is 0
    z_sorted = z.sort(dim=-1, descending=True).values  # (..., m)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)  # 1, 2, ..., m
    cumsum = z_sorted.cumsum(dim=-1)
    # The j-th largest score stays in the support while 1 + j * z_(j) > z_(1) + ... + z_(j).
    support_size = (1 + k * z_sorted > cumsum).sum(dim=-1, keepdim=True).clamp(min=1)  # (..., 1)
    tau = (cumsum.gather(-1, support_size - 1) - 1) / support_size.to(z.dtype)
    weights = (z - tau).clamp(min=0)
    return weights if mask is None else weights * mask


def topk_softmax(scores: Tensor, k: int, mask: Tensor | None = None) -> Tensor:
    """Softmax over the ``k`` largest scores of each row; every other key gets exactly 0.

    Args:
        scores: ``(..., m)``, e.g. attention scores ``(B, h, n, m)``.
        k: how many keys each row keeps, ``1 <= k <= m`` (ties broken by ``torch.topk``).
        mask: optional, broadcastable to ``scores``; True (or 1) = may attend.
            Masked keys are never kept; a row with fewer than ``k`` allowed keys
            keeps only those, and a fully masked row gets all zeros.

    Returns:
        weights ``(..., m)``, each row summing to 1 (0 for a fully masked row).
        The gradient to a dropped key's score is exactly 0.
    """
    _check_scores(scores)
    m = scores.shape[-1]
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= m:
        raise ValueError(f"k must be an integer with 1 <= k <= m = {m} (scores shape {tuple(scores.shape)}), got {k!r}")
    if mask is not None:
        mask = check_mask(mask, scores.shape)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # finite: no NaN
    kept = scores.topk(k, dim=-1).indices  # (..., k)
    keep = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device).scatter(-1, kept, True)
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    return weights if mask is None else weights * mask
