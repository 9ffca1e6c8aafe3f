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
