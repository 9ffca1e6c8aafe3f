"""A tiny GPT-style next-token predictor: data, a causal Transformer, training and generation.

Next-token prediction: from tokens ``x_0 .. x_t`` predict ``x_{t+1}``. A sequence of
``T + 1`` tokens gives ``T`` training examples at once: the inputs are the first ``T``
tokens and the targets the last ``T`` (the same sequence shifted by one).

Two kinds of data:

- ``RepeatPatternTask``: a random pattern of ``period`` symbols, repeated. The first
  ``period - 1`` targets cannot be predicted; every later one is the token ``period`` steps
  back, so generation can be scored exactly.
- character-level text (``CharVocab``, ``load_corpus``, ``sample_windows``), e.g. the
  course's own ``data/tiny_corpus.txt``.

``CausalLM`` is built from course parts: token embedding + position (learned or
sinusoidal) -> pre-norm ``TransformerBlock``s with ``causal_mask`` -> LayerNorm -> linear
head. ``train_lm`` trains it, ``generate`` writes one token at a time (greedy, or sampled
from ``next_token_probs`` at a temperature), ``generation_accuracy`` scores continuations.

Shapes: ``B`` batch, ``T`` sequence length, ``V`` vocabulary size, ``L`` layers, ``h`` heads.
Mask convention as everywhere in the project: **True = may attend**. Built in notebook 11.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.masks import causal_mask
from ..core.positions import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from ..core.transformer import TransformerBlock
from ..core.validation import (
    is_int,
    require_bool,
    require_generator,
    require_index_range,
    require_nonempty,
    require_nonnegative_int,
    require_positive,
    require_positive_float,
    require_tensor,
    shape_of,
)
from .data_files import data_path
from .training import train_steps

# --- Data -------------------------------------------------------------------


def shift_by_one(sequences: Tensor) -> tuple[Tensor, Tensor]:
    """``(..., T + 1)`` token ids -> ``inputs (..., T)`` and ``targets (..., T)``: ``targets[..., t] = sequences[..., t + 1]``.

    Built in notebook 11.
    """
    require_tensor("sequences", sequences)
    if sequences.dim() < 1 or sequences.shape[-1] < 2:
        raise ValueError(f"need sequences of at least 2 tokens (..., T + 1), got shape {shape_of(sequences)}")
    return sequences[..., :-1], sequences[..., 1:]


@dataclass(frozen=True)
class RepeatPatternTask:
    """Sequences of ``length + 1`` tokens: a random pattern of ``period`` symbols, then repeats of it.

    Example with ``period=3``: ``c a c c a c c a c ...``. Symbols are ``0..num_symbols-1``
    (shown as ``a, b, c, ...``), drawn independently and uniformly, so repeats inside the
    pattern are allowed. A model sees ``length`` input positions. Used in notebook 11 (and 17).
    """

    period: int = 5
    num_symbols: int = 8
    length: int = 24

    def __post_init__(self) -> None:
        require_positive(period=self.period, num_symbols=self.num_symbols, length=self.length)
        if not 1 <= self.num_symbols <= 26 or self.period < 1 or self.length <= self.period:
            raise ValueError(
                "need 1 <= num_symbols <= 26, period >= 1 and length > period, got "
                f"num_symbols={self.num_symbols}, period={self.period}, length={self.length}"
            )

    @property
    def vocab_size(self) -> int:
        return self.num_symbols

    def names(self) -> list[str]:
        """Text of every id: ``['a', 'b', ...]``."""
        return [chr(ord("a") + i) for i in range(self.num_symbols)]

    def to_text(self, ids: Tensor) -> str:
        """``(n,)`` ids -> a string such as ``'cac cac ca'`` (a space after every period, for reading)."""
        require_tensor("ids", ids, ndim=1, integer=True)
        require_index_range("ids", ids, 0, self.num_symbols)
        chars = [self.names()[i] for i in ids.tolist()]
        groups = ["".join(chars[k : k + self.period]) for k in range(0, len(chars), self.period)]
        return " ".join(groups)

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Tensor:
        """``(batch_size, length + 1)`` sequences (on the CPU)."""
        require_positive(batch_size=batch_size)
        require_generator(generator)
        pattern = torch.randint(0, self.num_symbols, (batch_size, self.period), generator=generator)
        repeats = -(-(self.length + 1) // self.period)  # ceil
        return pattern.repeat(1, repeats)[:, : self.length + 1]

    def batch(self, batch_size: int, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """``inputs (B, length)`` and ``targets (B, length)`` of fresh random sequences."""
        return shift_by_one(self.sample(batch_size, generator))

    def loss_floor(self) -> float:
        """Smallest possible mean cross-entropy (nats) of an honest predictor.

        The first ``period - 1`` targets are fresh uniform symbols (``ln num_symbols`` each at
        best); every later target is fixed by the past (0 at best).
        """
        return (self.period - 1) / self.length * math.log(self.num_symbols)


class CharVocab:
    """Character-level vocabulary: one id per distinct character of ``text``, in sorted order. Used in notebook 11."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            raise ValueError(f"text must be a non-empty str to build a vocabulary from, got {text!r:.40}")
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> Tensor:
        """``str`` of n characters -> ``(n,)`` int64 ids."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        unknown = sorted(set(text) - set(self.index))
        if unknown:
            raise ValueError(f"text has characters not in the vocabulary: {unknown}")
        return torch.tensor([self.index[c] for c in text], dtype=torch.long)

    def decode(self, ids: Tensor) -> str:
        """``(n,)`` ids -> ``str``."""
        require_tensor("ids", ids, ndim=1, integer=True)
        require_index_range("ids", ids, 0, len(self.chars), f" (the vocabulary has {len(self.chars)} characters)")
        return "".join(self.chars[i] for i in ids.tolist())


def load_corpus(name: str = "tiny_corpus.txt") -> str:
    """The text of ``data/<name>`` (UTF-8). Used in notebook 11."""
    return data_path(name).read_text(encoding="utf-8")


def sample_windows(
    ids: Tensor, block_size: int, batch_size: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """Random windows of a long ``(N,)`` token stream: ``inputs (B, block_size)``, ``targets (B, block_size)``.

    Window ``b`` starts at a random offset ``s``: inputs ``ids[s : s + block_size]``,
    targets ``ids[s + 1 : s + block_size + 1]``. Built in notebook 11.
    """
    require_positive(block_size=block_size, batch_size=batch_size)
    require_generator(generator)
    require_tensor("ids", ids, integer=True)
    if ids.dim() != 1 or ids.shape[0] < block_size + 1:
        raise ValueError(f"ids must have shape (N,) with N >= block_size + 1 = {block_size + 1}, got {shape_of(ids)}")
    starts = torch.randint(0, ids.shape[0] - block_size, (batch_size,), generator=generator)
    windows = torch.stack([ids[s : s + block_size + 1] for s in starts.tolist()])  # (B, block_size + 1)
    return shift_by_one(windows)


# --- Model ------------------------------------------------------------------


class CausalLM(nn.Module):
    """A GPT-style language model from the course's parts.

    ``tokens (B, T)`` -> token embedding + position (``"learned"`` or ``"sinusoidal"``)
    -> ``num_layers`` pre-norm ``TransformerBlock``s, each given ``causal_mask(T)``
    -> final LayerNorm -> linear head -> ``logits (B, T, V)``; ``logits[:, t]`` scores the
    token after position ``t``.

    ``causal=False`` drops the mask (every position sees the whole sequence, future included):
    the broken model of the notebook's "no mask" experiment.

    ``forward`` returns ``logits (B, T, V)`` and the attention weights ``(B, L, h, T, T)``.
    ``max_len`` is the context window: longer inputs raise ValueError (``generate`` crops). Built in notebook 11.
    """

    def __init__(
        self,
        vocab_size: int,
        max_len: int,
        d_model: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        d_ff: int | None = None,
        positions: str = "learned",
        causal: bool = True,
    ) -> None:
        super().__init__()
        require_positive(vocab_size=vocab_size, max_len=max_len, d_model=d_model, num_heads=num_heads, num_layers=num_layers)
        if d_ff is not None:
            require_positive(d_ff=d_ff)
        require_bool(causal=causal)
        if not isinstance(positions, str) or positions not in ("learned", "sinusoidal"):
            raise ValueError(f"positions must be 'learned' or 'sinusoidal', got {positions!r}")
        self.vocab_size, self.max_len, self.causal = vocab_size, max_len, causal
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        if positions == "learned":
            self.position = LearnedPositionalEmbedding(max_len, d_model)
        else:
            self.position = SinusoidalPositionalEncoding(d_model)
        self.blocks = nn.ModuleList(
            [TransformerBlock(d_model, num_heads, d_ff, norm_first=True) for _ in range(num_layers)]
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        require_tensor("tokens", tokens, integer=True)
        if tokens.dim() != 2 or not 1 <= tokens.shape[1] <= self.max_len:
            raise ValueError(f"tokens must have shape (B, T) with 1 <= T <= max_len={self.max_len}, got {shape_of(tokens)}")
        if tokens.device != self.head.weight.device:
            raise ValueError(f"tokens must be on the model's device {self.head.weight.device}, got {tokens.device}")
        require_index_range("tokens", tokens, 0, self.vocab_size, f" (vocab_size={self.vocab_size})")
        T = tokens.shape[1]
        mask = causal_mask(T, device=tokens.device) if self.causal else None
        x = self.position(self.token_embedding(tokens))  # (B, T, d_model)
        all_weights = []
        for block in self.blocks:
            x, weights = block(x, mask)  # (B, T, d_model), (B, h, T, T)
            all_weights.append(weights)
        return self.head(self.norm(x)), torch.stack(all_weights, dim=1)


def lm_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy over all ``B * T`` positions: ``logits (B, T, V)``, ``targets (B, T)``. Built in notebook 11."""
    require_tensor("logits", logits, floating=True)
    require_tensor("targets", targets, integer=True)
    if logits.dim() != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(f"need logits (B, T, V) and targets (B, T), got {shape_of(logits)} and {shape_of(targets)}")
    if targets.device != logits.device:
        raise ValueError(f"targets must be on the logits' device {logits.device}, got {targets.device}")
    require_index_range("targets", targets, 0, logits.shape[-1], f" (the logits score {logits.shape[-1]} tokens)")
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


