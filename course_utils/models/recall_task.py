"""A toy key-value recall task and a one-head attention model for quick experiments.

The task: an example holds ``P`` (key, value) pairs of token ids, keys all
different, and one query that equals one of the keys. The answer is the value
stored with that key. A model can only solve it by attending to the matching
key, so it shows directly whether the attention learns to pick the right one.

``RecallAttention(scale=True/False)`` is one attention head with or without the
division by ``sqrt(d_k)``; ``train_recall`` trains it and records the curves. Used in notebook 10.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.validation import require_bool, require_generator, require_index_range, require_nonempty, require_positive_int
from ..core.validation import require_tensor
from .training import train_steps


def recall_batch(
    batch_size: int, num_pairs: int, num_keys: int, num_values: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """A batch of the recall task (on the CPU).

    Returns:
        keys ``(B, P)``: ``P = num_pairs`` different key ids per example, from ``0..num_keys-1``;
        values ``(B, P)``: a value id (``0..num_values-1``) stored with each key;
        query ``(B,)``: one of the example's keys;
        target ``(B,)``: the value stored with the query key. Used in notebook 10.
    """
    require_positive_int(batch_size=batch_size, num_pairs=num_pairs, num_keys=num_keys, num_values=num_values)
    require_generator(generator)
    if num_pairs > num_keys:
        raise ValueError(f"num_pairs={num_pairs} different keys need num_keys >= num_pairs, got num_keys={num_keys}")
    keys = torch.rand(batch_size, num_keys, generator=generator).argsort(dim=-1)[:, :num_pairs]
    values = torch.randint(num_values, (batch_size, num_pairs), generator=generator)
    slot = torch.randint(num_pairs, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    return keys, values, keys[rows, slot], values[rows, slot]


class RecallAttention(nn.Module):
    """Embeddings, one attention head, a linear read-out.

    query ``q = W_q e(query)``, keys ``k_i = W_k e(key_i)``, values = the value
    embeddings; scores ``q . k_i``, divided by ``sqrt(d_k)`` only if ``scale``.
    ``W_q`` and ``W_k`` start with N(0, 1/d_model) entries, so with N(0, 1)
    embeddings every entry of q and k has variance 1: the setting of the
    variance argument, where unscaled scores have variance ``d_k``.

    ``forward(keys (B, P), values (B, P), query (B,))`` returns
    ``(logits (B, num_values), weights (B, P))``. Used in notebook 10.
    """

    def __init__(self, num_keys: int, num_values: int, d_model: int, d_k: int, scale: bool = True) -> None:
        super().__init__()
        require_positive_int(num_keys=num_keys, num_values=num_values, d_model=d_model, d_k=d_k)
        require_bool(scale=scale)
        self.scale, self.d_k = scale, d_k
        self.key_embedding = nn.Embedding(num_keys, d_model)
        self.value_embedding = nn.Embedding(num_values, d_model)
        self.W_q = nn.Linear(d_model, d_k, bias=False)
        self.W_k = nn.Linear(d_model, d_k, bias=False)
        self.readout = nn.Linear(d_model, num_values)
        for W in (self.W_q, self.W_k):
            nn.init.normal_(W.weight, std=1 / math.sqrt(d_model))

    def scores(self, keys: Tensor, query: Tensor) -> Tensor:
        """Attention scores ``(B, P)`` of each query against its example's keys."""
        require_tensor("keys", keys, integer=True)
        require_tensor("query", query, integer=True)
        if keys.dim() != 2 or query.shape != keys.shape[:1]:
            raise ValueError(f"keys must have shape (B, P) and query shape (B,), got {tuple(keys.shape)} and {tuple(query.shape)}")
        require_nonempty("keys", keys, -1, "P key/value pairs")  # a softmax over no keys: nothing to recall
        device = self.W_q.weight.device
        if keys.device != device or query.device != device:
            raise ValueError(f"keys and query must be on the model's device {device}, got {keys.device} and {query.device}")
        num_keys = self.key_embedding.num_embeddings
        require_index_range("keys", keys, 0, num_keys)
        require_index_range("query", query, 0, num_keys)
        q = self.W_q(self.key_embedding(query))  # (B, d_k)
        k = self.W_k(self.key_embedding(keys))  # (B, P, d_k)
        s = (k @ q.unsqueeze(-1)).squeeze(-1)  # (B, P)
        return s / math.sqrt(self.d_k) if self.scale else s

    def forward(self, keys: Tensor, values: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        require_tensor("values", values, integer=True)
        require_tensor("keys", keys)
        if values.shape != keys.shape or values.device != keys.device:
            raise ValueError(f"keys and values must have the same shape (B, P) and device, got {tuple(keys.shape)} on "
                             f"{keys.device} and {tuple(values.shape)} on {values.device}")
        weights = torch.softmax(self.scores(keys, query), dim=-1)  # (B, P)
        require_index_range("values", values, 0, self.value_embedding.num_embeddings)
        context = (weights.unsqueeze(1) @ self.value_embedding(values)).squeeze(1)  # (B, d_model)
        return self.readout(context), weights


def train_recall(
    model: RecallAttention,
    *,
    steps: int,
    num_pairs: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    eval_every: int = 10,
    eval_size: int = 1000,
    seed: int = 0,
    target: float | None = None,
    name: str = "train_recall",
) -> dict[str, list[float]]:
    """Train ``model`` with Adam on fresh random batches of the recall task.

    The training batches come from a generator seeded with ``seed``; the held-out
    set (``eval_size`` examples) is the same for every call. The model's key and
    value vocabularies set the task's ``num_keys`` and ``num_values``.

    Returns lists: ``loss`` (one per step), and every ``eval_every`` steps
    ``eval_step``, held-out ``accuracy`` and ``correct_weight`` (mean attention
    weight on the matching key). Early stop: with ``target``, the training ends at the first
    measurement whose held-out accuracy is ``>= target``. ``name`` names it in the training record.
    Notebook 10.
    """
    require_positive_int(steps=steps, eval_every=eval_every, num_pairs=num_pairs, batch_size=batch_size, eval_size=eval_size)
    device = next(model.parameters()).device
    num_keys, num_values = model.key_embedding.num_embeddings, model.value_embedding.num_embeddings
    held_out = recall_batch(eval_size, num_pairs, num_keys, num_values, torch.Generator().manual_seed(12345))
    held_out = [t.to(device) for t in held_out]
    history: dict[str, list[float]] = {"loss": [], "eval_step": [], "accuracy": [], "correct_weight": []}

    def batch_loss(generator: torch.Generator) -> Tensor:
        keys, values, query, target = (t.to(device) for t in recall_batch(batch_size, num_pairs, num_keys, num_values, generator))
        logits, _ = model(keys, values, query)
        return F.cross_entropy(logits, target)

    def evaluate_every(step: int) -> None:
        if step % eval_every == 0:
            with torch.no_grad():
                keys, values, query, target = held_out
                logits, weights = model(keys, values, query)
                history["eval_step"].append(step)
                history["accuracy"].append((logits.argmax(-1) == target).float().mean().item())
                history["correct_weight"].append(weights[keys == query.unsqueeze(1)].mean().item())

    def reached(_model) -> float:  # the accuracy just measured (evaluate_every ran first, at the same step)
        return history["accuracy"][-1]

    history["loss"] = train_steps(model, batch_loss, steps=steps, lr=lr, seed=seed, on_step=evaluate_every, name=name,
                                  stop_when=None if target is None else reached, target=target, check_every=eval_every)
    return history
