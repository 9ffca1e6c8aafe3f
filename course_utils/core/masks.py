"""Masks: which keys each query may attend to.

Convention for the whole project: **True (or 1) = may attend**, as in
``torch.nn.functional.scaled_dot_product_attention``. (``torch.nn.MultiheadAttention``
uses the opposite, True = blocked: pass it ``~mask``.) Built in notebook 01b.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .validation import broadcast_shape, is_int, require_device, require_int, require_positive, require_tensor, shape_of


def check_mask(mask: Tensor, scores_shape: torch.Size, device: torch.device | None = None) -> Tensor:
    """Return ``mask`` as a bool tensor after checking it broadcasts to ``scores_shape`` ``(..., n, m)``.

    Accepts bool masks and integer masks holding only 0 and 1 (1 = may attend). A floating-point
    mask is refused: it could be an additive ``0 / -inf`` mask, the other convention. A mask on
    another ``device`` than the scores' is refused too (not moved behind your back): build it
    there, e.g. ``causal_mask(n, device=x.device)``. Built in notebook 01b.
    """
    require_tensor("mask", mask)
    if not isinstance(scores_shape, (tuple, list)) or not all(is_int(n) and n >= 0 for n in scores_shape):
        raise ValueError(f"scores_shape must be a torch.Size or tuple of sizes (..., n, m), got {scores_shape!r}")
    scores_shape, device = torch.Size(scores_shape), require_device(device)
    if device is not None and mask.device != device:
        raise ValueError(
            f"mask is on device {mask.device} but the attention scores are on {device}: "
            f"create it there (causal_mask(n, device=...)) or move it with mask.to({str(device)!r})"
        )
    if mask.dtype.is_floating_point or mask.dtype.is_complex:
        raise ValueError(
            f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype} with shape {shape_of(mask)}; "
            "a float mask looks like an additive 0/-inf mask, which this project does not use"
        )
    try:
        broadcast = broadcast_shape(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(
            f"mask of shape {shape_of(mask)} does not broadcast to the attention scores' shape "
            f"{tuple(scores_shape)} (..., n queries, m keys)"
        )
    if mask.dtype != torch.bool and mask.device.type != "meta":
        if not ((mask == 0) | (mask == 1)).all():
            raise ValueError(
                f"an integer mask must hold only 0 and 1 (1 = may attend), got values {sorted(mask.unique().tolist())[:6]} "
                f"in shape {shape_of(mask)}; note that ~ on an int mask gives -1/-2, not 1/0: use a bool mask"
            )
    return mask if mask.dtype == torch.bool else mask == 1


def causal_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """``(n, n)`` bool mask, True on and below the diagonal: query i may attend to keys 0..i.

    ``device``: where to build it; pass your inputs' device (``causal_mask(T, device=x.device)``).
    Built in notebook 01b (and by the student in 05).
    """
    require_positive(n=n)
    return torch.ones(n, n, dtype=torch.bool, device=require_device(device)).tril()


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Mask of the real (non-pad) keys of a batch of token ids.

    Args:
        tokens: token ids ``(B, m)``, an integer tensor.
        pad_id: the id that marks padding.

    Returns:
        bool ``(B, 1, m)``: True where the key is a real token. It broadcasts
        over the queries of ``(B, n, m)`` scores; ``MultiHeadAttention`` also
        broadcasts it over heads. Built in notebook 01b.
    """
    require_tensor("tokens", tokens, ndim=2, integer=True, shape="(B, m)")
    require_int(pad_id=pad_id)
    return (tokens != pad_id).unsqueeze(1)
