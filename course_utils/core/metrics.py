"""Numbers that describe an attention pattern (notebooks 02 and 07), and heads labelled by them (07)."""

from __future__ import annotations

import torch
from torch import Tensor

from .validation import require_positive_float, require_positive_int, require_tensor


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


def classify_heads(distance: Tensor, n: int, local_below: float = 0.5, global_above: float = 0.75) -> list[str]:
    """Label each head ``"local"``, ``"mixed"`` or ``"global"`` by its mean attention distance (notebook 07).

    Args:
        distance: ``(h,)`` mean attention distance of each head, e.g.
            ``mean_attention_distance(weights).mean(dim=0)`` for weights ``(B, h, n, n)``.
        n: the sequence length (n >= 2); uniform attention over n positions has mean distance ``(n^2 - 1) / (3n)``.
        local_below, global_above: thresholds on ``ratio = distance / ((n^2 - 1) / (3n))``, with
            ``0 <= local_below <= global_above``.

    Returns:
        A list of h strings in head order: ``ratio < local_below`` -> "local",
        ``ratio > global_above`` -> "global", otherwise "mixed".
    """
    require_tensor("distance", distance, ndim=1, floating=True)
    require_positive_int(n=n)
    require_positive_float(allow_zero=True, local_below=local_below, global_above=global_above)
    if n < 2 or local_below > global_above:
        raise ValueError(f"need n >= 2 and local_below <= global_above, got n={n}, local_below={local_below}, global_above={global_above}")
    ratio = distance / ((n * n - 1) / (3 * n))
    return ["local" if r < local_below else "global" if r > global_above else "mixed" for r in ratio.tolist()]
