"""Reversal data, the two seq2seq models, training, greedy decoding and the metrics."""

import math

import pytest
import torch

from course_utils.core.scores import AdditiveScore
from course_utils.models.seq2seq import Seq2SeqNoAttention, Seq2SeqWithAttention, masked_softmax
from course_utils.models.seq2seq_data import (
    EOS_ID,
    PAD_ID,
    SOS_ID,
    ReversalData,
    decoder_inputs,
    heldout_reversal_data,
    iterate_batches,
    make_reversal_data,
    make_vocab,
    pad_batch,
    reversal_target,
    to_tokens,
    truncate_after_eos,
)
from course_utils.models.seq2seq_training import (
    accuracy_by_length,
    evaluate,
    exact_match_accuracy,
    predict,
    sequence_correct,
    sequence_loss,
    token_accuracy,
    train_seq2seq,
)

V = len(make_vocab())



# --- data ---------------------------------------------------------------------


def test_vocab():
    vocab = make_vocab(4)
    assert vocab == ["<pad>", "<sos>", "<eos>", "a", "b", "c", "d"]
    assert (vocab[PAD_ID], vocab[SOS_ID], vocab[EOS_ID]) == ("<pad>", "<sos>", "<eos>")


def test_reversal_target_by_hand():
    assert reversal_target([3, 7, 1, 5]) == [5, 1, 7, 3, EOS_ID]


def test_reversal_data_is_reversed_and_padded():
    data = make_reversal_data(200, 2, 7, num_symbols=5, seed=3)
    assert data.src.shape == (200, 7) and data.tgt.shape == (200, 8)
    assert set(data.lengths.tolist()) == set(range(2, 8))  # every length occurs in 200 draws
    for src, tgt, n in zip(data.src.tolist(), data.tgt.tolist(), data.lengths.tolist()):
        assert all(3 <= tok < 3 + 5 for tok in src[:n])
        assert src[n:] == [PAD_ID] * (7 - n)
        for i in range(n):  # position i of the target is position n-1-i of the source
            assert tgt[i] == src[n - 1 - i]
        assert tgt[n] == EOS_ID
        assert tgt[n + 1 :] == [PAD_ID] * (7 - n)


def test_reversal_data_is_seeded():
    a = make_reversal_data(50, 3, 6, seed=1)
    b = make_reversal_data(50, 3, 6, seed=1)
    c = make_reversal_data(50, 3, 6, seed=2)
    assert torch.equal(a.src, b.src) and torch.equal(a.tgt, b.tgt)
    assert not torch.equal(a.src, c.src)
    assert torch.equal(heldout_reversal_data(3, 6, 40).src, heldout_reversal_data(3, 6, 40).src)


def test_exclude_keeps_held_out_sequences_out():
    # 2 symbols, length 3: only 8 different sources exist.
    held = make_reversal_data(3, 3, 3, num_symbols=2, seed=0)
    held_set = {tuple(s) for s in held.src.tolist()}
    assert 1 <= len(held_set) < 8
    train = make_reversal_data(100, 3, 3, num_symbols=2, seed=1, exclude=held)
    train_set = {tuple(s) for s in train.src.tolist()}
    assert train_set.isdisjoint(held_set)
    assert len(train_set) == 8 - len(held_set)


def test_pad_batch_and_decoder_inputs():
    padded = pad_batch([[5, 6], [7], [8, 9, 10]])
    assert padded.tolist() == [[5, 6, 0], [7, 0, 0], [8, 9, 10]]
    tgt = torch.tensor([[4, 3, EOS_ID, PAD_ID], [5, 6, 7, EOS_ID]])
    assert decoder_inputs(tgt).tolist() == [[SOS_ID, 4, 3, EOS_ID], [SOS_ID, 5, 6, 7]]


def test_iterate_batches_covers_everything_once_and_trims():
    data = make_reversal_data(50, 1, 9, seed=0)
    g = torch.Generator().manual_seed(0)
    seen = []
    for batch in iterate_batches(data, 16, shuffle=True, generator=g):
        assert batch.src.shape[1] == batch.lengths.max()
        assert batch.tgt.shape[1] == batch.lengths.max() + 1
        seen += [tuple(row[:n].tolist()) for row, n in zip(batch.src, batch.lengths)]
    assert sorted(seen) == sorted(tuple(row[:n].tolist()) for row, n in zip(data.src, data.lengths))
    sizes = [len(b) for b in iterate_batches(data, 16)]
    assert sizes == [16, 16, 16, 2]