# --- Training and generation --------------------------------------------------


def train_lm(
    model: CausalLM,
    next_batch: Callable[[torch.Generator], tuple[Tensor, Tensor]],
    steps: int = 300,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 0,
    *,
    stop_when: Callable[[CausalLM], bool | float] | None = None,
    target: float | None = None,
    check_every: int = 1,
    name: str = "train_lm",
) -> list[float]:
    """Train with Adam (gradient norm clipped at 1) on ``steps`` batches from ``next_batch(generator)``.

    ``next_batch`` returns ``inputs (B, T)`` and ``targets (B, T)``; it gets a
    ``torch.Generator`` seeded with ``seed``, so the data are the same on every run.
    Every position of every sequence is a training example (teacher forcing).
    Returns the loss of every step taken; ``log_every > 0`` prints it every that many steps.
    Early stop: ``stop_when(model)`` checked every ``check_every`` steps, true (or ``>= target``) ends
    the training (``training.early_stop``); ``name`` names it in the training record. Notebook 11.
    """
    require_positive(steps=steps)
    require_positive_float(lr=lr)
    device = next(model.parameters()).device

    def batch_loss(generator: torch.Generator) -> Tensor:
        inputs, targets = (t.to(device) for t in next_batch(generator))
        logits, _ = model(inputs)
        return lm_loss(logits, targets)

    return train_steps(model, batch_loss, steps=steps, lr=lr, seed=seed, clip=1.0, log_every=log_every,
                       stop_when=stop_when, target=target, check_every=check_every, name=name)


