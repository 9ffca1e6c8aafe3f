"""Numbers that describe an attention pattern (notebooks 02 and 07), and heads labelled by them (07)."""

from __future__ import annotations

from numbers import Integral

import torch
from torch import Tensor

from .validation import require_nonempty, require_positive_float, require_positive_int, require_tensor, require_weights


def attention_entropy(weights: Tensor) -> Tensor:
    """Entropy ``H = -sum_j a_j log a_j`` (nats) of each attention row.

    Args:
        weights: ``(..., n, m)``, rows summing to 1 (or all zero for a fully masked row).

    Returns:
        ``(..., n)``: 0 for a row that puts all weight on one key, ``log m`` for a
        uniform row. ``0 log 0`` counts as 0. Built in notebook 02 (per head: 07).
    """
    require_tensor("weights", weights, min_ndim=1, floating=True, shape="(..., m)")
    require_weights("weights", weights, rows=True)  # log of a negative weight: -inf; of a non-distribution: nonsense
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
    require_nonempty("weights", weights, -1, "m keys")
    require_weights("weights", weights)  # NaN would win the argmax
    return weights.mean(dim=1).argmax(dim=-1)


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
    if distance.isnan().any():
        raise ValueError(f"distance must hold numbers, got NaN in {distance.tolist()} (a head with no weights?)")
    if n < 2 or local_below > global_above:
        raise ValueError(f"need n >= 2 and local_below <= global_above, got n={n}, local_below={local_below}, global_above={global_above}")
    ratio = distance / ((n * n - 1) / (3 * n))
    return ["local" if r < local_below else "global" if r > global_above else "mixed" for r in ratio.tolist()]
