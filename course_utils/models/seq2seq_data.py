"""Padded source/target pairs for the seq2seq models, and the sequence-reversal task that fills them.

The task: read a random token sequence such as ``c a f`` and write it backwards,
``f a c <eos>``. Every source has its own length, so batches are padded.

Token ids: ``PAD_ID = 0``, ``SOS_ID = 1`` (start of the decoder input),
``EOS_ID = 2`` (end of the target), then the symbols ``a, b, c, ...`` from id 3 on.

Shapes: ``N`` examples, ``B`` batch, ``T_in`` source length (padded), ``T_out`` target length.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from numbers import Integral

import torch
from torch import Tensor

from ..core.validation import require_positive_int, require_tensor, shape_of

PAD_ID, SOS_ID, EOS_ID = 0, 1, 2
SPECIAL_TOKENS = ("<pad>", "<sos>", "<eos>")
HELDOUT_SEED = 12345  # the held-out set is the same for every training seed


def make_vocab(num_symbols: int = 9) -> list[str]:
    """Token strings by id: the three special tokens, then ``a, b, c, ...`` (``num_symbols`` of them)."""
    require_positive_int(num_symbols=num_symbols)
    if not 1 <= num_symbols <= 26:
        raise ValueError(f"num_symbols must be between 1 and 26, got {num_symbols}")
    return list(SPECIAL_TOKENS) + [chr(ord("a") + i) for i in range(num_symbols)]


def reversal_target(tokens: list[int]) -> list[int]:
    """The target for one source sequence: the tokens backwards, then ``EOS_ID``."""
    return list(reversed(tokens)) + [EOS_ID]


@dataclass
class ReversalData:
    """A padded set of reversal examples.

    Attributes:
        src: source ids ``(N, T_in)``, ``PAD_ID`` after each sequence's end.
        tgt: target ids ``(N, T_in + 1)``: reversed source, ``EOS_ID``, then ``PAD_ID``.
        lengths: source lengths ``(N,)`` (int64).
    """

    src: Tensor
    tgt: Tensor
    lengths: Tensor

    def __len__(self) -> int:
        return self.src.shape[0]

    def subset(self, index: Tensor) -> ReversalData:
        """The examples at ``index``, with padding trimmed to the longest of them."""
        index = index.to(self.lengths.device)
        lengths = self.lengths[index]
        t_in = int(lengths.max())
        return ReversalData(self.src[index, :t_in], self.tgt[index, : t_in + 1], lengths)

    def to(self, device: torch.device | str) -> ReversalData:
        return ReversalData(self.src.to(device), self.tgt.to(device), self.lengths.to(device))


def pad_batch(sequences: list[list[int]], pad_id: int = PAD_ID) -> Tensor:
    """Stack lists of ids of different lengths into ``(N, longest)``, filling with ``pad_id``."""
    if not sequences:
        raise ValueError("need at least one sequence to pad")
    bad = [t for seq in sequences for t in seq if isinstance(t, bool) or not isinstance(t, Integral)]
    if bad:
        raise ValueError(f"sequences must hold integer token ids, got {bad[0]!r}")
    out = torch.full((len(sequences), max(len(s) for s in sequences)), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return out


def make_reversal_data(
    num_sequences: int,
    min_len: int,
    max_len: int,
    *,
    num_symbols: int = 9,
    seed: int = 0,
    exclude: ReversalData | None = None,
) -> ReversalData:
    """Random reversal examples; lengths uniform in ``[min_len, max_len]``, symbols uniform.

    Uses its own ``random.Random(seed)``, so the global random state is not touched.
    Sources that occur in ``exclude`` (e.g. the held-out set) are drawn again.
    """
    require_positive_int(num_sequences=num_sequences, min_len=min_len, max_len=max_len, num_symbols=num_symbols)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if num_sequences < 1:
        raise ValueError(f"num_sequences must be positive, got {num_sequences}")
    rng = random.Random(seed)
    banned = set() if exclude is None else {tuple(s[:n].tolist()) for s, n in zip(exclude.src, exclude.lengths)}
    sources = []
    while len(sources) < num_sequences:
        length = rng.randint(min_len, max_len)
        seq = [rng.randrange(num_symbols) + len(SPECIAL_TOKENS) for _ in range(length)]
        if tuple(seq) not in banned:
            sources.append(seq)
    return ReversalData(
        src=pad_batch(sources),
        tgt=pad_batch([reversal_target(s) for s in sources]),
        lengths=torch.tensor([len(s) for s in sources], dtype=torch.long),
    )


def heldout_reversal_data(min_len: int, max_len: int, num_sequences: int = 1000, num_symbols: int = 9) -> ReversalData:
    """The fixed held-out set for these lengths (always drawn with ``HELDOUT_SEED``)."""
    return make_reversal_data(num_sequences, min_len, max_len, num_symbols=num_symbols, seed=HELDOUT_SEED)


def iterate_batches(
    data: ReversalData,
    batch_size: int,
    *,
    shuffle: bool = False,
    by_length: bool = False,
    generator: torch.Generator | None = None,
) -> Iterator[ReversalData]:
    """Yield batches of ``batch_size`` examples, each trimmed to its longest source.

    ``shuffle``: random order (from ``generator``). ``by_length``: sort the (shuffled)
    examples by source length before cutting batches, then shuffle the batch order,
    so that a batch holds sources of (nearly) one length and wastes no decoder steps
    on padding.
    """
    require_positive_int(batch_size=batch_size)
    if not isinstance(data, ReversalData):
        raise TypeError(f"data must be a ReversalData, got {type(data).__name__}")
    order = torch.randperm(len(data), generator=generator) if shuffle else torch.arange(len(data))
    order = order.to(data.lengths.device)  # indices on the data's device (the generator's is the CPU)
    if by_length:
        order = order[torch.sort(data.lengths[order], stable=True).indices]
    batches = [order[start : start + batch_size] for start in range(0, len(data), batch_size)]
    if by_length and shuffle:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    for index in batches:
        yield data.subset(index)


def decoder_inputs(tgt: Tensor, sos_id: int = SOS_ID) -> Tensor:
    """Teacher forcing input ``(B, T_out)``: ``SOS_ID`` followed by the target shifted right by one."""
    require_tensor("tgt", tgt, integer=True)
    if tgt.dim() != 2 or tgt.shape[1] < 1:
        raise ValueError(f"tgt must have shape (B, T_out) with T_out >= 1, got shape {shape_of(tgt)}")
    return torch.cat([torch.full_like(tgt[:, :1], sos_id), tgt[:, :-1]], dim=1)


def to_tokens(ids, vocab: list[str], stop_at_eos: bool = True) -> list[str]:
    """Token strings for a 1-D sequence of ids, without ``<pad>``; up to and including the first ``<eos>``."""
    out = []
    for i in [int(i) for i in ids]:
        if not 0 <= i < len(vocab):
            raise ValueError(f"token id {i} is outside the vocabulary 0..{len(vocab) - 1}")
        if i == PAD_ID:
            continue
        out.append(vocab[i])
        if stop_at_eos and i == EOS_ID:
            break
    return out


def truncate_after_eos(tokens: Tensor, eos_id: int = EOS_ID, pad_id: int = PAD_ID) -> Tensor:
    """Replace everything after the first ``eos_id`` of each row of ``(B, T)`` by ``pad_id``."""
    require_tensor("tokens", tokens, ndim=2, integer=True)
    seen_eos = (tokens == eos_id).long().cumsum(dim=1)
    after = (seen_eos - (tokens == eos_id).long()) > 0  # strictly after the first EOS
    return tokens.masked_fill(after, pad_id)


def argmax_offset_share(weights: Tensor, lengths: Tensor, offset: int = 0) -> float:
    """Where a reversal model's attention peaks: the share of token steps whose largest weight sits at
    the mirrored position ``m(t) = n - 1 - t`` plus ``offset``; built in notebook 13.

    ``weights (N, T_out, T_in)``, padded; ``lengths (N,)`` the source lengths ``n``. Only the ``n`` token
    steps ``t < n`` of each example count (not ``<eos>``, not padding), pooled over all examples.
    """
    require_tensor("weights", weights, ndim=3, floating=True)
    require_tensor("lengths", lengths, ndim=1, integer=True)
    if isinstance(offset, bool) or not isinstance(offset, Integral):
        raise TypeError(f"offset must be an integer, got {type(offset).__name__}")
    if lengths.shape[0] != weights.shape[0]:
        raise ValueError(f"need one length per example: weights {shape_of(weights)}, lengths {shape_of(lengths)}")
    t = torch.arange(weights.shape[1], device=weights.device)
    lengths = lengths.to(weights.device)
    mirror = lengths[:, None] - 1 - t  # (N, T_out)
    steps = t < lengths[:, None]  # the token steps
    hits = (weights.argmax(dim=-1) == mirror + offset) & steps
    return hits.sum().item() / max(1, int(steps.sum()))