def _check_lm(model: nn.Module) -> None:
    if not isinstance(model, nn.Module) or not is_int(getattr(model, "max_len", None)):
        raise TypeError(f"model must be a language model such as CausalLM (an nn.Module with a max_len), "
                        f"got {type(model).__name__}")


def check_prompt(model: nn.Module, prompt: Tensor) -> None:
    """A prompt ``(P,)`` or ``(B, P)`` of token ids the model knows (``0 <= id < model.vocab_size``, where
    the model has one): the input check of ``generate`` and of notebook 15's ``generate_cached``."""
    require_tensor("prompt", prompt, integer=True)
    if prompt.dim() not in (1, 2) or prompt.shape[-1] < 1:
        raise ValueError(f"prompt must have shape (P,) or (B, P) with P >= 1, got shape {shape_of(prompt)}")
    if is_int(getattr(model, "vocab_size", None)):
        require_index_range("prompt", prompt, 0, model.vocab_size, f" (vocab_size={model.vocab_size})")


def next_token_probs(logits: Tensor, temperature: float) -> Tensor:
    """The distribution generation draws the next token from; built in notebook 11.

    ``logits (..., V)`` -> probabilities ``(..., V)`` of ``softmax(logits / temperature)``. Temperature 0 is
    greedy decoding written as a distribution: probability 1 on the largest logit (the first, on a tie).
    """
    require_tensor("logits", logits, min_ndim=1, floating=True)
    require_positive_float(allow_zero=True, temperature=temperature)
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    # the largest logit subtracted first, and kept at 0: at a temperature that rounds to 0 in the logits' dtype
    # (1e-300) the others go to -inf, and 0 / 0 never makes a NaN
    gap = logits - logits.amax(dim=-1, keepdim=True)
    return torch.softmax(torch.where(gap == 0, gap, gap / temperature), dim=-1)


