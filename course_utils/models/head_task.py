"""A small task on which the heads of one multi-head attention layer have reason to differ.

The *neighbours-and-count* task: a sequence of ``length`` symbols ``a, b, c, ...`` in which
0 to ``max_markers`` symbols have been replaced by the marker ``#``. At every position the
model answers three questions at once:

- ``prev``:  which symbol stands just before me?  (``-`` at the first position)
- ``next``:  which symbol stands just after me?   (``-`` at the last position)
- ``count``: how many ``#`` are in the whole sequence?

The first two need one specific neighbour (a sharp, *local* look), the third needs the whole
sequence (a broad, *global* look). One softmax cannot do all three at once, several heads can.

``HeadsModel`` is the smallest model for it: token and learned position embeddings, one
``MultiHeadAttention`` with a residual connection, and a small MLP readout per position.
``train_heads_model`` trains it on freshly sampled batches, ``evaluate`` measures accuracy,
and ``ablate_heads`` switches heads off to test what they are used for. Used in notebook 07 (and 12).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.multihead import MultiHeadAttention
from ..core.validation import (
    is_int, require_device, require_generator, require_index_range, require_instance, require_nonnegative_int,
    require_positive_int, require_tensor, shape_of,
)
from .training import train_steps


class ToyBatch(NamedTuple):
    """One batch of the neighbours-and-count task; every field has shape ``(B, n)``. Used in notebook 07."""

    tokens: Tensor  # symbol ids, 0..num_symbols-1, or marker_id
    prev: Tensor  # id of the symbol before each position; edge_id at position 0
    next: Tensor  # id of the symbol after each position; edge_id at position n-1
    count: Tensor  # number of markers in the sequence (the same at every position)

    def to(self, device: torch.device | str) -> ToyBatch:
        """The same batch on ``device``."""
        device = require_device(device)
        return ToyBatch(*(t.to(device) for t in self))


@dataclass(frozen=True)
class NeighbourCountTask:
    """The neighbours-and-count task (see the module docstring).

    Ids: symbols ``0..num_symbols-1``, the marker ``#`` is ``num_symbols`` and ``-``
    ("no neighbour", a label only, never an input) is ``num_symbols + 1``. Used in notebook 07.
    """

    length: int = 12
    num_symbols: int = 6
    max_markers: int = 3

    def __post_init__(self) -> None:
        require_positive_int(length=self.length, num_symbols=self.num_symbols)
        require_nonnegative_int(max_markers=self.max_markers)
        if self.length < 2 or self.num_symbols < 1 or self.num_symbols > 26:
            raise ValueError(
                f"need length >= 2 and 1 <= num_symbols <= 26, got length={self.length}, num_symbols={self.num_symbols}"
            )
        if not 0 <= self.max_markers <= self.length:
            raise ValueError(f"need 0 <= max_markers <= length={self.length}, got max_markers={self.max_markers}")

    @property
    def marker_id(self) -> int:
        return self.num_symbols

    @property
    def edge_id(self) -> int:
        return self.num_symbols + 1

    @property
    def vocab_size(self) -> int:
        """Number of input ids: the symbols and the marker."""
        return self.num_symbols + 1

    @property
    def num_neighbour_classes(self) -> int:
        """Answers to ``prev`` / ``next``: a symbol, the marker or ``-``."""
        return self.num_symbols + 2

    @property
    def num_count_classes(self) -> int:
        return self.max_markers + 1

    def names(self) -> list[str]:
        """Text of every id: ``['a', 'b', ..., '#', '-']``."""
        return [chr(ord("a") + i) for i in range(self.num_symbols)] + ["#", "-"]

    def to_text(self, ids: Tensor) -> list[str]:
        """``(n,)`` ids -> ``n`` strings, e.g. for heatmap labels."""
        require_tensor("ids", ids, ndim=1, integer=True)
        require_index_range("ids", ids, 0, self.num_symbols + 2)
        names = self.names()
        return [names[i] for i in ids.tolist()]

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> ToyBatch:
        """``batch_size`` random sequences (on the CPU; use ``.to(device)``).

        The marker count is uniform in ``0..max_markers``; the markers sit at distinct random positions.
        """
        require_positive_int(batch_size=batch_size)
        require_generator(generator)
        B, n = batch_size, self.length
        tokens = torch.randint(0, self.num_symbols, (B, n), generator=generator)
        count = torch.randint(0, self.max_markers + 1, (B,), generator=generator)
        rank = torch.rand(B, n, generator=generator).argsort(dim=1).argsort(dim=1)  # a random permutation per row
        tokens = torch.where(rank < count[:, None], torch.full_like(tokens, self.marker_id), tokens)
        prev = torch.full_like(tokens, self.edge_id)
        prev[:, 1:] = tokens[:, :-1]
        nxt = torch.full_like(tokens, self.edge_id)
        nxt[:, :-1] = tokens[:, 1:]
        return ToyBatch(tokens, prev, nxt, count[:, None].expand(B, n).clone())


class HeadsModel(nn.Module):
    """Embeddings (token + learned position) -> one MultiHeadAttention (+ residual) -> MLP readout.

    ``forward(tokens (B, n))`` returns the logits ``(prev (B, n, C), next (B, n, C), count (B, n, K))``
    with ``C = task.num_neighbour_classes`` and ``K = task.num_count_classes``, and the attention
    weights ``(B, h, n, n)``. Used in notebook 07.
    """

    def __init__(self, task: NeighbourCountTask, d_model: int = 64, num_heads: int = 8, d_hidden: int = 128) -> None:
        super().__init__()
        if not isinstance(task, NeighbourCountTask):
            raise TypeError(f"task must be a NeighbourCountTask, got {type(task).__name__}")
        require_positive_int(d_model=d_model, num_heads=num_heads, d_hidden=d_hidden)
        self.task = task
        self.token_embedding = nn.Embedding(task.vocab_size, d_model)
        self.position_embedding = nn.Embedding(task.length, d_model)
        self.attention = MultiHeadAttention(d_model, num_heads)
        C, K = task.num_neighbour_classes, task.num_count_classes
        self.readout = nn.Sequential(
            nn.LayerNorm(d_model), nn.Linear(d_model, d_hidden), nn.ReLU(), nn.Linear(d_hidden, 2 * C + K)
        )

    def forward(self, tokens: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
        require_tensor("tokens", tokens, integer=True)
        if tokens.device != self.token_embedding.weight.device:
            raise ValueError(f"tokens must be on the model's device {self.token_embedding.weight.device}, got {tokens.device}")
        if tokens.dim() != 2 or tokens.shape[1] > self.task.length:
            raise ValueError(
                f"tokens must have shape (B, n) with n <= {self.task.length}, got shape {tuple(tokens.shape)}"
            )
        require_index_range("tokens", tokens, 0, self.task.vocab_size, " (the symbols and the marker)")
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)  # (B, n, d_model)
        attended, weights = self.attention(x, x, x)  # (B, n, d_model), (B, h, n, n)
        logits = self.readout(x + attended)  # (B, n, 2C + K)
        C = self.task.num_neighbour_classes
        return (logits[..., :C], logits[..., C : 2 * C], logits[..., 2 * C :]), weights


def marker_beside(tokens: Tensor, marker_id: int) -> Tensor:
    """``tokens (B, n)`` -> ``(B, n)`` bool: True where the previous or the next token is ``marker_id``
    (the first position has no previous token, the last no next one); built in notebook 12."""
    require_tensor("tokens", tokens, ndim=2, integer=True)
    if not is_int(marker_id):
        raise TypeError(f"marker_id must be an integer token id, got {type(marker_id).__name__}")
    marker = tokens == marker_id
    beside = torch.zeros_like(marker)
    beside[:, 1:] |= marker[:, :-1]  # the previous token is a marker
    beside[:, :-1] |= marker[:, 1:]  # the next token is a marker
    return beside


def task_loss(logits: tuple[Tensor, Tensor, Tensor], batch: ToyBatch) -> Tensor:
    """Sum of the three cross-entropies (prev, next, count), each averaged over all positions. Used in notebook 07.

    ``logits``: ``HeadsModel``'s ``(prev (B, n, C), next (B, n, C), count (B, n, K))``; ``batch``: a ``ToyBatch``
    with fields ``(B, n)`` of the same ``B`` and ``n``.
    """
    require_instance("batch", batch, ToyBatch)
    if not isinstance(logits, (tuple, list)) or len(logits) != 3:
        raise TypeError(f"logits must be the model's three logits (prev, next, count), got {type(logits).__name__}")
    targets = (batch.prev, batch.next, batch.count)
    for name, out, y in zip(("prev", "next", "count"), logits, targets):
        require_tensor(f"logits[{name}]", out, ndim=3, floating=True, shape="(B, n, classes)")
        if out.shape[:2] != y.shape or out.device != y.device:
            raise ValueError(f"logits[{name}] {shape_of(out)} on {out.device} does not fit the batch's {name} "
                             f"{shape_of(y)} on {y.device}: the logits must come from this batch (B, n)")
        require_index_range(f"batch.{name}", y, 0, out.shape[-1], f" ({out.shape[-1]} classes in the logits)")
    return sum(F.cross_entropy(out.flatten(0, 1), y.flatten()) for out, y in zip(logits, targets))


@torch.no_grad()
def evaluate(model: HeadsModel, batch: ToyBatch) -> dict[str, float]:
    """Accuracy over all positions of ``batch``: per question and ``all`` (all three answers right). Used in notebook 07."""
    require_instance("model", model, HeadsModel)
    if not isinstance(batch, ToyBatch):
        raise TypeError(f"batch must be a ToyBatch (task.sample(...)), got {type(batch).__name__}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    batch = batch.to(device)
    logits, _ = model(batch.tokens)
    right = {name: out.argmax(-1) == y for name, out, y in zip(("prev", "next", "count"), logits, batch[1:])}
    model.train(was_training)
    result = {name: r.float().mean().item() for name, r in right.items()}
    result["all"] = (right["prev"] & right["next"] & right["count"]).float().mean().item()
    return result


def train_heads_model(
    model: HeadsModel,
    steps: int = 300,
    batch_size: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 0,
    *,
    clip: float | None = None,
    stop_when: Callable[[HeadsModel], bool | float] | None = None,
    target: float | None = None,
    check_every: int = 1,
    name: str = "train_heads_model",
) -> list[float]:
    """Train with Adam on fresh random batches (data drawn from ``torch.Generator().manual_seed(seed)``); notebook 07.

    Returns the loss of every step taken. ``log_every > 0`` prints the loss every that many steps;
    ``clip`` caps the gradient norm (None: no clipping; notebook 12 clips at 1). Early stop:
    ``stop_when(model)`` checked every ``check_every`` steps, true (or ``>= target``) ends the training
    (``training.early_stop``); ``name`` names it in the training record.
    """
    require_positive_int(steps=steps, batch_size=batch_size)
    device = next(model.parameters()).device

    def batch_loss(generator: torch.Generator) -> Tensor:
        batch = model.task.sample(batch_size, generator).to(device)
        logits, _ = model(batch.tokens)
        return task_loss(logits, batch)

    return train_steps(model, batch_loss, steps=steps, lr=lr, seed=seed, clip=clip, log_every=log_every,
                       stop_when=stop_when, target=target, check_every=check_every, name=name)


@contextmanager
def ablate_heads(model: HeadsModel, heads: Iterable[int]) -> Iterator[HeadsModel]:
    """Inside the ``with`` block, the listed heads' outputs are set to zero before ``W_o`` mixes them.

    The attention weights are still computed (and returned); only what those heads pass on is removed.
    Used in notebook 07.
    """
    require_instance("model", model, HeadsModel)
    mha = model.attention
    if not isinstance(heads, Iterable):
        raise TypeError(f"heads must be an iterable of head indices such as [0, 2], got {heads!r}")
    heads = list(heads)
    if any(not is_int(i) or not 0 <= i < mha.num_heads for i in heads):
        raise ValueError(f"heads must be in 0..{mha.num_heads - 1}, got {heads}")
    heads = sorted(set(heads))
    weight = mha.W_o.weight
    keep = torch.ones(mha.d_model, device=weight.device, dtype=weight.dtype)  # in the model's dtype and device
    for i in heads:
        keep[i * mha.d_k : (i + 1) * mha.d_k] = 0.0  # head i's slice of the concatenated heads

    def zero_heads(module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return (args[0] * keep,)

    handle = mha.W_o.register_forward_pre_hook(zero_heads)
    try:
        yield model
    finally:
        handle.remove()
