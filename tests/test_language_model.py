"""The tiny next-token predictor: data, the causal model, loss, training and generation."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_utils import causal_mask, seed_everything
from course_utils.core.transformer import to_torch_encoder_layer
from course_utils.models.language_model import (
    CausalLM,
    CharVocab,
    RepeatPatternTask,
    generate,
    generation_accuracy,
    lm_loss,
    load_corpus,
    sample_windows,
    shift_by_one,
    stepwise_logits,
    train_lm,
)


def small_model(causal: bool = True, positions: str = "learned", vocab_size: int = 7, max_len: int = 10) -> CausalLM:
    torch.manual_seed(0)
    return CausalLM(vocab_size, max_len, d_model=16, num_heads=2, num_layers=2, positions=positions, causal=causal).eval()


# --- data ---


def test_shift_by_one_pairs_each_token_with_the_next():
    seq = torch.tensor([[5, 1, 4, 2], [0, 3, 3, 1]])
    inputs, targets = shift_by_one(seq)
    assert inputs.tolist() == [[5, 1, 4], [0, 3, 3]]
    assert targets.tolist() == [[1, 4, 2], [3, 3, 1]]
    with pytest.raises(ValueError, match="at least 2"):
        shift_by_one(torch.tensor([3]))


def test_repeat_pattern_sequences_repeat_their_first_period_tokens():
    task = RepeatPatternTask(period=3, num_symbols=5, length=10)
    seqs = task.sample(300, torch.Generator().manual_seed(0))
    assert seqs.shape == (300, 11)
    assert 0 <= seqs.min() and seqs.max() < 5
    for row in seqs.tolist():
        for t in range(3, 11):
            assert row[t] == row[t - 3]
    # The pattern itself is uniform: each symbol about 1/5 of the first-period tokens.
    freq = torch.bincount(seqs[:, :3].flatten(), minlength=5).float() / 900
    assert torch.allclose(freq, torch.full((5,), 0.2), atol=0.05)
    again = task.sample(300, torch.Generator().manual_seed(0))
    assert torch.equal(seqs, again)
    inputs, targets = task.batch(4, torch.Generator().manual_seed(1))
    assert inputs.shape == targets.shape == (4, 10)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


def test_repeat_pattern_text_and_bad_settings():
    task = RepeatPatternTask(period=3, num_symbols=4, length=6)
    assert task.names() == ["a", "b", "c", "d"]
    assert task.to_text(torch.tensor([2, 0, 2, 2, 0, 2, 2])) == "cac cac c"
    for kwargs in [dict(period=0), dict(num_symbols=0), dict(num_symbols=27), dict(period=5, length=5)]:
        with pytest.raises(ValueError):
            RepeatPatternTask(**kwargs)


def test_loss_floor_is_the_loss_of_the_best_honest_predictor():
    task = RepeatPatternTask(period=4, num_symbols=6, length=12)
    assert task.loss_floor() == pytest.approx(3 / 12 * math.log(6))
    inputs, targets = task.batch(50, torch.Generator().manual_seed(0))
    # Oracle: uniform for the first period-1 targets, then (almost) certain of the token period-1 steps back.
    logits = torch.zeros(50, 12, 6)
    for b in range(50):
        for t in range(12):
            if t >= 3:
                logits[b, t, inputs[b, t - 3]] = 50.0
    assert lm_loss(logits, targets).item() == pytest.approx(task.loss_floor(), abs=1e-6)


def test_char_vocab_round_trip_and_unknown_characters():
    vocab = CharVocab("hello world")
    assert vocab.chars == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert len(vocab) == 8
    ids = vocab.encode("hold")
    assert ids.tolist() == [3, 5, 4, 1]
    assert vocab.decode(ids) == "hold"
    with pytest.raises(ValueError, match="'z'"):
        vocab.encode("zoo")
    with pytest.raises(ValueError):
        CharVocab("")


def test_corpus_is_small_plain_lowercase_text():
    text = load_corpus()
    assert 1000 < len(text) < 10000
    assert set(text) <= set("abcdefghijklmnopqrstuvwxyz .,\n")


def test_sample_windows_are_contiguous_and_shifted():
    ids = torch.arange(100, 150)  # every window of consecutive numbers is recognisable
    inputs, targets = sample_windows(ids, block_size=8, batch_size=40, generator=torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (40, 8)
    for row_in, row_tgt in zip(inputs.tolist(), targets.tolist()):
        start = row_in[0]
        assert row_in == list(range(start, start + 8))
        assert row_tgt == list(range(start + 1, start + 9))
        assert 100 <= start and start + 8 <= 149
    with pytest.raises(ValueError, match="N >= block_size"):
        sample_windows(torch.arange(8), block_size=8, batch_size=1)


# --- model ---


def test_forward_shapes_and_causal_weights():
    model = small_model()
    tokens = torch.randint(0, 7, (3, 9))
    logits, weights = model(tokens)
    assert logits.shape == (3, 9, 7) and weights.shape == (3, 2, 2, 9, 9)
    assert torch.all(weights.triu(diagonal=1) == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 2, 9))
    _, free_weights = small_model(causal=False)(tokens)
    above = torch.ones(9, 9, dtype=torch.bool).triu(diagonal=1)
    assert torch.all(free_weights[..., above] > 0)


def test_forward_matches_pytorch_encoder_layers_with_the_mask_flipped():
    model = small_model()
    tokens = torch.randint(0, 7, (2, 8))
    x = model.token_embedding(tokens) + model.position.table.weight[:8]
    blocked = ~causal_mask(8)  # PyTorch: True = blocked
    for block in model.blocks:
        x = to_torch_encoder_layer(block)(x, src_mask=blocked)
    expected = model.head(F.layer_norm(x, (16,), model.norm.weight, model.norm.bias))
    torch.testing.assert_close(model(tokens)[0], expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_a_future_token_never_changes_earlier_logits(positions):
    model = small_model(positions=positions)
    tokens = torch.randint(0, 7, (1, 10), generator=torch.Generator().manual_seed(3))
    logits, _ = model(tokens)
    for k in range(10):
        changed = tokens.clone()
        changed[0, k] = (changed[0, k] + 1) % 7
        new_logits, _ = model(changed)
        torch.testing.assert_close(new_logits[:, :k], logits[:, :k], atol=1e-6, rtol=0)
        assert (new_logits[:, k] - logits[:, k]).abs().max() > 1e-4  # position k sees its own token


def test_without_the_mask_a_future_token_changes_earlier_logits():
    model = small_model(causal=False)
    tokens = torch.randint(0, 7, (1, 10), generator=torch.Generator().manual_seed(3))
    changed = tokens.clone()
    changed[0, 9] = (changed[0, 9] + 1) % 7
    diff = (model(changed)[0] - model(tokens)[0]).abs().amax(dim=-1)  # (1, 10)
    assert torch.all(diff[0, :9] > 1e-5)


def test_stepwise_logits_equal_one_pass_only_with_the_mask():
    tokens = torch.randint(0, 7, (2, 10), generator=torch.Generator().manual_seed(4))
    model = small_model()
    torch.testing.assert_close(stepwise_logits(model, tokens), model(tokens)[0], atol=1e-5, rtol=1e-5)
    free = small_model(causal=False)
    steps = stepwise_logits(free, tokens)
    torch.testing.assert_close(steps[:, -1], free(tokens)[0][:, -1], atol=1e-5, rtol=1e-5)  # last sees everything anyway
    assert not torch.allclose(steps[:, :-1], free(tokens)[0][:, :-1], atol=1e-3)


def test_model_rejects_bad_input():
    model = small_model(max_len=10)
    with pytest.raises(ValueError, match="max_len=10"):
        model(torch.zeros(1, 11, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        model(torch.zeros(11, dtype=torch.long))
    with pytest.raises(ValueError, match="positions"):
        CausalLM(5, 8, d_model=8, num_heads=2, positions="rotary")


def test_lm_loss_is_the_mean_negative_log_probability_of_the_targets():
    logits = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))
    targets = torch.tensor([[0, 3, 1], [2, 2, 0]])
    total = 0.0
    for b in range(2):
        for t in range(3):
            row = logits[b, t]
            total += -(row[targets[b, t]] - torch.logsumexp(row, 0)).item()
    assert lm_loss(logits, targets).item() == pytest.approx(total / 6, rel=1e-6)
    with pytest.raises(ValueError):
        lm_loss(logits, targets[:, :2])


# --- generation ---


def test_greedy_generation_appends_the_argmax_one_token_at_a_time():
    model = small_model()
    prompt = torch.tensor([[1, 2], [3, 0]])
    out = generate(model, prompt, 5)
    assert out.shape == (2, 7) and torch.equal(out[:, :2], prompt)
    tokens = prompt.clone()
    for _ in range(5):
        logits, _ = model(tokens)
        tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(out, tokens)
    single = generate(model, torch.tensor([1, 2]), 5)
    assert torch.equal(single, out[0])


def test_generation_beyond_the_context_window_uses_the_last_max_len_tokens():
    model = small_model(max_len=6)
    out = generate(model, torch.tensor([[1, 2, 3]]), 8)
    assert out.shape == (1, 11)
    for t in range(6, 11):
        expected = model(out[:, t - 6 : t])[0][0, -1].argmax().item()
        assert out[0, t].item() == expected


def test_temperature_sampling_follows_softmax_of_scaled_logits():
    model = small_model()
    prompt = torch.tensor([[1, 2, 3]])
    logits = model(prompt)[0][0, -1]
    for temperature in (0.5, 2.0):
        samples = generate(model, prompt.expand(4000, 3), 1, temperature, torch.Generator().manual_seed(0))[:, -1]
        freq = torch.bincount(samples, minlength=7).float() / 4000
        assert torch.allclose(freq, torch.softmax(logits / temperature, -1), atol=0.03)
    a = generate(model, prompt, 6, 1.0, torch.Generator().manual_seed(5))
    b = generate(model, prompt, 6, 1.0, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="temperature"):
        generate(model, prompt, 1, temperature=-1.0)


class _RuleModel(CausalLM):
    """Not trained: predicts the token `period` steps before the next one (the pattern rule), or always `fixed`."""

    def __init__(self, task: RepeatPatternTask, fixed: int | None = None):
        super().__init__(task.vocab_size, task.length, d_model=8, num_heads=1, num_layers=1)
        self.task, self.fixed = task, fixed

    def forward(self, tokens):
        B, T = tokens.shape
        logits = torch.zeros(B, T, self.task.vocab_size)
        for t in range(T):
            back = t + 1 - self.task.period
            choice = tokens[:, back] if self.fixed is None and back >= 0 else torch.full((B,), self.fixed or 0)
            logits[torch.arange(B), t, choice] = 1.0
        return logits, torch.zeros(B, 1, 1, T, T)


def test_generation_accuracy_of_a_perfect_and_a_constant_predictor():
    task = RepeatPatternTask(period=3, num_symbols=4, length=9)
    seqs = task.sample(50, torch.Generator().manual_seed(0))
    assert generation_accuracy(_RuleModel(task), seqs, prompt_len=3) == (1.0, 1.0)
    token_acc, seq_acc = generation_accuracy(_RuleModel(task, fixed=2), seqs, prompt_len=3)
    rest = seqs[:, 3:]
    assert token_acc == pytest.approx((rest == 2).float().mean().item())
    assert seq_acc == pytest.approx((rest == 2).all(dim=1).float().mean().item())


def test_training_lowers_the_loss_and_repeats_exactly():
    task = RepeatPatternTask(period=3, num_symbols=4, length=8)

    def run():
        seed_everything(0)
        model = CausalLM(task.vocab_size, task.length, d_model=16, num_heads=2, num_layers=1)
        return train_lm(model, lambda g: task.batch(32, g), steps=60, lr=1e-2, seed=0)

    losses = run()
    assert len(losses) == 60
    assert sum(losses[-10:]) / 10 < 0.75 * sum(losses[:5]) / 5
    assert losses == run()
