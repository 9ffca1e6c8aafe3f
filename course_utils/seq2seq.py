"""Sequence-to-sequence plumbing for the reversal task: data, two GRU models, training, decoding, metrics.

The task: read a random token sequence such as ``c a f`` and write it backwards,
``f a c <eos>``. Every source has its own length, so batches are padded.

Token ids: ``PAD_ID = 0``, ``SOS_ID = 1`` (start of the decoder input),
``EOS_ID = 2`` (end of the target), then the symbols ``a, b, c, ...`` from id 3 on.

Shapes: ``B`` batch, ``T_in`` source length (padded), ``T_out = T_in + 1`` target
length (reversed source plus ``<eos>``), ``V`` vocabulary size, ``H`` decoder state size.

Mask convention (the project's): **True = may attend**; padded source positions
are False and get exactly zero attention weight.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .attention import AdditiveScore, padding_mask

PAD_ID, SOS_ID, EOS_ID = 0, 1, 2
SPECIAL_TOKENS = ("<pad>", "<sos>", "<eos>")
HELDOUT_SEED = 12345  # the held-out set is the same for every training seed


# --- Data -------------------------------------------------------------------


def make_vocab(num_symbols: int = 9) -> list[str]:
    """Token strings by id: the three special tokens, then ``a, b, c, ...`` (``num_symbols`` of them)."""
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
        lengths = self.lengths[index]
        t_in = int(lengths.max())
        return ReversalData(self.src[index, :t_in], self.tgt[index, : t_in + 1], lengths)

    def to(self, device: torch.device | str) -> ReversalData:
        return ReversalData(self.src.to(device), self.tgt.to(device), self.lengths.to(device))


def pad_batch(sequences: list[list[int]], pad_id: int = PAD_ID) -> Tensor:
    """Stack lists of ids of different lengths into ``(N, longest)``, filling with ``pad_id``."""
    if not sequences:
        raise ValueError("need at least one sequence to pad")
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
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = torch.randperm(len(data), generator=generator) if shuffle else torch.arange(len(data))
    if by_length:
        order = order[torch.sort(data.lengths[order], stable=True).indices]
    batches = [order[start : start + batch_size] for start in range(0, len(data), batch_size)]
    if by_length and shuffle:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    for index in batches:
        yield data.subset(index)


def decoder_inputs(tgt: Tensor, sos_id: int = SOS_ID) -> Tensor:
    """Teacher forcing input ``(B, T_out)``: ``SOS_ID`` followed by the target shifted right by one."""
    return torch.cat([torch.full_like(tgt[:, :1], sos_id), tgt[:, :-1]], dim=1)


def to_tokens(ids, vocab: list[str], stop_at_eos: bool = True) -> list[str]:
    """Token strings for a 1-D sequence of ids, without ``<pad>``; up to and including the first ``<eos>``."""
    out = []
    for i in [int(i) for i in ids]:
        if i == PAD_ID:
            continue
        out.append(vocab[i])
        if stop_at_eos and i == EOS_ID:
            break
    return out


# --- Models -----------------------------------------------------------------


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis where ``mask`` is True (may attend); masked entries get exactly 0."""
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) * mask


