"""Padded source/target pairs for the seq2seq models, and the sequence-reversal task that fills them.

The task: read a random token sequence such as ``c a f`` and write it backwards,
``f a c <eos>``. Every source has its own length, so batches are padded.

Token ids: ``PAD_ID = 0``, ``SOS_ID = 1`` (start of the decoder input),
``EOS_ID = 2`` (end of the target), then the symbols ``a, b, c, ...`` from id 3 on.

Shapes: ``N`` examples, ``B`` batch, ``T_in`` source length (padded), ``T_out`` target length.
Built in notebook 04 (the reversal task and its padded batches).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor

from ..core.validation import (
    is_int, require_bool, require_device, require_generator, require_index_range, require_instance, require_int,
    require_positive_int, require_tensor, shape_of,
)

PAD_ID, SOS_ID, EOS_ID = 0, 1, 2
SPECIAL_TOKENS = ("<pad>", "<sos>", "<eos>")
HELDOUT_SEED = 12345  # the held-out set is the same for every training seed


def make_vocab(num_symbols: int = 9) -> list[str]:
    """Token strings by id: the three special tokens, then ``a, b, c, ...`` (``num_symbols`` of them). Used in notebook 04."""
    require_positive_int(num_symbols=num_symbols)
    if not 1 <= num_symbols <= 26:
        raise ValueError(f"num_symbols must be between 1 and 26, got {num_symbols}")
    return list(SPECIAL_TOKENS) + [chr(ord("a") + i) for i in range(num_symbols)]


def reversal_target(tokens: list[int]) -> list[int]:
    """The target for one source sequence: the tokens backwards, then ``EOS_ID``. Used in notebook 04."""
    tokens = token_ids("tokens", tokens)
    return list(reversed(tokens)) + [EOS_ID]


@dataclass
class ReversalData:
    """A padded set of reversal examples.

    Attributes:
        src: source ids ``(N, T_in)``, ``PAD_ID`` after each sequence's end.
        tgt: target ids ``(N, T_in + 1)``: reversed source, ``EOS_ID``, then ``PAD_ID``.
        lengths: source lengths ``(N,)`` (int64).

    Used in notebook 04.
    """

    src: Tensor
    tgt: Tensor
    lengths: Tensor

    def __len__(self) -> int:
        return self.src.shape[0]

    def _check_index(self, index: Tensor) -> Tensor:
        """``index`` (1-D integer tensor of example numbers, at least one) on the data's device."""
        require_tensor("index", index, ndim=1, integer=True, shape="(k,)")
        if index.numel() == 0:
            raise ValueError("index must select at least one example, got an empty tensor")
        index = index.to(self.lengths.device)
        require_index_range("index", index, -len(self), len(self), f" (the data has {len(self)} examples)")
        return index

    def subset(self, index: Tensor) -> ReversalData:
        """The examples at ``index`` ``(k,)``, with padding trimmed to the longest of them."""
        index = self._check_index(index)
        lengths = self.lengths[index]
        t_in = int(lengths.max())
        return ReversalData(self.src[index, :t_in], self.tgt[index, : t_in + 1], lengths)

    def to(self, device: torch.device | str) -> ReversalData:
        """The same data on ``device``."""
        device = require_device(device)
        return ReversalData(self.src.to(device), self.tgt.to(device), self.lengths.to(device))


def token_ids(name: str, ids, vocab_size: int | None = None) -> list[int]:
    """``ids`` (a 1-D integer tensor or an iterable of integers) as a list of ints, each in ``0 .. vocab_size - 1``.

    The check behind ``to_tokens``, ``pad_batch``, ``reversal_target`` and the dates' ``decode``; no notebook builds it.
    """
    if isinstance(ids, Tensor):
        require_tensor(name, ids, ndim=1, integer=True, shape="(n,)")
        ids = ids.tolist()
    elif isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TypeError(f"{name} must be a 1-D tensor or a list of integer token ids, got {type(ids).__name__}")
    ids = list(ids)
    bad = [i for i in ids if not is_int(i) or i < 0 or (vocab_size is not None and i >= vocab_size)]
    if bad:
        what = "non-negative integer token ids" if vocab_size is None else f"integer token ids in 0..{vocab_size - 1}"
        why = "not an integer" if not is_int(bad[0]) else "negative" if vocab_size is None else "outside the vocabulary"
        raise ValueError(f"{name} must hold {what}, got {bad[0]!r}: {why}")
    return [int(i) for i in ids]


