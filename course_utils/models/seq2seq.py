"""Two GRU encoder-decoders for the seq2seq tasks: one with additive (Bahdanau) attention, one without.

Shapes: ``B`` batch, ``T_in`` source length (padded), ``T_out`` target length,
``V`` vocabulary size, ``H`` decoder state size.

Mask convention (the project's): **True = may attend**; padded source positions
are False and get exactly zero attention weight. Built in notebook 04.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..core.masks import check_mask, padding_mask
from ..core.scores import AdditiveScore
from ..core.validation import (
    require_bool, require_index_range, require_module_input, require_nonnegative_int, require_positive_int,
    require_tensor, shape_of,
)
from .seq2seq_data import EOS_ID, PAD_ID, SOS_ID, decoder_inputs, truncate_after_eos


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis where ``mask`` is True (may attend); masked entries get exactly 0.

    ``scores (..., m)``, ``mask`` broadcastable to it; a fully masked row gets zeros. Built in notebook 01b.
    """
    require_tensor("scores", scores, min_ndim=1, floating=True)
    mask = check_mask(mask, scores.shape, device=scores.device)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) * mask


class _Seq2SeqBase(nn.Module):
    """What both models share: embeddings, the GRU encoder, the output layer and the decoding loops.

    A subclass defines ``step(y_emb, s_prev, memory)`` (one decoder step) and the output
    layer ``self.out`` (features -> logits).
    """

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int, bidirectional: bool, pad_id: int) -> None:
        super().__init__()
        require_positive_int(vocab_size=vocab_size, emb_dim=emb_dim, hidden_dim=hidden_dim)
        if vocab_size <= EOS_ID:
            raise ValueError(f"vocab_size must be at least {EOS_ID + 1} (<pad>, <sos>, <eos> come first), got {vocab_size}")
        require_nonnegative_int(pad_id=pad_id)
        if pad_id >= vocab_size:
            raise ValueError(f"pad_id must be a token id in 0..{vocab_size - 1}, got {pad_id!r}")
        require_bool(bidirectional=bidirectional)
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
        self.check_source(src, lengths)
        packed = pack_padded_sequence(self.src_embedding(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)  # h_n: (directions, B, H), the state after each direction's last real token
        enc_out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        final = torch.cat(list(h_n), dim=-1)  # (B, enc_dim)
        return enc_out, torch.tanh(self.bridge(final)), padding_mask(src, self.pad_id)

    def check_source(self, src: Tensor, lengths: Tensor) -> None:
        """ValueError/TypeError unless ``src (B, T_in)`` holds ids of the vocabulary and ``lengths (B,)``
        holds lengths ``1 .. T_in``, both integer tensors on the model's device."""
        require_tensor("src", src, integer=True)
        require_tensor("lengths", lengths, integer=True)
        if src.dim() != 2 or lengths.shape != src.shape[:1]:
            raise ValueError(f"need src (B, T_in) and lengths (B,), got {tuple(src.shape)} and {tuple(lengths.shape)}")
        device = self.bridge.weight.device
        if src.device != device or lengths.device != device:
            raise ValueError(f"src and lengths must be on the model's device {device}, got {src.device} and {lengths.device}")
        require_index_range("src", src, 0, self.vocab_size, f" (the vocabulary has {self.vocab_size} ids)")
        require_index_range("lengths", lengths, 1, src.shape[1] + 1, f" (a source holds 1 to T_in={src.shape[1]} tokens)")

    def check_target(self, tgt: Tensor, batch_size: int) -> None:
        """ValueError/TypeError unless ``tgt`` is ``(B, T_out)`` ids of the vocabulary, on the model's device."""
        require_tensor("tgt", tgt, integer=True)
        if tgt.dim() != 2 or tgt.shape[0] != batch_size or tgt.shape[1] < 1:
            raise ValueError(f"tgt must have shape (B={batch_size}, T_out) with T_out >= 1, got shape {shape_of(tgt)}")
        if tgt.device != self.bridge.weight.device:
            raise ValueError(f"tgt must be on the model's device {self.bridge.weight.device}, got {tgt.device}")
        require_index_range("tgt", tgt, 0, self.vocab_size, f" (the vocabulary has {self.vocab_size} ids)")

    def check_step(self, y_emb: Tensor, s_prev: Tensor) -> None:
        """ValueError/TypeError unless ``y_emb (B, emb_dim)`` and ``s_prev (B, H)`` fit the model."""
        require_module_input(self, y_emb=y_emb, s_prev=s_prev)
        emb_dim = self.tgt_embedding.embedding_dim
        if y_emb.dim() != 2 or s_prev.shape != (y_emb.shape[0], self.hidden_dim) or y_emb.shape[1] != emb_dim:
            raise ValueError(f"y_emb must have shape (B, emb_dim={emb_dim}) and s_prev (B, H={self.hidden_dim}), "
                             f"got {shape_of(y_emb)} and {shape_of(s_prev)}")

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
        memory, s = self.start(src, lengths)  # checks src and lengths
        self.check_target(tgt, src.shape[0])
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
        require_positive_int(max_len=max_len)
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

    Decoder step: ``s_t = GRU(emb(y_{t-1}), s_{t-1})``, logits ``= W_out s_t``. Built in notebook 04.
    """

    def __init__(
        self, vocab_size: int, emb_dim: int = 32, hidden_dim: int = 64, bidirectional: bool = True, pad_id: int = PAD_ID
    ) -> None:
        super().__init__(vocab_size, emb_dim, hidden_dim, bidirectional, pad_id)
        self.decoder = nn.GRUCell(emb_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def step(self, y_emb: Tensor, s_prev: Tensor, memory) -> tuple[Tensor, Tensor, None]:
        self.check_step(y_emb, s_prev)
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

    ``W_h h_i`` does not change during decoding, so it is computed once per sequence. Built in notebook 04.
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
        require_positive_int(attn_dim=attn_dim)
        self.score = AdditiveScore(hidden_dim, self.enc_dim, attn_dim)
        self.decoder = nn.GRUCell(emb_dim + self.enc_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim + self.enc_dim, vocab_size)

    def start(self, src: Tensor, lengths: Tensor) -> tuple[tuple[Tensor, Tensor, Tensor], Tensor]:
        enc_out, s0, mask = self.encode(src, lengths)
        keys = self.score.W_k(enc_out)  # W_h h_i for every i: (B, T_in, attn_dim)
        return (enc_out, keys, mask), s0

    def attend(self, s: Tensor, enc_out: Tensor, keys: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Context ``(B, enc_dim)`` and weights ``(B, T_in)`` for decoder states ``s (B, H)``.

        ``keys`` is ``score.W_k(enc_out)`` ``(B, T_in, attn_dim)``; ``mask`` ``(B, 1, T_in)``, True = real token.
        """
        require_module_input(self, s=s, enc_out=enc_out, keys=keys)
        H, d_attn = self.hidden_dim, self.score.W_q.out_features
        fits = s.dim() == 2 and s.shape[1] == H and enc_out.dim() == 3 and enc_out.shape[::2] == (s.shape[0], self.enc_dim)
        if not fits or keys.shape != (*enc_out.shape[:2], d_attn):
            raise ValueError(f"need s (B, H={H}), enc_out (B, T_in, enc_dim={self.enc_dim}) and keys (B, T_in, "
                             f"attn_dim={d_attn}), got {shape_of(s)}, {shape_of(enc_out)} and {shape_of(keys)}")
        require_tensor("mask", mask, ndim=3, shape="(B, 1, T_in)")
        query = self.score.W_q(s).unsqueeze(1)  # W_s s: (B, 1, attn_dim)
        scores = self.score.v(torch.tanh(query + keys)).squeeze(-1)  # (B, T_in)
        weights = masked_softmax(scores, mask.squeeze(1))
        context = torch.bmm(weights.unsqueeze(1), enc_out).squeeze(1)  # sum_i alpha_i h_i
        return context, weights

    def step(self, y_emb: Tensor, s_prev: Tensor, memory) -> tuple[Tensor, Tensor, Tensor]:
        self.check_step(y_emb, s_prev)
        enc_out, keys, mask = memory
        context, weights = self.attend(s_prev, enc_out, keys, mask)
        s = self.decoder(torch.cat([y_emb, context], dim=-1), s_prev)
        return s, torch.cat([s, context], dim=-1), weights
