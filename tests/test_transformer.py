"""Positional encodings and the Transformer block, against hand formulas and torch.nn.TransformerEncoderLayer."""

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from course_utils import MultiHeadAttention, causal_mask, padding_mask
from course_utils.core.positions import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)
from course_utils.core.transformer import PositionwiseFeedForward, TransformerBlock, to_torch_encoder_layer

# --- sinusoidal encodings ---


@pytest.mark.parametrize("num_positions, d_model", [(1, 2), (7, 4), (30, 16), (50, 10)])
def test_sinusoidal_matches_the_formula_entry_by_entry(num_positions, d_model):
    pe = sinusoidal_positional_encoding(num_positions, d_model, dtype=torch.float64)
    assert pe.shape == (num_positions, d_model)
    for pos in range(num_positions):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_known_values_and_base():
    pe = sinusoidal_positional_encoding(3, 4, dtype=torch.float64)
    # Position 0: sin 0 = 0, cos 0 = 1. Dimension 0/1 use frequency 1; dimension 2/3 use 1/100 (base 10000, d=4).
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=torch.float64))
    torch.testing.assert_close(
        pe[2], torch.tensor([math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)], dtype=torch.float64)
    )
    pe_base_4 = sinusoidal_positional_encoding(2, 4, base=4.0, dtype=torch.float64)
    assert pe_base_4[1, 2].item() == pytest.approx(math.sin(0.5))  # 4 ** (-2/4) = 1/2


def test_sinusoidal_norm_offset_similarity_and_rotation():
    d, P = 16, 40
    pe = sinusoidal_positional_encoding(P, d, dtype=torch.float64)
    # sin^2 + cos^2 = 1 for each of the d/2 pairs.
    torch.testing.assert_close(pe.norm(dim=1), torch.full((P,), math.sqrt(d / 2), dtype=torch.float64))
    freqs = [10000 ** (-2 * i / d) for i in range(d // 2)]
    gram = pe @ pe.T
    for k in range(P):
        expected = sum(math.cos(w * k) for w in freqs)  # depends on the offset k only
        torch.testing.assert_close(gram.diagonal(k), torch.full((P - k,), expected, dtype=torch.float64))
    k = 5
    rotation = torch.zeros(d, d, dtype=torch.float64)
    for i, w in enumerate(freqs):
        c, s = math.cos(w * k), math.sin(w * k)
        rotation[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]])
    torch.testing.assert_close(pe[:-k] @ rotation.T, pe[k:])


def test_sinusoidal_rejects_bad_sizes():
    for args in [(5, 3), (0, 4), (4, 0), (4, -2)]:
        with pytest.raises(ValueError):
            sinusoidal_positional_encoding(*args)
    with pytest.raises(ValueError, match="even"):
        SinusoidalPositionalEncoding(5)


def test_sinusoidal_module_adds_the_table_for_any_length():
    module = SinusoidalPositionalEncoding(8)
    assert sum(p.numel() for p in module.parameters()) == 0
    for T in (1, 6, 300):
        x = torch.randn(2, T, 8)
        torch.testing.assert_close(module(x) - x, sinusoidal_positional_encoding(T, 8).expand(2, T, 8))
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        module(torch.randn(3, 8))


# --- learned embeddings ---


def test_learned_embedding_adds_one_row_per_position_and_stops_at_max_len():
    torch.manual_seed(0)
    module = LearnedPositionalEmbedding(max_len=6, d_model=4)
    assert sum(p.numel() for p in module.parameters()) == 6 * 4
    x = torch.randn(2, 5, 4)
    out = module(x)
    for b, t in itertools.product(range(2), range(5)):
        torch.testing.assert_close(out[b, t], x[b, t] + module.table.weight[t])
    assert module(torch.randn(1, 6, 4)).shape == (1, 6, 4)
    with pytest.raises(ValueError, match="max_len=6"):
        module(torch.randn(1, 7, 4))


def test_learned_rows_of_unseen_positions_get_no_gradient():
    torch.manual_seed(0)
    module = LearnedPositionalEmbedding(max_len=10, d_model=4)
    module(torch.randn(3, 4, 4)).pow(2).sum().backward()
    grad = module.table.weight.grad
    assert torch.all(grad[:4].abs().sum(dim=1) > 0)
    assert torch.all(grad[4:] == 0)


