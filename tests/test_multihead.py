"""MultiHeadAttention against torch.nn.MultiheadAttention with the same weights."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import MultiHeadAttention, causal_mask, padding_mask, to_torch_multihead


def test_parameter_count_is_4d2_plus_4d():
    mha = MultiHeadAttention(64, 8)
    count = sum(p.numel() for p in mha.parameters())
    assert count == 4 * 64**2 + 4 * 64 == 16_640
    torch_count = sum(p.numel() for p in to_torch_multihead(mha).parameters())
    assert torch_count == count


@settings(max_examples=25, deadline=None)
@given(
    heads=st.sampled_from([1, 2, 4, 8]),
    per_head=st.integers(1, 4),
    batch=st.integers(1, 3),
    n=st.integers(1, 6),
    m=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_matches_torch_self_and_cross_attention(heads, per_head, batch, n, m, seed):
    torch.manual_seed(seed)
    d = heads * per_head
    mha = MultiHeadAttention(d, heads).double()
    ref = to_torch_multihead(mha)
    x = torch.randn(batch, n, d, dtype=torch.float64)
    memory = torch.randn(batch, m, d, dtype=torch.float64)
    for q, kv in ((x, x), (x, memory)):
        out, weights = mha(q, kv, kv)
        ref_out, ref_weights = ref(q, kv, kv, average_attn_weights=False)
        assert weights.shape == (batch, heads, q.shape[1], kv.shape[1])
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(weights, ref_weights)


def test_masks_match_torch_with_inverted_convention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).double()
    ref = to_torch_multihead(mha)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = causal_mask(5)
    out, weights = mha(x, x, x, mask)
    ref_out, _ = ref(x, x, x, attn_mask=~mask)  # torch: True = blocked
    torch.testing.assert_close(out, ref_out)
    assert torch.all(weights.triu(1) == 0)

    tokens = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 0]])
    keep = padding_mask(tokens, 0)  # (B, 1, m), shared by all heads
    out, weights = mha(x, x, x, keep)
    ref_out, _ = ref(x, x, x, key_padding_mask=tokens == 0)
    torch.testing.assert_close(out, ref_out)
    assert torch.all(weights[0, :, :, 3:] == 0)


def test_float32_agrees_with_torch():
    torch.manual_seed(1)
    mha = MultiHeadAttention(64, 8)
    x = torch.randn(4, 10, 64)
    out, _ = mha(x, x, x)
    ref_out, _ = to_torch_multihead(mha)(x, x, x)
    torch.testing.assert_close(out, ref_out, atol=1e-6, rtol=1e-5)


def test_split_and_merge_heads_are_inverse():
    mha = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    split = mha.split_heads(x)
    assert split.shape == (2, 3, 5, 4)
    torch.testing.assert_close(split[:, 1], x[..., 4:8])
    torch.testing.assert_close(mha.merge_heads(split), x)


def test_d_model_not_divisible():
    with pytest.raises(ValueError, match="d_model=10, num_heads=4"):
        MultiHeadAttention(10, 4)


@pytest.mark.parametrize("d_model, heads", [(0, 1), (8, 0), (-8, 2)])
def test_non_positive_sizes(d_model, heads):
    with pytest.raises(ValueError, match="positive integer"):
        MultiHeadAttention(d_model, heads)


def test_bad_inputs_name_shapes():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"query must have shape \(B, length, 8\), got shape \(2, 3, 6\)"):
        mha(torch.randn(2, 3, 6), torch.randn(2, 3, 8), torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match=r"key has shape \(2, 4, 8\), value has shape \(2, 5, 8\)"):
        mha(torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match="batch size"):
        mha(torch.randn(2, 3, 8), torch.randn(3, 4, 8), torch.randn(3, 4, 8))
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 8), torch.ones(3, 3, dtype=torch.bool))


# --- Attention dropout (issue 18) ----------------------------------------------------------------


def test_dropout_is_off_in_eval_mode_and_matches_torch_with_the_same_dropout():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, dropout=0.3).double().eval()
    ref = to_torch_multihead(mha)
    assert ref.dropout == 0.3 and not ref.training
    x, memory = torch.randn(2, 5, 16, dtype=torch.float64), torch.randn(2, 7, 16, dtype=torch.float64)
    for q, kv, mask in ((x, x, causal_mask(5)), (x, memory, None)):
        out, weights = mha(q, kv, kv, mask)
        ref_out, ref_weights = ref(q, kv, kv, attn_mask=None if mask is None else ~mask, average_attn_weights=False)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(weights, ref_weights)
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64))
    torch.testing.assert_close(mha(x, x, x)[0], mha(x, x, x)[0], atol=0, rtol=0)  # no randomness in eval mode


def test_training_mode_zeroes_weights_and_scales_the_kept_ones_by_one_over_one_minus_p():
    p = 0.25
    torch.manual_seed(1)
    mha = MultiHeadAttention(16, 4, dropout=p).double()
    x = torch.randn(8, 7, 16, dtype=torch.float64)
    with torch.no_grad():
        _, w_eval = mha.eval()(x, x, x)
        out, w = mha.train()(x, x, x)
    dropped = w == 0
    torch.testing.assert_close(w[~dropped], w_eval[~dropped] / (1 - p))
    assert not torch.allclose(w.sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64))  # rows no longer sum to 1
    # the returned weights are the ones applied to the values
    V = mha.split_heads(mha.W_v(x))
    torch.testing.assert_close(out, mha.W_o(mha.merge_heads(w @ V)))
    # about a share p of the weights is dropped: within 5 standard deviations of a binomial count
    count, total = dropped.sum().item(), dropped.numel()
    assert abs(count - p * total) < 5 * (total * p * (1 - p)) ** 0.5, (count, total)


def test_the_mean_output_over_many_seeded_draws_is_unchanged():
    # E[dropout(w)] = w and the output is linear in the weights, so the mean output is the eval output.
    p, draws = 0.2, 4000
    torch.manual_seed(2)
    mha = MultiHeadAttention(8, 2, dropout=p).double()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    with torch.no_grad():
        expected, _ = mha.eval()(x, x, x)
        outs, _ = mha.train()(*(x.expand(draws, 5, 8),) * 3)  # one independent dropout draw per batch row
    standard_error = outs.std(dim=0) / draws**0.5
    z = (outs.mean(dim=0) - expected[0]) / standard_error
    assert z.abs().max().item() < 5, z.abs().max().item()
    assert (outs.std(dim=0) > 0).all()  # the draws do differ


def test_dropout_keeps_fully_masked_rows_at_zero_and_p_zero_changes_nothing():
    torch.manual_seed(3)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 4, 8)
    mask = torch.tensor([[True, True, False, False], [False] * 4])[:, None, :].expand(2, 4, 4)
    _, w = mha(x, x, x, mask)
    assert (w[1] == 0).all() and torch.isfinite(w).all()
    plain = MultiHeadAttention(8, 2)
    plain.load_state_dict(mha.state_dict())
    assert plain.dropout == 0.0
    torch.testing.assert_close(plain(x, x, x)[0], mha.eval()(x, x, x)[0])
