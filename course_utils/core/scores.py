"""Scoring functions: ``score(q, k)`` for every query/key pair, ``(..., n, m)``.

Dot, scaled dot, additive (Bahdanau) and multiplicative (Luong "general"). Built in notebook 04.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .attention import check_qkv
from .validation import broadcast_shape, require_module_input, require_positive, shape_of


def dot_scores(Q: Tensor, K: Tensor) -> Tensor:
    """Dot-product scores ``q . k`` for ``Q (..., n, d)``, ``K (..., m, d)`` -> ``(..., n, m)``. Built in notebook 04."""
    check_qkv(Q, K)
    return Q @ K.transpose(-2, -1)


def scaled_dot_scores(Q: Tensor, K: Tensor) -> Tensor:
    """Scaled dot-product scores ``q . k / sqrt(d)`` -> ``(..., n, m)``. Built in notebook 04."""
    return dot_scores(Q, K) / math.sqrt(Q.shape[-1])


def _check_query_key(module: nn.Module, Q: Tensor, K: Tensor, d_query: int, d_key: int) -> None:
    """``Q (..., n, d_query)`` and ``K (..., m, d_key)`` in the module's dtype and device, batch dims broadcasting."""
    require_module_input(module, Q=Q, K=K)
    for name, t, d in (("Q", Q, d_query), ("K", K, d_key)):
        if t.dim() < 2 or t.shape[-1] != d:
            raise ValueError(f"{name} must have shape (..., length, {d}), got shape {shape_of(t)}")
    try:
        broadcast_shape(Q.shape[:-2], K.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch) dimensions of Q {shape_of(Q)} and K {shape_of(K)} do not broadcast"
        ) from None


class AdditiveScore(nn.Module):
    """Additive (Bahdanau) score ``v^T tanh(W_q q + W_k k)``.

    Args:
        d_query: size of a query vector (``s_t`` in a seq2seq decoder).
        d_key: size of a key vector (``h_i``, an encoder state).
        d_hidden: size of the tanh layer.

    ``forward(Q (..., n, d_query), K (..., m, d_key)) -> (..., n, m)``. Built in notebook 04.
    """

    def __init__(self, d_query: int, d_key: int, d_hidden: int) -> None:
        super().__init__()
        require_positive(d_query=d_query, d_key=d_key, d_hidden=d_hidden)
        self.W_q = nn.Linear(d_query, d_hidden, bias=False)
        self.W_k = nn.Linear(d_key, d_hidden, bias=False)
        self.v = nn.Linear(d_hidden, 1, bias=False)

    def forward(self, Q: Tensor, K: Tensor) -> Tensor:
        _check_query_key(self, Q, K, self.W_q.in_features, self.W_k.in_features)
        q = self.W_q(Q).unsqueeze(-2)  # (..., n, 1, d_hidden)
        k = self.W_k(K).unsqueeze(-3)  # (..., 1, m, d_hidden)
        return self.v(torch.tanh(q + k)).squeeze(-1)  # (..., n, m)


class MultiplicativeScore(nn.Module):
    """Multiplicative (Luong "general") score ``q^T W k``.

    ``forward(Q (..., n, d_query), K (..., m, d_key)) -> (..., n, m)``; ``W`` is ``(d_query, d_key)``.
    Built in notebook 04.
    """

    def __init__(self, d_query: int, d_key: int) -> None:
        super().__init__()
        require_positive(d_query=d_query, d_key=d_key)
        self.W = nn.Parameter(torch.empty(d_query, d_key))
        nn.init.xavier_uniform_(self.W)

    def forward(self, Q: Tensor, K: Tensor) -> Tensor:
        _check_query_key(self, Q, K, *self.W.shape)
        return Q @ self.W @ K.transpose(-2, -1)
