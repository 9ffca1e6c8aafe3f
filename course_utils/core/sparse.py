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
from .validation import is_int, require_tensor


def _check_scores(scores: Tensor) -> None:
    require_tensor("scores", scores, min_ndim=1, floating=True, shape="(..., m)")
    if scores.shape[-1] == 0:
        raise ValueError(f"scores must have shape (..., m) with m >= 1 keys, got shape {tuple(scores.shape)}")


class _Sparsemax(torch.autograd.Function):
    """Sparsemax of rows ``z (..., m)`` whose largest entry is 0, with its closed-form Jacobian.

    On the support S (the keys with weight > 0) the Jacobian is ``I - 1 1^T / |S|``, elsewhere 0:
    ``grad_z = s * (g - mean of g over S)`` with ``s`` = 1 on S. A key with weight 0 gets no
    gradient even when its score ties with the threshold (where ``clamp`` would let one through).
    """

    @staticmethod
    def forward(ctx, z: Tensor) -> Tensor:
        z_sorted = z.sort(dim=-1, descending=True).values  # (..., m)
        k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)  # 1, 2, ..., m
        cumsum = z_sorted.cumsum(dim=-1)
        # The j-th largest score stays in the support while 1 + j * z_(j) > z_(1) + ... + z_(j).
        support_size = (1 + k * z_sorted > cumsum).sum(dim=-1, keepdim=True).clamp(min=1)  # (..., 1)
        tau = (cumsum.gather(-1, support_size - 1) - 1) / support_size.to(z.dtype)
        weights = (z - tau).clamp(min=0)
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor) -> Tensor:
        (weights,) = ctx.saved_tensors
        support = (weights > 0).to(grad.dtype)
        mean = (grad * support).sum(dim=-1, keepdim=True) / support.sum(dim=-1, keepdim=True)
        return support * (grad - mean)


def sparsemax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    """Sparsemax over the last axis: the point of the probability simplex closest to the scores.

    Args:
        scores: ``(..., m)``, e.g. attention scores ``(B, h, n, m)``.
        mask: optional, broadcastable to ``scores``; True (or 1) = may attend.

    Returns:
        weights ``(..., m)``: ``max(scores - tau, 0)``, with one threshold ``tau``
        per row chosen so that each row sums to 1. Keys scoring at or below ``tau``
        get exactly 0, and exactly 0 gradient; a fully masked row gets all zeros. Built in notebook 10.
    """
    _check_scores(scores)
    if mask is None:
        # Same result for any shift; with the top score at 0, no overflow in the cumulative sums.
        return _Sparsemax.apply(scores - scores.detach().amax(dim=-1, keepdim=True))
    mask = check_mask(mask, scores.shape, device=scores.device)
    largest = scores.detach().masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True)
    largest = torch.where(torch.isfinite(largest), largest, torch.zeros_like(largest))  # fully masked row
    # After the shift the top allowed score is 0 and tau >= -1, so a masked key set to -2 gets
    # exactly 0. Setting it after the shift, not before: largest - 2 rounds to largest for a
    # large score (3e7 in float32), a masked key would then tie with the best one.
    z = torch.where(mask, scores - largest, torch.full_like(largest, -2.0))
    return _Sparsemax.apply(z) * mask


def topk_softmax(scores: Tensor, k: int, mask: Tensor | None = None) -> Tensor:
    """Softmax over the ``k`` largest scores of each row; every other key gets exactly 0.

    Args:
        scores: ``(..., m)``, e.g. attention scores ``(B, h, n, m)``.
        k: how many keys each row keeps, ``1 <= k <= m`` (ties broken by ``torch.topk``);
            a Python or NumPy integer.
        mask: optional, broadcastable to ``scores``; True (or 1) = may attend.
            Masked keys are never kept; a row with fewer than ``k`` allowed keys
            keeps only those, and a fully masked row gets all zeros.

    Returns:
        weights ``(..., m)``, each row summing to 1 (0 for a fully masked row).
        The gradient to a dropped key's score is exactly 0. Built in notebook 10.
    """
    _check_scores(scores)
    m = scores.shape[-1]
    if not is_int(k) or not 1 <= k <= m:
        raise ValueError(f"k must be an integer with 1 <= k <= m = {m} (scores shape {tuple(scores.shape)}), got {k!r}")
    if mask is not None:
        mask = check_mask(mask, scores.shape, device=scores.device)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # finite: no NaN
    kept = scores.topk(int(k), dim=-1).indices  # (..., k)
    keep = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device).scatter(-1, kept, True)
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    return weights if mask is None else weights * mask