# --- feed-forward network and block ---


def test_feed_forward_is_position_wise_and_matches_formula():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(6, 10)
    x = torch.randn(2, 4, 6, dtype=torch.float32)
    out = ffn(x)
    W1, b1, W2, b2 = ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, ffn.linear2.bias
    for b, t in itertools.product(range(2), range(4)):
        hidden = torch.clamp(W1 @ x[b, t] + b1, min=0)
        torch.testing.assert_close(out[b, t], W2 @ hidden + b2)


def _random_layer_norms(block: TransformerBlock) -> None:
    with torch.no_grad():  # LayerNorm starts as gain 1, bias 0: randomise so that a mix-up would show
        for norm in (block.norm1, block.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_()


def _reference_block(block: TransformerBlock, x: torch.Tensor, mask=None) -> torch.Tensor:
    """The block written with functional ops and a per-head loop, reading block's weights."""
    d, h = block.d_model, block.num_heads
    d_k = d // h
    attn = block.attn

    def self_attention(z):
        q, k, v = attn.W_q(z), attn.W_k(z), attn.W_v(z)
        heads = []
        for i in range(h):
            cols = slice(i * d_k, (i + 1) * d_k)
            scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(d_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            heads.append(torch.softmax(scores, dim=-1) @ v[..., cols])
        return attn.W_o(torch.cat(heads, dim=-1))

    def norm(layer, z):
        mean = z.mean(-1, keepdim=True)
        var = z.var(-1, unbiased=False, keepdim=True)
        return (z - mean) / torch.sqrt(var + layer.eps) * layer.weight + layer.bias

    def ffn(z):
        return F.linear(F.relu(F.linear(z, block.ffn.linear1.weight, block.ffn.linear1.bias)),
                        block.ffn.linear2.weight, block.ffn.linear2.bias)

    if block.norm_first:
        y = x + self_attention(norm(block.norm1, x))
        return y + ffn(norm(block.norm2, y))
    y = norm(block.norm1, x + self_attention(x))
    return norm(block.norm2, y + ffn(y))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_block_matches_hand_written_reference(norm_first, causal):
    torch.manual_seed(1)
    block = TransformerBlock(12, 3, 20, norm_first=norm_first).double()
    _random_layer_norms(block)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    mask = causal_mask(5) if causal else None
    out, weights = block(x, mask)
    torch.testing.assert_close(out, _reference_block(block, x, mask))
    assert weights.shape == (2, 3, 5, 5)
    if causal:
        assert torch.all(weights.triu(1) == 0)


@settings(max_examples=20, deadline=None)
@given(
    heads=st.sampled_from([1, 2, 4]),
    per_head=st.integers(1, 4),
    d_ff=st.integers(1, 24),
    batch=st.integers(1, 3),
    T=st.integers(1, 7),
    norm_first=st.booleans(),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_block_matches_torch_encoder_layer(heads, per_head, d_ff, batch, T, norm_first, causal, seed):
    torch.manual_seed(seed)
    d = heads * per_head
    block = TransformerBlock(d, heads, d_ff, norm_first=norm_first).double()
    _random_layer_norms(block)
    ref = to_torch_encoder_layer(block)
    x = torch.randn(batch, T, d, dtype=torch.float64)
    mask = causal_mask(T) if causal else None
    out, _ = block(x, mask)
    ref_out = ref(x, src_mask=None if mask is None else ~mask)  # torch: True = blocked
    torch.testing.assert_close(out, ref_out)


def test_block_padding_mask_matches_torch_key_padding_mask():
    torch.manual_seed(2)
    block = TransformerBlock(8, 2, 16).double()
    ref = to_torch_encoder_layer(block)
    tokens = torch.tensor([[5, 6, 7, 0], [5, 6, 0, 0]])
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    out, weights = block(x, padding_mask(tokens, 0))
    ref_out = ref(x, src_key_padding_mask=tokens == 0)
    real = tokens != 0  # torch's fast path may leave padded query rows as anything: compare real tokens
    torch.testing.assert_close(out[real], ref_out[real])
    assert torch.all(weights[1, :, :, 2:] == 0)


def test_parameter_count_formula():
    for d, h, d_ff in [(512, 8, 2048), (64, 4, 256), (6, 2, 5)]:
        block = TransformerBlock(d, h, d_ff)
        count = sum(p.numel() for p in block.parameters())
        assert count == 4 * d * d + 2 * d * d_ff + 9 * d + d_ff
        ref = nn.TransformerEncoderLayer(d, h, d_ff, batch_first=True)
        assert count == sum(p.numel() for p in ref.parameters())
    # Worked by hand: 4*512^2 + 2*512*2048 + 9*512 + 2048 = 1,048,576 + 2,097,152 + 4,608 + 2,048
    assert sum(p.numel() for p in TransformerBlock(512, 8, 2048).parameters()) == 3_152_384


def test_block_without_positions_is_permutation_equivariant_and_causal_mask_breaks_it():
    torch.manual_seed(3)
    block = TransformerBlock(8, 2, 16).double()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    perm = torch.tensor([3, 0, 4, 1, 2])
    out, weights = block(x)
    out_p, weights_p = block(x[:, perm])
    torch.testing.assert_close(out_p, out[:, perm])
    torch.testing.assert_close(weights_p, weights[:, :, perm][:, :, :, perm])
    # With positions added, the same permutation changes the outputs.
    pe = sinusoidal_positional_encoding(5, 8, dtype=torch.float64)
    out_pe, _ = block(x + pe)
    out_pe_p, _ = block(x[:, perm] + pe)
    assert not torch.allclose(out_pe_p, out_pe[:, perm])
    # A causal mask refers to positions too: equivariance is gone even without encodings.
    mask = causal_mask(5)
    out_c, _ = block(x, mask)
    out_c_p, _ = block(x[:, perm], mask)
    assert not torch.allclose(out_c_p, out_c[:, perm])


def test_block_uses_the_course_multihead_and_rejects_bad_input():
    block = TransformerBlock(8, 2, 16)
    assert isinstance(block.attn, MultiHeadAttention)
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        block(torch.randn(4, 8))
    with pytest.raises(ValueError, match=r"\(B, T, 8\)"):
        block(torch.randn(1, 4, 6))
    with pytest.raises(ValueError, match="divisible"):
        TransformerBlock(10, 3, 16)
    with pytest.raises(ValueError):
        TransformerBlock(8, 2, 0)


# --- Sinusoidal encodings in low precision, held against a float64 NumPy oracle (issue 11) -------------


def _sinusoidal_oracle(num_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    p = np.arange(num_positions, dtype=np.float64)[:, None]
    angles = p * base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    out = np.empty((num_positions, d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out


# float32 angles p * w lose about p * 6e-8 (1.2e-4 at p = 2048); float16 and bfloat16 are computed in float32
# and rounded once at the end (half a unit in the last place: 5e-4 and 4e-3 near 1).
@pytest.mark.parametrize("dtype, atol", [(torch.float64, 1e-12), (torch.float32, 1.5e-4), (torch.float16, 1e-3), (torch.bfloat16, 4.5e-3)])
def test_sinusoidal_encoding_in_every_dtype_matches_the_float64_oracle(dtype, atol):
    pe = sinusoidal_positional_encoding(2048, 16, dtype=dtype)
    assert pe.dtype == dtype
    expected = torch.from_numpy(_sinusoidal_oracle(2048, 16))
    assert (pe.double() - expected).abs().max().item() < atol


def test_bfloat16_positions_256_and_257_get_different_encodings():
    pe = sinusoidal_positional_encoding(300, 8, dtype=torch.bfloat16)
    assert not torch.equal(pe[256], pe[257])
    x = torch.zeros(1, 300, 8, dtype=torch.bfloat16)
    out = SinusoidalPositionalEncoding(8)(x)
    assert out.dtype == torch.bfloat16 and torch.equal(out[0], pe)


@pytest.mark.parametrize("norm_first", [False, True])
def test_block_passes_attention_dropout_through(norm_first):
    torch.manual_seed(0)
    block = TransformerBlock(8, 2, 16, norm_first=norm_first, dropout=0.2).double()
    assert block.attn.dropout == 0.2
    layer = to_torch_encoder_layer(block.eval()).eval()
    assert layer.self_attn.dropout == 0.2
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(block(x, causal_mask(5))[0], layer(x, src_mask=~causal_mask(5)))
    block.train()
    (_, w1), (_, w2) = block(x), block(x)
    assert not torch.equal(w1, w2)  # fresh dropout draws in training mode