@torch.no_grad()
def generate(
    model: CausalLM,
    prompt: Tensor,
    num_new: int,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Extend ``prompt (B, P)`` (or ``(P,)``) by ``num_new`` tokens, one at a time.

    Each step runs the model on the last ``max_len`` tokens, takes the logits of the last
    position, and picks the next token: the argmax if ``temperature == 0`` (greedy), else a
    sample from ``softmax(logits / temperature)`` drawn with ``generator`` (CPU).
    Returns ``(B, P + num_new)`` (or ``(P + num_new,)``), prompt included. ``model``: a ``CausalLM``, or any
    module with a ``max_len`` whose ``forward(tokens (B, T))`` returns ``(logits (B, T, V), ...)``. Built in notebook 11.
    """
    _check_lm(model)
    require_positive_float(allow_zero=True, temperature=temperature)
    require_generator(generator)
    require_nonnegative_int(num_new=num_new)
    check_prompt(model, prompt)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    tokens = (prompt.unsqueeze(0) if prompt.dim() == 1 else prompt).to(device)
    for _ in range(num_new):
        logits, _ = model(tokens[:, -model.max_len :])
        last = logits[:, -1]  # (B, V): the prediction for the next token
        if temperature == 0:
            next_token = last.argmax(dim=-1)
        else:
            probs = next_token_probs(last, temperature).cpu()
            next_token = torch.multinomial(probs, 1, generator=generator).squeeze(1).to(device)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)
    model.train(was_training)
    return tokens.squeeze(0) if prompt.dim() == 1 else tokens


def generation_accuracy(model: CausalLM, sequences: Tensor, prompt_len: int) -> tuple[float, float]:
    """Greedy continuation of the first ``prompt_len`` tokens of ``sequences (B, n)``, compared with the rest.

    Returns ``(token accuracy, sequence accuracy)``: the share of generated tokens equal to the
    true ones, and the share of sequences continued without a single mistake. Used in notebook 11.
    """
    _check_lm(model)
    require_tensor("sequences", sequences, integer=True)
    require_positive(prompt_len=prompt_len)
    if sequences.dim() != 2 or not 1 <= prompt_len < sequences.shape[1]:
        raise ValueError(f"need sequences (B, n) and 1 <= prompt_len < n, got {shape_of(sequences)}, prompt_len={prompt_len}")
    n = sequences.shape[1]
    generated = generate(model, sequences[:, :prompt_len], n - prompt_len).cpu()
    right = generated[:, prompt_len:] == sequences[:, prompt_len:].cpu()
    return right.float().mean().item(), right.all(dim=1).float().mean().item()


@torch.no_grad()
def stepwise_logits(model: CausalLM, tokens: Tensor) -> Tensor:
    """The logits generation would see: ``logits[:, t]`` computed from ``tokens[:, : t + 1]`` alone.

    ``tokens (B, T)`` -> ``(B, T, V)``, one forward pass per prefix (``T`` passes). For a causal
    model this equals ``model(tokens)[0]``; for a model without the mask it does not. Used in notebook 11.
    """
    _check_lm(model)
    require_tensor("tokens", tokens, ndim=2, integer=True, shape="(B, T)")
    require_nonempty("tokens", tokens, -1, "T positions")
    return torch.stack([model(tokens[:, : t + 1])[0][:, -1] for t in range(tokens.shape[1])], dim=1)