def pad_batch(sequences: list[list[int]], pad_id: int = PAD_ID) -> Tensor:
    """Stack lists of ids of different lengths into ``(N, longest)``, filling with ``pad_id``. Used in notebook 04."""
    require_int(pad_id=pad_id)
    if isinstance(sequences, (str, bytes)) or not isinstance(sequences, Iterable):
        raise TypeError(f"sequences must be a list of lists of token ids, got {type(sequences).__name__}")
    sequences = [token_ids("sequences", seq) for seq in sequences]
    if not sequences:
        raise ValueError("sequences must hold at least one sequence to pad, got none")
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
    Sources that occur in ``exclude`` (e.g. the held-out set) are drawn again. Used in notebook 04.
    """
    require_positive_int(num_sequences=num_sequences, min_len=min_len, max_len=max_len, num_symbols=num_symbols)
    require_int(seed=seed)
    if exclude is not None:
        require_instance("exclude", exclude, ReversalData)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    banned = set() if exclude is None else {tuple(s[:n].tolist()) for s, n in zip(exclude.src, exclude.lengths)}
    drawable = sum(num_symbols**length for length in range(min_len, max_len + 1))
    symbols = range(len(SPECIAL_TOKENS), len(SPECIAL_TOKENS) + num_symbols)
    if sum(min_len <= len(b) <= max_len and all(t in symbols for t in b) for b in banned) >= drawable:
        raise ValueError(f"exclude holds all {drawable} sources these lengths and symbols allow: none is left to draw")
    rng = random.Random(int(seed))
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
    """The fixed held-out set for these lengths (always drawn with ``HELDOUT_SEED``). Used in notebook 04."""
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
    on padding. Used in notebook 04.
    """
    require_positive_int(batch_size=batch_size)
    require_instance("data", data, ReversalData)
    require_bool(shuffle=shuffle, by_length=by_length)
    require_generator(generator)
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
    """Teacher forcing input ``(B, T_out)``: ``SOS_ID`` followed by the target shifted right by one. Built in notebook 04."""
    require_tensor("tgt", tgt, integer=True)
    require_int(sos_id=sos_id)
    if tgt.dim() != 2 or tgt.shape[1] < 1:
        raise ValueError(f"tgt must have shape (B, T_out) with T_out >= 1, got shape {shape_of(tgt)}")
    return torch.cat([torch.full_like(tgt[:, :1], sos_id), tgt[:, :-1]], dim=1)


def to_tokens(ids, vocab: list[str], stop_at_eos: bool = True) -> list[str]:
    """Token strings for a 1-D sequence of ids, without ``<pad>``; up to and including the first ``<eos>``.

    ``ids``: a 1-D integer tensor or a list of ints, each an index into ``vocab`` (a list of str). Used in notebook 04.
    """
    if not isinstance(vocab, (list, tuple)) or not vocab or not all(isinstance(v, str) for v in vocab):
        raise ValueError(f"vocab must be a non-empty list of token strings (make_vocab()), got {vocab!r:.60}")
    require_bool(stop_at_eos=stop_at_eos)
    out = []
    for i in token_ids("ids", ids, len(vocab)):
        if i == PAD_ID:
            continue
        out.append(vocab[i])
        if stop_at_eos and i == EOS_ID:
            break
    return out


def truncate_after_eos(tokens: Tensor, eos_id: int = EOS_ID, pad_id: int = PAD_ID) -> Tensor:
    """Replace everything after the first ``eos_id`` of each row of ``(B, T)`` by ``pad_id``. Used in notebook 04."""
    require_tensor("tokens", tokens, ndim=2, integer=True, shape="(B, T)")
    require_int(eos_id=eos_id, pad_id=pad_id)
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
    if not is_int(offset):
        raise TypeError(f"offset must be an integer, got {type(offset).__name__}")
    if lengths.shape[0] != weights.shape[0]:
        raise ValueError(f"need one length per example: weights {shape_of(weights)}, lengths {shape_of(lengths)}")
    t = torch.arange(weights.shape[1], device=weights.device)
    lengths = lengths.to(weights.device)
    mirror = lengths[:, None] - 1 - t  # (N, T_out)
    steps = t < lengths[:, None]  # the token steps
    hits = (weights.argmax(dim=-1) == mirror + offset) & steps
    return hits.sum().item() / max(1, int(steps.sum()))