class _Seq2SeqBase(nn.Module):
    """What both models share: embeddings, the GRU encoder, the output layer and the decoding loops.

    A subclass defines ``step(y_emb, s_prev, memory)`` (one decoder step) and the output
    layer ``self.out`` (features -> logits).
    """

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int, bidirectional: bool, pad_id: int) -> None:
        super().__init__()
        self.vocab_size, self.hidden_dim, self.pad_id = vocab_size, hidden_dim, pad_id
        self.src_embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.tgt_embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.encoder = nn.GRU(emb_dim, hidden_dim, batch_first=True, bidirectional=bidirectional)
        self.enc_dim = hidden_dim * (2 if bidirectional else 1)  # size of one encoder state h_i
        self.bridge = nn.Linear(self.enc_dim, hidden_dim)  # final encoder state(s) -> s_0

    def encode(self, src: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Run the encoder over the real tokens only (packed, so padding never enters a GRU state).

        Args:
            src: ``(B, T_in)`` ids; lengths: ``(B,)``.

        Returns:
            enc_out ``(B, T_in, enc_dim)`` (zeros at padded positions), the initial
            decoder state ``s_0`` ``(B, H)``, and the source mask ``(B, 1, T_in)`` (True = real token).
        """
        if src.dim() != 2 or lengths.shape != src.shape[:1]:
            raise ValueError(f"need src (B, T_in) and lengths (B,), got {tuple(src.shape)} and {tuple(lengths.shape)}")
        packed = pack_padded_sequence(self.src_embedding(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)  # h_n: (directions, B, H), the state after each direction's last real token
        enc_out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        final = torch.cat(list(h_n), dim=-1)  # (B, enc_dim)
        return enc_out, torch.tanh(self.bridge(final)), padding_mask(src, self.pad_id)

    def start(self, src: Tensor, lengths: Tensor) -> tuple[tuple[Tensor, Tensor], Tensor]:
        """Encode; return the ``memory`` the decoder steps read and the first decoder state."""
        enc_out, s0, mask = self.encode(src, lengths)
        return (enc_out, mask), s0

    def step(self, y_emb: Tensor, s_prev: Tensor, memory) -> tuple[Tensor, Tensor, Tensor | None]:
        """One decoder step.

        Args:
            y_emb: the embedded previous tokens ``(B, emb_dim)``; s_prev: decoder state ``(B, H)``;
            memory: what ``start`` returned.

        Returns:
            the new state ``s (B, H)``, the features the output layer reads ``(B, d_out)``
            (``self.out`` turns them into logits) and the attention weights ``(B, T_in)`` or None.
        """
        raise NotImplementedError

    def forward(self, src: Tensor, lengths: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: the decoder is fed the true previous token at every step.

        Args:
            src: ``(B, T_in)``; lengths: ``(B,)``; tgt: ``(B, T_out)`` target ids.

        Returns:
            logits ``(B, T_out, V)`` and attention weights ``(B, T_out, T_in)`` (None without attention).
        """
        memory, s = self.start(src, lengths)
        y_in = self.tgt_embedding(decoder_inputs(tgt))  # (B, T_out, emb_dim): <sos>, y_1, ..., y_{T_out - 1}
        features, weights = [], []
        for t in range(tgt.shape[1]):
            s, feat, w = self.step(y_in[:, t], s, memory)
            features.append(feat)
            weights.append(w)
        logits = self.out(torch.stack(features, dim=1))  # one output layer call for all steps
        return logits, None if weights[0] is None else torch.stack(weights, dim=1)

    @torch.no_grad()
    def greedy_decode(self, src: Tensor, lengths: Tensor, max_len: int) -> tuple[Tensor, Tensor | None]:
        """Feed back the model's own most likely token at every step.

        Returns:
            tokens ``(B, max_len)`` with ``PAD_ID`` after the first ``EOS_ID``, and attention
            weights ``(B, max_len, T_in)`` (None without attention).
        """
        memory, s = self.start(src, lengths)
        y = torch.full((src.shape[0],), SOS_ID, dtype=torch.long, device=src.device)
        tokens, weights = [], []
        for _ in range(max_len):
            s, feat, w = self.step(self.tgt_embedding(y), s, memory)
            y = self.out(feat).argmax(dim=-1)
            tokens.append(y)
            weights.append(w)
        out = truncate_after_eos(torch.stack(tokens, dim=1))
        return out, None if weights[0] is None else torch.stack(weights, dim=1)


class Seq2SeqNoAttention(_Seq2SeqBase):
    """Vanilla GRU encoder-decoder: the decoder sees the source only through ``s_0``, one vector.

    Decoder step: ``s_t = GRU(emb(y_{t-1}), s_{t-1})``, logits ``= W_out s_t``.
    """

    def __init__(
        self, vocab_size: int, emb_dim: int = 32, hidden_dim: int = 64, bidirectional: bool = True, pad_id: int = PAD_ID
    ) -> None:
        super().__init__(vocab_size, emb_dim, hidden_dim, bidirectional, pad_id)
        self.decoder = nn.GRUCell(emb_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def step(self, y_emb: Tensor, s_prev: Tensor, memory) -> tuple[Tensor, Tensor, None]:
        s = self.decoder(y_emb, s_prev)
        return s, s, None


class Seq2SeqWithAttention(_Seq2SeqBase):
    """GRU encoder-decoder with additive (Bahdanau) attention.

    One decoder step, with the decoder state ``s`` that enters the step as the query:

    - scores ``e_i = v^T tanh(W_s s + W_h h_i)`` for every encoder state ``h_i``
      (``course_utils.AdditiveScore``: ``W_q`` is ``W_s``, ``W_k`` is ``W_h``);
    - weights ``alpha = softmax(e)`` over the real (unpadded) source positions;
    - context ``c = sum_i alpha_i h_i``;
    - new state ``s' = GRU([emb(y_prev); c], s)``; logits ``= W_out [s'; c]``.

    ``W_h h_i`` does not change during decoding, so it is computed once per sequence.
    """

    def __init__(
        self,
        vocab_size: int,
        emb_dim: int = 32,
        hidden_dim: int = 64,
        attn_dim: int = 64,
        bidirectional: bool = True,
        pad_id: int = PAD_ID,
    ) -> None:
        super().__init__(vocab_size, emb_dim, hidden_dim, bidirectional, pad_id)
        self.score = AdditiveScore(hidden_dim, self.enc_dim, attn_dim)
        self.decoder = nn.GRUCell(emb_dim + self.enc_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim + self.enc_dim, vocab_size)

    def start(self, src: Tensor, lengths: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
        enc_out, s0, mask = self.encode(src, lengths)
        keys = self.score.W_k(enc_out)  # W_h h_i for every i: (B, T_in, attn_dim)
        return (enc_out, keys, mask), s0

    def attend(self, s: Tensor, enc_out: Tensor, keys: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Context ``(B, enc_dim)`` and weights ``(B, T_in)`` for decoder states ``s (B, H)``.

        ``keys`` is ``score.W_k(enc_out)``; ``mask`` ``(B, 1, T_in)``, True = real token.
        """
        query = self.score.W_q(s).unsqueeze(1)  # W_s s: (B, 1, attn_dim)
        scores = self.score.v(torch.tanh(query + keys)).squeeze(-1)  # (B, T_in)
        weights = masked_softmax(scores, mask.squeeze(1))
        context = torch.bmm(weights.unsqueeze(1), enc_out).squeeze(1)  # sum_i alpha_i h_i
        return context, weights

    def step(self, y_emb: Tensor, s_prev: Tensor, memory) -> tuple[Tensor, Tensor, Tensor]:
        enc_out, keys, mask = memory
        context, weights = self.attend(s_prev, enc_out, keys, mask)
        s = self.decoder(torch.cat([y_emb, context], dim=-1), s_prev)
        return s, torch.cat([s, context], dim=-1), weights


# --- Training -----------------------------------------------------------------


@dataclass
class TrainHistory:
    """Losses recorded by ``train_seq2seq``: one per optimiser step and the mean of each epoch."""

    step_losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def sequence_loss(logits: Tensor, tgt: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Mean cross-entropy over the non-pad target tokens: logits ``(B, T_out, V)``, tgt ``(B, T_out)``."""
    if logits.shape[:2] != tgt.shape:
        raise ValueError(f"logits (B, T_out, V) and tgt (B, T_out) do not fit: {tuple(logits.shape)}, {tuple(tgt.shape)}")
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=pad_id)


def train_seq2seq(
    model: nn.Module,
    data: ReversalData,
    *,
    epochs: int = 5,
    batch_size: int = 64,
    lr: float = 3e-3,
    clip: float | None = 1.0,
    final_lr: float | None = None,
    by_length: bool = False,
    device: torch.device | str = "cpu",
    seed: int = 0,
    on_epoch_end: Callable[[int, nn.Module], None] | None = None,
) -> TrainHistory:
    """Train with teacher forcing, Adam and cross-entropy that ignores ``PAD_ID``.

    The batch order comes from a generator seeded with ``seed``. ``clip`` caps the
    gradient norm (None: no clipping). With ``final_lr``, the learning rate falls
    linearly from ``lr`` to ``final_lr`` over all steps (None: constant ``lr``).
    ``by_length``: batches of equal-length sources (faster; see ``iterate_batches``).

    ``on_epoch_end(epoch, model)``, if given, is called after each epoch with the epoch
    number ``1, ..., epochs`` and the model (on ``device``), to measure or save it between
    epochs. It may switch the model to eval mode and draw random numbers: the global
    random state is restored after the call and the model put back in training mode, so
    the training (losses and parameters) is the same with or without a callback. Its
    time is not counted in ``seconds``.

    The model is moved to ``device`` and left in training mode. Returns the loss
    history and the wall time of the training in seconds.
    """
    device = torch.device(device)
    model.to(device).train()
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    total_steps = epochs * -(-len(data) // batch_size)  # ceil: the last batch of an epoch may be smaller
    end = 1.0 if final_lr is None else final_lr / lr
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: 1.0 + (end - 1.0) * step / total_steps)
    generator = torch.Generator().manual_seed(seed)
    history = TrainHistory()
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        total, count = 0.0, 0
        for batch in iterate_batches(data, batch_size, shuffle=True, by_length=by_length, generator=generator):
            batch = batch.to(device)
            logits, _ = model(batch.src, batch.lengths, batch.tgt)
            loss = sequence_loss(logits, batch.tgt)
            optimiser.zero_grad()
            loss.backward()
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimiser.step()
            schedule.step()
            history.step_losses.append(loss.item())
            total, count = total + loss.item() * len(batch), count + len(batch)
        history.epoch_losses.append(total / count)
        if on_epoch_end is not None:
            paused = time.perf_counter()
            # The course's models draw no random numbers in training, but a model with dropout
            # would draw from the global RNG: random numbers the callback uses must not shift it.
            with _forked_rng(device):
                on_epoch_end(epoch, model)
            model.train()
            start += time.perf_counter() - paused  # the callback's time is not training time
    history.seconds = time.perf_counter() - start
    return history


def _forked_rng(device: torch.device):
    """Context manager: restore, on exit, the global RNG states of the CPU and of ``device``."""
    if device.type == "cpu":
        return torch.random.fork_rng(devices=[])
    return torch.random.fork_rng(devices=[device], device_type=device.type)


# --- Decoding and metrics -------------------------------------------------------


def truncate_after_eos(tokens: Tensor, eos_id: int = EOS_ID, pad_id: int = PAD_ID) -> Tensor:
    """Replace everything after the first ``eos_id`` of each row of ``(B, T)`` by ``pad_id``."""
    seen_eos = (tokens == eos_id).long().cumsum(dim=1)
    after = (seen_eos - (tokens == eos_id).long()) > 0  # strictly after the first EOS
    return tokens.masked_fill(after, pad_id)


@torch.no_grad()
def predict(
    model: nn.Module, data: ReversalData, *, device: torch.device | str = "cpu", batch_size: int = 500
) -> Tensor:
    """Greedy predictions ``(N, T_out)`` on the CPU, aligned with ``data.tgt`` (``PAD_ID`` after ``EOS_ID``)."""
    model.to(device).eval()
    out = torch.full_like(data.tgt, PAD_ID)
    for start in range(0, len(data), batch_size):
        index = torch.arange(start, min(start + batch_size, len(data)))
        batch = data.subset(index).to(device)
        tokens, _ = model.greedy_decode(batch.src, batch.lengths, max_len=batch.tgt.shape[1])
        out[index, : tokens.shape[1]] = tokens.cpu()
    return out


def _check_pred(pred: Tensor, target: Tensor) -> None:
    if pred.shape != target.shape or pred.dim() != 2:
        raise ValueError(f"pred and target must both have shape (N, T_out), got {tuple(pred.shape)} and {tuple(target.shape)}")


def token_accuracy(pred: Tensor, target: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of the non-pad target tokens (``<eos>`` included) that ``pred`` gets right, pooled over all sequences."""
    _check_pred(pred, target)
    real = target != pad_id
    return ((pred == target) & real).sum().item() / real.sum().item()


def sequence_correct(pred: Tensor, target: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Bool ``(N,)``: every non-pad target token (``<eos>`` included) is right; positions where the target is pad do not count."""
    _check_pred(pred, target)
    return ((pred == target) | (target == pad_id)).all(dim=1)


def exact_match_accuracy(pred: Tensor, target: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of sequences that are entirely right (see ``sequence_correct``)."""
    return sequence_correct(pred, target, pad_id).float().mean().item()


def accuracy_by_length(
    pred: Tensor, target: Tensor, lengths: Tensor, pad_id: int = PAD_ID, exact: bool = False
) -> dict[int, float]:
    """Token accuracy (or, with ``exact=True``, exact-match accuracy) for each source length.

    Returns ``{source length: accuracy}`` with int keys, sorted by length.
    """
    _check_pred(pred, target)
    if lengths.shape != pred.shape[:1]:
        raise ValueError(f"lengths must have shape ({pred.shape[0]},), got {tuple(lengths.shape)}")
    metric = exact_match_accuracy if exact else token_accuracy
    return {int(n): metric(pred[lengths == n], target[lengths == n], pad_id) for n in torch.unique(lengths).tolist()}


def evaluate(
    model: nn.Module, data: ReversalData, *, device: torch.device | str = "cpu", batch_size: int = 500
) -> dict:
    """Greedy-decode ``data``; return ``token_accuracy``, ``exact_accuracy``, ``by_length`` (token accuracy
    per source length), ``exact_by_length`` and the predictions ``pred`` ``(N, T_out)``."""
    pred = predict(model, data, device=device, batch_size=batch_size)
    return {
        "token_accuracy": token_accuracy(pred, data.tgt),
        "exact_accuracy": exact_match_accuracy(pred, data.tgt),
        "by_length": accuracy_by_length(pred, data.tgt, data.lengths),
        "exact_by_length": accuracy_by_length(pred, data.tgt, data.lengths, exact=True),
        "pred": pred,
    }
