"""Circuits read off an attention model's weights (Elhage et al. 2021), for the induction heads of notebook 07b.

- ``head_matrices``: one head of one layer as matrices acting on a row, ``x @ W``;
- ``qk_circuit``: what a head looks for, the score of each query input against each key input;
- ``ov_circuit``: what it writes, the logits it adds when it attends to each input;
- ``without_layer_1``: layer 2's keys (or queries, or values) made without layer 1's output, the causal test
  of K-composition.

Biases, the 1/sqrt(d_k) and the softmax are left out, as in Elhage et al.; ``d_model`` features, ``d_k`` per head,
``V`` vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..core.masks import causal_mask
from ..core.validation import is_int, require_index_range, require_tensor, shape_of
from .induction import AttentionOnlyTransformer, attention_layers


def qk_circuit(queries_from: Tensor, keys_from: Tensor, W_Q: Tensor, W_K: Tensor) -> Tensor:
    """The QK circuit: ``(queries_from W_Q) (keys_from W_K)^T``, the score (before the 1/sqrt(d_k) and the
    softmax; biases left out, as in Elhage et al.) that a head gives each query input against each key input.

    ``queries_from (n, d_model)``, ``keys_from (m, d_model)``: streams (rows of embeddings, positions, or what
    an earlier head writes); ``W_Q``, ``W_K (d_model, d_k)`` (``x @ W``). Returns ``(n, m)``. Notebook 07b."""
    for name, x in (("queries_from", queries_from), ("keys_from", keys_from), ("W_Q", W_Q), ("W_K", W_K)):
        require_tensor(name, x, ndim=2, floating=True)
    d, d_k = W_Q.shape
    if W_K.shape != W_Q.shape or queries_from.shape[1] != d or keys_from.shape[1] != d:
        raise ValueError(f"need queries_from (n, d), keys_from (m, d), W_Q and W_K (d, d_k), got "
                         f"{shape_of(queries_from)}, {shape_of(keys_from)}, {shape_of(W_Q)}, {shape_of(W_K)}")
    return (queries_from @ W_Q) @ (keys_from @ W_K).T


def ov_circuit(reads: Tensor, W_V: Tensor, W_O: Tensor, W_U: Tensor) -> Tensor:
    """The OV circuit: ``reads W_V W_O W_U``, the logits a head adds to the prediction when it attends
    fully to a position holding each row of ``reads`` (biases and LayerNorm left out).

    ``reads (n, d_model)``, ``W_V (d_model, d_k)``, ``W_O (d_k, d_model)``, ``W_U (d_model, V)``. Returns
    ``(n, V)``. Notebook 07b."""
    for name, x in (("reads", reads), ("W_V", W_V), ("W_O", W_O), ("W_U", W_U)):
        require_tensor(name, x, ndim=2, floating=True)
    if not reads.shape[1] == W_V.shape[0] == W_O.shape[1] == W_U.shape[0] or W_V.shape[1] != W_O.shape[0]:
        raise ValueError(f"need reads (n, d), W_V (d, d_k), W_O (d_k, d), W_U (d, V), got {shape_of(reads)}, "
                         f"{shape_of(W_V)}, {shape_of(W_O)}, {shape_of(W_U)}")
    return reads @ W_V @ W_O @ W_U


def head_matrices(model: nn.Module, layer: int, head: int = 0) -> dict[str, Tensor]:
    """Head ``head`` of layer ``layer`` (from 0) as matrices acting on a row ``x`` (``x @ W``): ``W_Q``,
    ``W_K``, ``W_V (d_model, d_k)`` and ``W_O (d_k, d_model)``, detached. Notebook 07b."""
    attentions = attention_layers(model)
    if not (is_int(layer) and 0 <= layer < len(attentions) and is_int(head) and 0 <= head < attentions[0].num_heads):
        raise ValueError(f"need layer in 0..{len(attentions) - 1} and head in 0..{attentions[0].num_heads - 1}, "
                         f"got layer={layer!r}, head={head!r}")
    mha = attentions[layer]
    rows = slice(head * mha.d_k, (head + 1) * mha.d_k)
    return {"W_Q": mha.W_q.weight[rows].detach().T, "W_K": mha.W_k.weight[rows].detach().T,
            "W_V": mha.W_v.weight[rows].detach().T, "W_O": mha.W_o.weight[:, rows].detach().T}


@torch.no_grad()
def without_layer_1(model: AttentionOnlyTransformer, tokens: Tensor, part: str = "key") -> Tensor:
    """Logits ``(B, T, V)`` of a 2-layer ``model`` in which layer 2's ``part`` (``"query"``, ``"key"`` or
    ``"value"``) is made from the stream *without* layer 1's output (token + position only); the other two
    parts see the full stream, as usual. ``part="key"`` tests K-composition (Elhage et al. 2021). Notebook 07b."""
    if not isinstance(model, AttentionOnlyTransformer) or len(model.attentions) != 2:
        raise TypeError("model must be an AttentionOnlyTransformer with 2 layers")
    if part not in ("query", "key", "value"):
        raise ValueError(f"part must be 'query', 'key' or 'value', got {part!r}")
    require_tensor("tokens", tokens, ndim=2, integer=True)
    require_index_range("tokens", tokens, 0, model.vocab_size)
    mask = causal_mask(tokens.shape[1], device=tokens.device)
    x0 = model.position(model.token_embedding(tokens))  # (B, T, d_model): no layer yet
    x1 = x0 + model.attentions[0](*(model.norms[0](x0),) * 3, mask)[0]
    full, bare = model.norms[1](x1), model.norms[1](x0)
    inputs = [bare if part == name else full for name in ("query", "key", "value")]
    x2 = x1 + model.attentions[1](*inputs, mask)[0]
    return model.head(model.norm(x2))