def test_iterate_batches_by_length_groups_lengths():
    data = make_reversal_data(120, 2, 9, seed=0)
    g = torch.Generator().manual_seed(0)
    batches = list(iterate_batches(data, 10, shuffle=True, by_length=True, generator=g))
    assert sum(len(b) for b in batches) == 120
    ranges = sorted((int(b.lengths.min()), int(b.lengths.max())) for b in batches)
    for (_, hi1), (lo2, _) in zip(ranges, ranges[1:]):
        assert hi1 <= lo2  # the batches cover consecutive, non-overlapping length ranges
    assert [b.lengths.min() for b in batches] != sorted(b.lengths.min() for b in batches)  # batch order shuffled


def test_to_tokens():
    vocab = make_vocab(3)
    assert to_tokens([5, 3, EOS_ID, 4, PAD_ID], vocab) == ["c", "a", "<eos>"]
    assert to_tokens(torch.tensor([3, 4, PAD_ID]), vocab) == ["a", "b"]


# --- attention pieces -----------------------------------------------------------


def test_masked_softmax_zero_on_pads_and_matches_softmax_of_real_part():
    scores = torch.tensor([[1.0, 2.0, 3.0, 50.0], [0.5, -1.0, 9.0, 9.0]])
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    w = masked_softmax(scores, mask)
    assert w[0, 3] == 0 and w[1, 2] == 0 and w[1, 3] == 0
    torch.testing.assert_close(w.sum(-1), torch.ones(2))
    e = [math.exp(1.0), math.exp(2.0), math.exp(3.0)]
    torch.testing.assert_close(w[0, :3], torch.tensor([x / sum(e) for x in e]))
    torch.testing.assert_close(w[1, :2], torch.softmax(torch.tensor([0.5, -1.0]), dim=0))


def _batch(seed=0, n=6, lo=2, hi=7):
    return make_reversal_data(n, lo, hi, seed=seed)


def test_attention_weights_rows_sum_to_one_and_ignore_pads():
    torch.manual_seed(0)
    model = Seq2SeqWithAttention(V).eval()
    data = _batch()
    logits, weights = model(data.src, data.lengths, data.tgt)
    assert logits.shape == (6, 8, V) and weights.shape == (6, 8, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(6, 8))
    pad = (data.src == PAD_ID).unsqueeze(1).expand_as(weights)
    assert pad.any() and torch.all(weights[pad] == 0)
    assert torch.all(weights[~pad] > 0)


