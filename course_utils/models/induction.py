"""Induction heads: the repeated-block task, an attention-only model, and the scores of its heads
(built in notebook 07b).

An *induction head* finds the earlier occurrence of the current token and predicts the token that
followed it (Elhage et al. 2021; Olsson et al. 2022). It takes two layers: a previous-token head in
layer 1 writes "my previous token was ..." into each position's residual stream, and a head in
layer 2 matches the current token against it.

- ``repeat_batch``: a random block of ``period`` tokens repeated until ``length`` (the period fixed,
  or drawn for each row); ``copy_batch``: random text with one block copied at a random place.
  Both return a ``CopyBatch``: the tokens and which of them a copy from context can predict.
- ``AttentionOnlyTransformer``: token and learned position embeddings, ``num_layers`` pre-norm
  causal ``MultiHeadAttention`` layers with residuals, no MLP, a final LayerNorm and a linear read-out.
- ``copy_accuracy`` (and ``right_predictions``, ``accuracy_by_source``), ``copy_losses``, ``ablate_heads``
  (any model's heads, found by ``attention_layers``), ``train_induction``.
- The circuits read off the weights are in ``models/circuits.py``.
- The scores of a head, from its weights ``(..., T, T)`` on a repeated block of period L:
  ``previous_token_score`` (weight on key i - 1, for the queries of the first block) and
  ``induction_score`` (weight on key i - L + 1, the token after the earlier occurrence, for the
  queries i >= L of the repeats); ``held_out``, the test sequences they are measured on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from numbers import Integral
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.masks import causal_mask
from ..core.metrics import offset_share
from ..core.multihead import MultiHeadAttention
from ..core.positions import LearnedPositionalEmbedding
from ..core.validation import is_int, require_index_range, require_int, require_nonempty, require_positive_int, require_tensor
from ..core.validation import shape_of
from .training import train_steps


class CopyBatch(NamedTuple):
    """A batch of the copy tasks: ``tokens (B, T)`` ids and ``source (B, T)``: for a token t that a copy
    from context can predict, the position of the earlier token it repeats, else -1. A token is
    predictable when it repeats an earlier token *and* token t - 1 repeats the one before that: an
    induction head at query t - 1 then finds the earlier t - 1 and reads key ``source[b, t]``, the
    token that followed it."""

    tokens: Tensor
    source: Tensor

    @property
    def copied(self) -> Tensor:
        """``(B, T)`` bool: the predictable tokens."""
        return self.source >= 0

    def to(self, device: torch.device | str) -> CopyBatch:
        return CopyBatch(self.tokens.to(device), self.source.to(device))


def _periods(batch_size: int, period: int | tuple[int, int], generator: torch.Generator | None) -> Tensor:
    if isinstance(period, tuple) and len(period) == 2:
        low, high = period
        require_positive_int(low=low, high=high)
        if low > high:
            raise ValueError(f"period (low, high) needs low <= high, got {period}")
        return torch.randint(int(low), int(high) + 1, (batch_size,), generator=generator)
    if isinstance(period, Integral) and not isinstance(period, bool) and period > 0:
        return torch.full((batch_size,), int(period))
    raise ValueError(f"period must be a positive integer or a pair (low, high) of them, got {period!r}")


def repeat_batch(batch_size: int, length: int, period: int | tuple[int, int], vocab_size: int = 128,
                 generator: torch.Generator | None = None) -> CopyBatch:
    """``batch_size`` rows of ``length`` tokens: a random block of ``period`` tokens (uniform over
    ``0..vocab_size-1``), repeated until the row is full. ``period=(low, high)`` draws each row's period
    uniformly from ``low..high``. Tokens ``t >= L + 1`` are predictable, with ``source`` t - L. On the CPU.
    Notebook 07b."""
    require_positive_int(batch_size=batch_size, length=length, vocab_size=vocab_size)
    periods = _periods(batch_size, period, generator)  # (B,)
    if int(periods.max()) >= length:
        raise ValueError(f"a period must be shorter than length={length} (at least one repeat), got {period!r}")
    blocks = torch.randint(vocab_size, (batch_size, int(periods.max())), generator=generator)  # (B, L_max)
    t = torch.arange(length)
    tokens = blocks.gather(1, t % periods[:, None])  # (B, T): token t is block[t mod L]
    source = torch.where(t >= periods[:, None] + 1, t - periods[:, None], -1)
    return CopyBatch(tokens, source)


def held_out(period: int, count: int = 500, vocab_size: int = 128, seed: int = 2024) -> CopyBatch:
    """The held-out test of notebook 07b: ``count`` rows of ``period`` fresh random tokens, then the same
    ``period`` tokens again (``repeat_batch(count, 2 * period, period)``), drawn with ``seed``."""
    require_positive_int(period=period, count=count, vocab_size=vocab_size)
    require_int(seed=seed)
    return repeat_batch(count, 2 * period, period, vocab_size, torch.Generator().manual_seed(seed))


def copy_batch(batch_size: int, length: int, block: int, vocab_size: int = 128,
               generator: torch.Generator | None = None) -> CopyBatch:
    """``batch_size`` rows of ``length`` random tokens in which a block of ``block`` tokens, from a random
    place, is copied to a random later place (the copy does not overlap its source). The copy's tokens
    after its first are predictable, each with ``source`` the position it was copied from. On the CPU.
    Notebook 07b."""
    require_positive_int(batch_size=batch_size, length=length, block=block, vocab_size=vocab_size)
    if block < 2 or 2 * block > length:
        raise ValueError(f"need 2 <= block and 2 * block <= length, got block={block}, length={length}")
    tokens = torch.randint(vocab_size, (batch_size, length), generator=generator)
    source = torch.full((batch_size, length), -1)
    for b in range(batch_size):
        origin = int(torch.randint(length - 2 * block + 1, (), generator=generator))
        start = int(torch.randint(origin + block, length - block + 1, (), generator=generator))
        tokens[b, start : start + block] = tokens[b, origin : origin + block]
        source[b, start + 1 : start + block] = torch.arange(origin + 1, origin + block)
    return CopyBatch(tokens, source)


class AttentionOnlyTransformer(nn.Module):
    """A causal Transformer made of attention only (no MLP), after Elhage et al. (2021).

    Token embedding + learned positions, then ``num_layers`` pre-norm layers
    ``x = x + MultiHeadAttention(LayerNorm(x))`` under ``causal_mask``, a final LayerNorm and a linear
    read-out. ``forward(tokens (B, T))`` returns ``logits (B, T, vocab_size)`` (position t predicts token
    t + 1) and the attention ``weights (B, num_layers, num_heads, T, T)``. Built in notebook 07b.
    """

    def __init__(self, vocab_size: int, max_len: int, d_model: int = 32, num_layers: int = 2, num_heads: int = 1) -> None:
        super().__init__()
        require_positive_int(vocab_size=vocab_size, max_len=max_len, d_model=d_model, num_layers=num_layers,
                             num_heads=num_heads)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position = LearnedPositionalEmbedding(max_len, d_model)
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(num_layers)])
        self.attentions = nn.ModuleList([MultiHeadAttention(d_model, num_heads) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        require_tensor("tokens", tokens, ndim=2, integer=True)
        require_index_range("tokens", tokens, 0, self.vocab_size)
        require_nonempty("tokens", tokens, -1, "T positions")
        T = tokens.shape[1]
        mask = causal_mask(T, device=tokens.device)  # True = may attend: key j <= query i
        x = self.position(self.token_embedding(tokens))  # (B, T, d_model); ValueError past max_len
        weights = []
        for norm, attention in zip(self.norms, self.attentions):
            y = norm(x)
            out, w = attention(y, y, y, mask)  # (B, T, d_model), (B, h, T, T)
            x = x + out
            weights.append(w)
        return self.head(self.norm(x)), torch.stack(weights, dim=1)


def _check_batch(batch) -> None:
    if not isinstance(batch, CopyBatch):
        raise TypeError(f"batch must be a CopyBatch (repeat_batch or copy_batch), got {type(batch).__name__}")


def copy_losses(logits: Tensor, batch: CopyBatch) -> tuple[Tensor, Tensor]:
    """Mean cross-entropy (nats) of the next-token predictions on the copied tokens and on the others.

    ``logits (B, T, V)``: position t predicts token t + 1. Returns ``(copied, fresh)`` scalars; one with
    no token is NaN.
    Notebook 07b."""
    _check_batch(batch)
    require_tensor("logits", logits, ndim=3, floating=True, shape="(B, T, V)")
    if logits.shape[:2] != batch.tokens.shape:
        raise ValueError(f"logits must have shape (B, T, V) with (B, T) = batch.tokens' {shape_of(batch.tokens)}, got "
                         f"{shape_of(logits)}")
    losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), batch.tokens[:, 1:].flatten(), reduction="none")
    copied = batch.copied[:, 1:].flatten()
    return losses[copied].mean(), losses[~copied].mean()


def _token_logits(model, tokens: Tensor) -> Tensor:
    """``model(tokens)[0]``, the logits ``(B, T, V)``; TypeError naming what a model must be otherwise (issue 33)."""
    what = "model must be a token model, tokens (B, T) -> (logits (B, T, V), weights), such as AttentionOnlyTransformer"
    try:
        out = model(tokens)
    except (RuntimeError, IndexError) as err:
        raise TypeError(f"{what}; {type(model).__name__} fails on tokens: {type(err).__name__}: {err}") from None
    if not isinstance(out, tuple) or not isinstance(out[0], Tensor) or out[0].shape[:2] != tokens.shape:
        raise TypeError(f"{what}; {type(model).__name__} returns something else")
    return out[0]


@torch.no_grad()
def right_predictions(model: nn.Module, batch: CopyBatch) -> Tensor:
    """``(B, T)`` bool: whether the model's top prediction of token t (made at position t - 1) is right;
    False at position 0. In eval mode (the model's mode is restored); on the CPU. Notebook 07b."""
    _check_batch(batch)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a token model (an nn.Module), got {type(model).__name__}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    logits = _token_logits(model, batch.tokens.to(device))
    model.train(was_training)
    right = torch.zeros(batch.tokens.shape, dtype=torch.bool)
    right[:, 1:] = logits[:, :-1].argmax(-1).cpu() == batch.tokens[:, 1:].cpu()
    return right


def copy_accuracy(model: nn.Module, batch: CopyBatch) -> float:
    """Share of the predictable tokens of ``batch`` (``batch.copied``) that the model's top prediction
    gets right. Notebook 07b."""
    _check_batch(batch)
    if not batch.copied.any():
        raise ValueError(f"batch has no predictable token (batch.copied is all False, tokens {shape_of(batch.tokens)})")
    return right_predictions(model, batch)[batch.copied.cpu()].float().mean().item()


def accuracy_by_source(model: nn.Module, batch: CopyBatch) -> Tensor:
    """``(T,)``: at index k, the accuracy on the predictable tokens whose ``source`` is position k (the key
    an induction head must read to predict them); NaN where no token has that source. Notebook 07b."""
    right = right_predictions(model, batch).float()
    source = batch.source.cpu()
    T = source.shape[1]
    counts = torch.zeros(T).index_add_(0, source[source >= 0], torch.ones(int((source >= 0).sum())))
    hits = torch.zeros(T).index_add_(0, source[source >= 0], right[source >= 0])
    return hits / counts  # 0 / 0 = NaN where no token comes from there


def _check_repeat_weights(weights: Tensor, period: int) -> tuple[int, int]:
    require_tensor("weights", weights, min_ndim=2, floating=True)
    T, m = weights.shape[-2:]
    if T != m:
        raise ValueError(f"weights must be self-attention weights (..., T, T), got shape {shape_of(weights)}")
    if isinstance(period, bool) or not isinstance(period, Integral) or not 1 <= period < T:
        raise ValueError(f"period must be an integer from 1 to T - 1 = {T - 1} (at least one repeat), got {period!r}")
    return T, int(period)


def previous_token_score(weights: Tensor, period: int) -> Tensor:
    """Mean weight on the key just before the query, over the first block: queries i = 1 .. L-1.

    ``weights (..., T, T)`` on a sequence whose tokens repeat with ``period`` L from position 0. In the
    first block nothing has occurred before, so a layer-1 head that reads key i - 1 there is writing
    "my previous token" for a later head to match (``offset_share(weights, -1)`` of notebook 02 on
    those queries). Returns ``(...)``; 1 for a perfect previous-token head; NaN for L = 1.
    Notebook 07b."""
    T, L = _check_repeat_weights(weights, period)
    return offset_share(weights[..., :L, :L], -1) if L > 1 else weights.new_full(weights.shape[:-2], float("nan"))


def induction_score(weights: Tensor, period: int) -> Tensor:
    """Mean weight on the token *after* the earlier occurrence of the query's token, on a repeated block.

    ``weights (..., T, T)``: the attention of a sequence whose tokens repeat with ``period`` L from
    position 0. Query i >= L holds the token of position i - L; an induction head attends to key
    i - L + 1, the token that followed it. Returns ``(...)``: the mean of ``weights[..., i, i - L + 1]``
    over the queries i = L .. T-1 (the earlier queries have no earlier occurrence). 1 for a perfect one.
    Notebook 07b."""
    T, L = _check_repeat_weights(weights, period)
    return weights.diagonal(1 - L, dim1=-2, dim2=-1)[..., 1:].mean(dim=-1)  # queries L-1..T-1; drop L-1


def attention_layers(model: nn.Module) -> list[MultiHeadAttention]:
    """The ``MultiHeadAttention`` layers of ``model`` in the order they run (an ``AttentionOnlyTransformer``'s
    ``attentions``, a ``CausalLM``'s block attentions). TypeError for a model without any. Notebooks 07b, 11b."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    layers = [m for m in model.modules() if isinstance(m, MultiHeadAttention) and m is not model]
    if not layers:
        raise TypeError(f"model must hold MultiHeadAttention layers (an AttentionOnlyTransformer or a CausalLM), "
                        f"got {type(model).__name__}")
    return layers


@contextmanager
def ablate_heads(model: nn.Module, heads: Iterable[tuple[int, int]]) -> Iterator[nn.Module]:
    """Inside the ``with`` block, the output of each listed head ``(layer, head)`` is set to zero before
    that layer's ``W_o`` (its weights are still computed and returned). Layers and heads count from 0;
    any model with ``MultiHeadAttention`` layers (``attention_layers``). Notebooks 07b, 11b."""
    attentions = attention_layers(model)
    if not isinstance(heads, Iterable):
        raise TypeError(f"heads must be an iterable of (layer, head) pairs such as [(0, 0)], got {heads!r}")
    heads = sorted(set(map(tuple, heads)))
    layers, num_heads = len(attentions), attentions[0].num_heads

    def valid(pair: tuple) -> bool:
        return len(pair) == 2 and all(isinstance(v, Integral) and not isinstance(v, bool) for v in pair) and (
            0 <= pair[0] < layers and 0 <= pair[1] < num_heads)

    if not all(valid(pair) for pair in heads):
        raise ValueError(f"heads must be (layer, head) pairs with layer in 0..{layers - 1} and head in "
                         f"0..{num_heads - 1}, got {heads}")
    handles = []
    for layer in sorted({layer for layer, _ in heads}):
        mha = attentions[layer]
        keep = torch.ones(mha.d_model, device=mha.W_o.weight.device, dtype=mha.W_o.weight.dtype)
        for _, i in (pair for pair in heads if pair[0] == layer):
            keep[i * mha.d_k : (i + 1) * mha.d_k] = 0.0  # head i's slice of the concatenated heads
        handles.append(mha.W_o.register_forward_pre_hook(lambda module, args, keep=keep: (args[0] * keep,)))
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()


def train_induction(model: AttentionOnlyTransformer, *, steps: int, length: int = 48,
                    period: int | tuple[int, int] = (4, 16), batch_size: int = 64, lr: float = 1e-2, seed: int = 0,
                    test: CopyBatch | None = None, target: float | None = None, check_every: int = 10,
                    on_step: Callable[[int], None] | None = None, name: str = "train_induction") -> dict[str, list]:
    """Train on fresh ``repeat_batch(batch_size, length, period)`` batches with Adam, at most ``steps`` steps.

    Every ``check_every`` steps the accuracy on ``test`` (a held-out ``CopyBatch``) is measured, without
    changing the training; with ``target`` the training stops once it reaches it. Returns a history:
    ``loss`` (every step), ``copied_loss`` and ``fresh_loss`` (every step, on the training batch),
    ``check_steps`` and ``accuracy`` (every check; empty without ``test``).
    Notebook 07b."""
    require_positive_int(steps=steps, batch_size=batch_size, check_every=check_every)
    if test is not None:
        _check_batch(test)
    if target is not None and test is None:
        raise ValueError("an early stop at target needs a test batch to measure")
    device = next(model.parameters()).device
    history: dict[str, list] = {"loss": [], "copied_loss": [], "fresh_loss": [], "check_steps": [], "accuracy": []}

    def batch_loss(generator: torch.Generator) -> Tensor:
        batch = repeat_batch(batch_size, length, period, model.vocab_size, generator).to(device)
        logits, _ = model(batch.tokens)
        copied, fresh = copy_losses(logits.detach(), batch)
        history["copied_loss"].append(copied.item())
        history["fresh_loss"].append(fresh.item())
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), batch.tokens[:, 1:].flatten())

    def measure(trained: nn.Module) -> float:
        accuracy = copy_accuracy(trained, test)
        history["accuracy"].append(accuracy)
        history["check_steps"].append(len(history["copied_loss"]))  # the steps taken so far
        return accuracy

    stop_when = None
    if test is not None:  # without a target, measure and never stop
        stop_when = measure if target is not None else lambda trained: measure(trained) > 1.0
    history["loss"] = train_steps(model, batch_loss, steps=steps, lr=lr, seed=seed, on_step=on_step,
                                  stop_when=stop_when, target=target, check_every=check_every, name=name)
    return history


def copy_accuracies(logits: Tensor, tokens: Tensor, period: int) -> tuple[float, float]:
    """Accuracy on the first and the second copy of ``tokens (B, 2L)`` (a block of ``period`` L, then the same L
    again), from ``logits (B, 2L, V)`` (position t predicts token t + 1): the share of tokens 1..L-1, and of
    tokens L+1..2L-1, whose top prediction is right. Token L, the first of the copy, is in neither. Notebook 11b."""
    require_tensor("logits", logits, ndim=3, floating=True)
    require_tensor("tokens", tokens, ndim=2, integer=True)
    if not is_int(period) or period < 2 or tokens.shape[1] != 2 * period or logits.shape[:2] != tokens.shape:
        raise ValueError(f"need period L >= 2, tokens (B, 2L) and logits (B, 2L, V), got L={period!r}, "
                         f"{shape_of(tokens)}, {shape_of(logits)}")
    right = (logits[:, :-1].argmax(-1) == tokens[:, 1:].to(logits.device)).float()  # right[:, t - 1]: token t
    return right[:, : period - 1].mean().item(), right[:, period:].mean().item()
