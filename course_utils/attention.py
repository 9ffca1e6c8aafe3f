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
from numbers import Integral

import torch
from torch import Tensor, nn


def _shape(t: Tensor) -> str:
    return str(tuple(t.shape))


def _require_positive(**sizes: int) -> None:
    """Raise ValueError for any size that is not a positive integer (Python or NumPy)."""
    for name, value in sizes.items():
        if not isinstance(value, Integral) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_qkv(Q: Tensor, K: Tensor, V: Tensor | None = None) -> None:
    """Check that ``Q (..., n, d_k)``, ``K (..., m, d_k)`` and ``V (..., m, d_v)`` fit.

    Raises ValueError naming the shapes it got.
    """
    named = {"Q": Q, "K": K} if V is None else {"Q": Q, "K": K, "V": V}
    for name, t in named.items():
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., length, features), got shape {_shape(t)}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"Q and K must have the same feature size d_k: Q has shape {_shape(Q)} (d_k={Q.shape[-1]}), "
            f"K has shape {_shape(K)} (d_k={K.shape[-1]})"
        )
    if V is not None and K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K and V must have the same length m (one value per key): K has shape {_shape(K)} (m={K.shape[-2]}), "
            f"V has shape {_shape(V)} (m={V.shape[-2]})"
        )
    try:
        torch.broadcast_shapes(*(t.shape[:-2] for t in named.values()))
    except RuntimeError:
        raise ValueError(
            "the leading (batch/head) dimensions of Q, K, V do not broadcast: "
            + ", ".join(f"{k} {_shape(t)}" for k, t in named.items())
        ) from None


def check_mask(mask: Tensor, scores_shape: torch.Size) -> Tensor:
    """Return ``mask`` as a bool tensor after checking it broadcasts to ``scores_shape`` ``(..., n, m)``.

    Accepts bool masks and integer masks holding only 0 and 1 (1 = may attend). A floating-point
    mask is refused: it could be an additive ``0 / -inf`` mask, the other convention.
    """
    if mask.dtype.is_floating_point or mask.dtype.is_complex:
        raise ValueError(
            f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype} with shape {_shape(mask)}; "
            "a float mask looks like an additive 0/-inf mask, which this project does not use"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(
            f"mask of shape {_shape(mask)} does not broadcast to the attention scores' shape "
            f"{tuple(scores_shape)} (..., n queries, m keys)"
        )
    if mask.dtype != torch.bool:
        if not ((mask == 0) | (mask == 1)).all():
            raise ValueError(
                f"an integer mask must hold only 0 and 1 (1 = may attend), got values {sorted(mask.unique().tolist())[:6]} "
                f"in shape {_shape(mask)}; note that ~ on an int mask gives -1/-2, not 1/0: use a bool mask"
            )
        mask = mask == 1
    return mask


def scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V, returning ``(output, weights)``.

    Args:
        Q: queries ``(..., n, d_k)``.
        K: keys ``(..., m, d_k)``.
        V: values ``(..., m, d_v)``.
        mask: optional, broadcastable to ``(..., n, m)``; True (or 1) = may attend.

    Returns:
        output ``(..., n, d_v)`` and weights ``(..., n, m)``; each weight row sums
        to 1, except a row whose keys are all masked: its weights and its output
        are zero (as in PyTorch's ``F.scaled_dot_product_attention``), never NaN.
    """
    check_qkv(Q, K, V)
    d_k = Q.shape[-1]
    # Scaling Q (n x d_k numbers) is cheaper than scaling the scores (n x m numbers).
    scores = (Q / math.sqrt(d_k)) @ K.transpose(-2, -1)  # (..., n, m)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        mask = check_mask(mask, scores.shape)
        # The most negative finite number instead of -inf: a fully masked row
        # then gives a finite (uniform) softmax, which the multiplication by the
        # mask turns into zeros, with no NaN in the forward or backward pass.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1) * mask
    return weights @ V, weights


def causal_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """``(n, n)`` bool mask, True on and below the diagonal: query i may attend to keys 0..i."""
    _require_positive(n=n)
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Mask of the real (non-pad) keys of a batch of token ids.

    Args:
        tokens: token ids ``(B, m)``.
        pad_id: the id that marks padding.

    Returns:
        bool ``(B, 1, m)``: True where the key is a real token. It broadcasts
        over the queries of ``(B, n, m)`` scores; ``MultiHeadAttention`` also
        broadcasts it over heads.
    """
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (B, m), got shape {_shape(tokens)}")
    return (tokens != pad_id).unsqueeze(1)


# --- Scoring functions: score(q, k) for every query/key pair -> (..., n, m) ---


def dot_scores(Q: Tensor, K: Tensor) -> Tensor:
    """Dot-product scores ``q . k`` for ``Q (..., n, d)``, ``K (..., m, d)`` -> ``(..., n, m)``."""
    check_qkv(Q, K)
    return Q @ K.transpose(-2, -1)


def scaled_dot_scores(Q: Tensor, K: Tensor) -> Tensor:
    """Scaled dot-product scores ``q . k / sqrt(d)`` -> ``(..., n, m)``."""
    return dot_scores(Q, K) / math.sqrt(Q.shape[-1])


class AdditiveScore(nn.Module):
    """Additive (Bahdanau) score ``v^T tanh(W_q q + W_k k)``.

    Args:
        d_query: size of a query vector (``s_t`` in a seq2seq decoder).
        d_key: size of a key vector (``h_i``, an encoder state).
        d_hidden: size of the tanh layer.

    ``forward(Q (..., n, d_query), K (..., m, d_key)) -> (..., n, m)``.
    """

    def __init__(self, d_query: int, d_key: int, d_hidden: int) -> None:
        super().__init__()
        _require_positive(d_query=d_query, d_key=d_key, d_hidden=d_hidden)
        self.W_q = nn.Linear(d_query, d_hidden, bias=False)
        self.W_k = nn.Linear(d_key, d_hidden, bias=False)
        self.v = nn.Linear(d_hidden, 1, bias=False)

    def forward(self, Q: Tensor, K: Tensor) -> Tensor:
        for name, t, d in (("Q", Q, self.W_q.in_features), ("K", K, self.W_k.in_features)):
            if t.dim() < 2 or t.shape[-1] != d:
                raise ValueError(f"{name} must have shape (..., length, {d}), got shape {_shape(t)}")
        q = self.W_q(Q).unsqueeze(-2)  # (..., n, 1, d_hidden)
        k = self.W_k(K).unsqueeze(-3)  # (..., 1, m, d_hidden)
        return self.v(torch.tanh(q + k)).squeeze(-1)  # (..., n, m)


class MultiplicativeScore(nn.Module):
    """Multiplicative (Luong "general") score ``q^T W k``.

    ``forward(Q (..., n, d_query), K (..., m, d_key)) -> (..., n, m)``; ``W`` is ``(d_query, d_key)``.
    """

    def __init__(self, d_query: int, d_key: int) -> None:
        super().__init__()
        _require_positive(d_query=d_query, d_key=d_key)
        self.W = nn.Parameter(torch.empty(d_query, d_key))
        nn.init.xavier_uniform_(self.W)

    def forward(self, Q: Tensor, K: Tensor) -> Tensor:
        d_query, d_key = self.W.shape
        for name, t, d in (("Q", Q, d_query), ("K", K, d_key)):
            if t.dim() < 2 or t.shape[-1] != d:
                raise ValueError(f"{name} must have shape (..., length, {d}), got shape {_shape(t)}")
        return Q @ self.W @ K.transpose(-2, -1)