def test_padding_does_not_change_the_result():
    # The same example alone (no padding) and inside a padded batch gives the same logits and weights.
    torch.manual_seed(1)
    model = Seq2SeqWithAttention(V).eval()
    data = _batch(seed=4)
    i = int(torch.argmin(data.lengths))
    n = int(data.lengths[i])
    assert n < data.src.shape[1]
    logits, weights = model(data.src, data.lengths, data.tgt)
    alone_logits, alone_weights = model(data.src[i : i + 1, :n], data.lengths[i : i + 1], data.tgt[i : i + 1, : n + 1])
    torch.testing.assert_close(logits[i, : n + 1], alone_logits[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights[i, : n + 1, :n], alone_weights[0], atol=1e-6, rtol=1e-5)


def test_attend_is_the_additive_score_of_the_decoder_state():
    torch.manual_seed(2)
    model = Seq2SeqWithAttention(V, hidden_dim=16, attn_dim=8)
    data = _batch()
    (enc_out, keys, mask), s0 = model.start(data.src, data.lengths)
    s = torch.randn_like(s0)
    context, weights = model.attend(s, enc_out, keys, mask)
    # Independently: v^T tanh(W_s s + W_h h_i) by a loop over positions, softmax over the real ones.
    W_s, W_h, v = model.score.W_q.weight, model.score.W_k.weight, model.score.v.weight[0]
    for b in range(len(data)):
        n = int(data.lengths[b])
        e = torch.stack([v @ torch.tanh(W_s @ s[b] + W_h @ enc_out[b, i]) for i in range(n)])
        alpha = torch.softmax(e, dim=0)
        torch.testing.assert_close(weights[b, :n], alpha, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(context[b], (alpha[:, None] * enc_out[b, :n]).sum(0), atol=1e-6, rtol=1e-5)
    # ... and the package's AdditiveScore module gives the same scores.
    assert isinstance(model.score, AdditiveScore)
    scores = model.score(s.unsqueeze(1), enc_out).squeeze(1)
    torch.testing.assert_close(weights, masked_softmax(scores, mask.squeeze(1)), atol=1e-6, rtol=1e-5)


def test_attention_weights_depend_on_the_decoder_state():
    torch.manual_seed(3)
    model = Seq2SeqWithAttention(V).eval()
    data = _batch()
    (enc_out, keys, mask), s0 = model.start(data.src, data.lengths)
    _, w1 = model.attend(s0, enc_out, keys, mask)
    _, w2 = model.attend(torch.randn_like(s0), enc_out, keys, mask)
    assert (w1 - w2).abs().max() > 1e-3
    # In the forward pass, the decoder steps of one sequence get different weights.
    _, weights = model(data.src, data.lengths, data.tgt)
    assert (weights[:, 1:] - weights[:, :1]).abs().amax(dim=(1, 2)).min() > 1e-4
    # Control: with W_s = 0 the decoder state cannot enter and every step gets the same weights,
    # which is exactly what this test would catch.
    with torch.no_grad():
        model.score.W_q.weight.zero_()
    _, flat = model(data.src, data.lengths, data.tgt)
    torch.testing.assert_close(flat, flat[:, :1].expand_as(flat))


def test_no_attention_decoder_sees_only_the_initial_state():
    torch.manual_seed(4)
    model = Seq2SeqNoAttention(V).eval()
    data = _batch()
    logits, weights = model(data.src, data.lengths, data.tgt)
    assert weights is None and logits.shape == (6, 8, V)
    memory, s0 = model.start(data.src, data.lengths)
    # Replacing the encoder outputs by zeros changes nothing: only s_0 carries the source.
    zeros = (torch.zeros_like(memory[0]), memory[1])
    y = model.tgt_embedding(torch.full((6,), SOS_ID))
    s_a, feat_a, _ = model.step(y, s0, memory)
    s_b, feat_b, _ = model.step(y, s0, zeros)
    assert torch.equal(s_a, s_b) and torch.equal(feat_a, feat_b)


@pytest.mark.parametrize("cls", [Seq2SeqWithAttention, Seq2SeqNoAttention])
def test_greedy_decode_feeds_back_its_own_argmax(cls):
    # Teacher forcing on the greedy output must reproduce the greedy choices at every step up to <eos>.
    torch.manual_seed(5)
    model = cls(V).eval()
    data = _batch()
    tokens, weights = model.greedy_decode(data.src, data.lengths, max_len=8)
    logits, tf_weights = model(data.src, data.lengths, tokens)
    argmax = logits.argmax(-1)
    for b in range(6):
        row = tokens[b].tolist()
        stop = row.index(EOS_ID) + 1 if EOS_ID in row else len(row)
        assert argmax[b, :stop].tolist() == row[:stop]
        assert all(t == PAD_ID for t in row[stop:])
        if weights is not None:
            torch.testing.assert_close(weights[b, :stop], tf_weights[b, :stop])


def test_truncate_after_eos():
    tokens = torch.tensor([[4, EOS_ID, 5, EOS_ID], [4, 5, 6, 7], [EOS_ID, 3, 3, 3]])
    assert truncate_after_eos(tokens).tolist() == [[4, EOS_ID, 0, 0], [4, 5, 6, 7], [EOS_ID, 0, 0, 0]]


# --- training -------------------------------------------------------------------


def test_sequence_loss_ignores_pad_positions():
    torch.manual_seed(6)
    logits = torch.randn(2, 4, V)
    tgt = torch.tensor([[5, 4, EOS_ID, PAD_ID], [3, 3, 6, EOS_ID]])
    real = [(b, t) for b in range(2) for t in range(4) if tgt[b, t] != PAD_ID]
    expected = sum(-torch.log_softmax(logits[b, t], -1)[tgt[b, t]] for b, t in real) / len(real)
    torch.testing.assert_close(sequence_loss(logits, tgt), expected)
    changed = logits.clone()
    changed[0, 3] += 100.0  # a pad position
    torch.testing.assert_close(sequence_loss(changed, tgt), expected)


def test_training_overfits_a_tiny_set_and_greedy_decoding_reverses_it():
    torch.manual_seed(0)
    data = make_reversal_data(32, 2, 4, num_symbols=4, seed=0)
    model = Seq2SeqWithAttention(3 + 4, emb_dim=16, hidden_dim=32, attn_dim=16)
    history = train_seq2seq(model, data, epochs=40, batch_size=20, lr=2e-2, final_lr=2e-3, seed=0)
    assert len(history.step_losses) == 40 * 2 and len(history.epoch_losses) == 40  # 32 = 20 + 12 per epoch
    assert history.epoch_losses[-1] < 0.05 < history.epoch_losses[0]
    pred = predict(model, data)
    for p, src, n in zip(pred.tolist(), data.src.tolist(), data.lengths.tolist()):
        assert p[: n + 1] == src[:n][::-1] + [EOS_ID]  # reversed by an independent slice
    result = evaluate(model, data)
    assert result["exact_accuracy"] == 1.0 and result["token_accuracy"] == 1.0


def test_training_is_reproducible_with_a_seed():
    data = make_reversal_data(40, 2, 5, seed=0)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = Seq2SeqNoAttention(V, emb_dim=8, hidden_dim=16)
        runs.append(train_seq2seq(model, data, epochs=2, batch_size=16, seed=7, by_length=True).step_losses)
    assert runs[0] == runs[1]



# --- observing the model between epochs (on_epoch_end) ---------------------------


class _DropoutSeq2Seq(Seq2SeqWithAttention):
    """A model whose training forward pass draws from the global RNG (dropout on the features)."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__(vocab_size, emb_dim=8, hidden_dim=16, attn_dim=8)
        self.drop = torch.nn.Dropout(0.3)

    def step(self, y_emb, s_prev, memory):
        s, feat, w = super().step(y_emb, s_prev, memory)
        return s, self.drop(feat), w


def _fresh(cls):
    torch.manual_seed(0)
    return cls(V) if cls is _DropoutSeq2Seq else cls(V, emb_dim=8, hidden_dim=16)


def test_on_epoch_end_sees_epochs_in_order_after_each_epoch_and_training_mode_returns():
    data = make_reversal_data(40, 2, 5, seed=0)  # batches of 16: 3 optimiser steps per epoch
    model = _fresh(Seq2SeqWithAttention)
    modes_in_forward, calls = [], []
    model.register_forward_pre_hook(lambda module, args: modes_in_forward.append(module.training))

    def callback(epoch, seen):
        calls.append((epoch, seen is model, len(modes_in_forward), seen.training))
        seen.eval()  # switched off here: the next epoch's forward passes must run in training mode again

    history = train_seq2seq(model, data, epochs=4, batch_size=16, seed=1, on_epoch_end=callback)
    assert [c[0] for c in calls] == [1, 2, 3, 4]
    assert all(c[1] for c in calls), "the callback must receive the model being trained"
    assert [c[2] for c in calls] == [3, 6, 9, 12], "called once after all of an epoch's steps"
    assert all(c[3] for c in calls), "the model is in training mode when an epoch ends"
    assert len(modes_in_forward) == 12 and all(modes_in_forward), "a training step ran in eval mode"
    assert model.training and len(history.epoch_losses) == 4


@pytest.mark.parametrize("cls", [Seq2SeqWithAttention, Seq2SeqNoAttention, _DropoutSeq2Seq])
def test_a_callback_that_evaluates_and_draws_random_numbers_changes_nothing(cls):
    data = make_reversal_data(48, 2, 6, seed=0)
    heldout = make_reversal_data(20, 2, 6, seed=5)
    settings = dict(epochs=3, batch_size=16, lr=1e-2, final_lr=1e-3, by_length=True, seed=3)
    seen_losses = []

    def look(epoch, model):
        model.eval()
        with torch.no_grad():
            logits, _ = model(heldout.src, heldout.lengths, heldout.tgt)
        seen_losses.append(sequence_loss(logits, heldout.tgt).item())
        torch.rand(1000)  # moves the global RNG, which the dropout of the next epoch reads
        torch.manual_seed(1234 + epoch)  # even re-seeding it must not leak into the training

    plain, watched = _fresh(cls), _fresh(cls)
    rng_before = torch.get_rng_state()
    h_plain = train_seq2seq(plain, data, **settings)
    rng_after_plain = torch.get_rng_state()
    torch.set_rng_state(rng_before)  # both runs start from the same global random state
    h_watched = train_seq2seq(watched, data, on_epoch_end=look, **settings)
    assert len(seen_losses) == 3
    assert h_watched.step_losses == h_plain.step_losses  # bit-identical floats
    assert h_watched.epoch_losses == h_plain.epoch_losses
    for (name, p), q in zip(plain.named_parameters(), watched.parameters()):
        assert torch.equal(p, q), name
    assert torch.equal(torch.get_rng_state(), rng_after_plain), "the callback's draws leaked out of the training"


# --- metrics --------------------------------------------------------------------

# Hand-made predictions for three targets (source lengths 2, 2, 3).
TARGET = torch.tensor([[4, 3, EOS_ID, PAD_ID], [5, 6, EOS_ID, PAD_ID], [7, 8, 9, EOS_ID]])
PRED = torch.tensor([[4, 3, EOS_ID, PAD_ID], [5, 5, EOS_ID, 9], [7, 8, 9, 9]])
LENGTHS = torch.tensor([2, 2, 3])


def test_token_accuracy_by_hand():
    # Real target tokens: 3 + 3 + 4 = 10; correct: 3 + 2 + 3 = 8 (pads never count, even the 9 after <eos>).
    assert token_accuracy(PRED, TARGET) == pytest.approx(8 / 10)


def test_exact_match_by_hand():
    # Row 0 right; row 1 has a wrong token; row 2 misses its <eos> (the model did not stop).
    assert sequence_correct(PRED, TARGET).tolist() == [True, False, False]
    assert exact_match_accuracy(PRED, TARGET) == pytest.approx(1 / 3)


def test_accuracy_by_length_by_hand():
    assert accuracy_by_length(PRED, TARGET, LENGTHS) == pytest.approx({2: 5 / 6, 3: 3 / 4})
    assert accuracy_by_length(PRED, TARGET, LENGTHS, exact=True) == pytest.approx({2: 1 / 2, 3: 0.0})
    assert all(type(k) is int for k in accuracy_by_length(PRED, TARGET, LENGTHS))


def test_shape_errors_are_clear():
    with pytest.raises(ValueError, match="pred and target"):
        token_accuracy(PRED[:, :3], TARGET)
    with pytest.raises(ValueError, match="lengths"):
        accuracy_by_length(PRED, TARGET, LENGTHS[:2])
    with pytest.raises(ValueError, match="min_len"):
        make_reversal_data(5, 4, 3)
    with pytest.raises(ValueError, match="logits"):
        sequence_loss(torch.zeros(2, 3, V), TARGET)
    model = Seq2SeqWithAttention(V)
    with pytest.raises(ValueError, match="src"):
        model.encode(torch.zeros(2, 3, dtype=torch.long), torch.tensor([3]))


def test_evaluate_on_cpu_device_argument():
    torch.manual_seed(0)
    data = heldout_reversal_data(2, 4, 20)
    model = Seq2SeqWithAttention(V)
    result = evaluate(model, data, device="cpu", batch_size=7)
    pred = result["pred"]
    assert pred.shape == data.tgt.shape
    assert result["token_accuracy"] == pytest.approx(token_accuracy(pred, data.tgt))
    assert set(result["by_length"]) == {2, 3, 4}
    assert isinstance(data, ReversalData)
