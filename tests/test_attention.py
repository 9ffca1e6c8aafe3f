"""scaled_dot_product_attention, masks and scoring functions, checked against PyTorch and by hand."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (
    AdditiveScore,
    MultiplicativeScore,
    causal_mask,
    dot_scores,
    padding_mask,
    scaled_dot_product_attention,
    scaled_dot_scores,
)

shapes = st.fixed_dictionaries(
    {
        "lead": st.lists(st.integers(1, 3), min_size=0, max_size=2),
        "n": st.integers(1, 7),
        "m": st.integers(1, 7),
        "d_k": st.integers(1, 9),
        "d_v": st.integers(1, 9),
        "seed": st.integers(0, 2**16),
    }
)


def _qkv(s, dtype=torch.float64):
    g = torch.Generator().manual_seed(s["seed"])
    lead = tuple(s["lead"])
    Q = torch.randn(*lead, s["n"], s["d_k"], generator=g, dtype=dtype)
    K = torch.randn(*lead, s["m"], s["d_k"], generator=g, dtype=dtype)
    V = torch.randn(*lead, s["m"], s["d_v"], generator=g, dtype=dtype)
    return Q, K, V, g


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_matches_torch_without_mask(s):
    Q, K, V, _ = _qkv(s)
    out, weights = scaled_dot_product_attention(Q, K, V)
    assert out.shape == (*s["lead"], s["n"], s["d_v"])
    assert weights.shape == (*s["lead"], s["n"], s["m"])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V))
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=weights.dtype))


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_matches_torch_with_random_bool_mask(s):
    Q, K, V, g = _qkv(s)
    mask = torch.rand(s["n"], s["m"], generator=g) < 0.6
    out, weights = scaled_dot_product_attention(Q, K, V, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))
    assert torch.all(weights[..., ~mask] == 0)
    assert not torch.isnan(out).any()


def test_matches_torch_float32_causal_batch_heads():
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(3, 4, 6, 8, generator=g) for _ in range(3))
    out, _ = scaled_dot_product_attention(Q, K, V, causal_mask(6))
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)


def test_hand_computed_example():
    # One query, two keys: scores [1, 0] / sqrt(2); softmax by hand.
    Q = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    K = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    V = torch.tensor([[10.0], [20.0]], dtype=torch.float64)
    a = math.exp(1 / math.sqrt(2))
    w0, w1 = a / (a + 1), 1 / (a + 1)
    out, weights = scaled_dot_product_attention(Q, K, V)
    torch.testing.assert_close(weights, torch.tensor([[w0, w1]], dtype=torch.float64))
    torch.testing.assert_close(out, torch.tensor([[10 * w0 + 20 * w1]], dtype=torch.float64))


def test_fully_masked_row_gives_zeros_like_torch_and_finite_gradients():
    g = torch.Generator().manual_seed(1)
    Q = torch.randn(2, 3, 4, generator=g, requires_grad=True)
    K = torch.randn(2, 5, 4, generator=g)
    V = torch.randn(2, 5, 6, generator=g)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False  # query 1 may attend to nothing
    out, weights = scaled_dot_product_attention(Q, K, V, mask)
    assert torch.all(weights[:, 1] == 0) and torch.all(out[:, 1] == 0)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))
    out.sum().backward()
    assert torch.isfinite(Q.grad).all()


def test_integer_mask_means_one_may_attend():
    g = torch.Generator().manual_seed(2)
    Q, K, V = (torch.randn(4, 3, generator=g) for _ in range(3))
    as_int = causal_mask(4).long()
    out_int, _ = scaled_dot_product_attention(Q, K, V, as_int)
    out_bool, _ = scaled_dot_product_attention(Q, K, V, causal_mask(4))
    torch.testing.assert_close(out_int, out_bool)


def test_causal_mask_values():
    expected = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(3), expected)
    assert causal_mask(1).dtype == torch.bool


def test_causal_mask_blocks_the_future():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 5, 4, generator=g)
    out, weights = scaled_dot_product_attention(x, x, x, causal_mask(5))
    assert torch.all(weights.triu(1) == 0)
    x2 = x.clone()
    x2[0, 4] += 10.0  # change the last token only
    out2, _ = scaled_dot_product_attention(x2, x2, x2, causal_mask(5))
    torch.testing.assert_close(out[0, :4], out2[0, :4])


def test_padding_mask_and_its_effect():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 0, 0, 0]])
    mask = padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 4)
    assert torch.equal(mask[:, 0], torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]], dtype=torch.bool))
    g = torch.Generator().manual_seed(4)
    Q, K, V = torch.randn(2, 3, 4, generator=g), torch.randn(2, 4, 4, generator=g), torch.randn(2, 4, 2, generator=g)
    out, weights = scaled_dot_product_attention(Q, K, V, mask)
    assert torch.all(weights[1, :, 1:] == 0)
    # the second sequence has one real key: every query copies its value
    torch.testing.assert_close(out[1], V[1, :1].expand(3, 2))


def test_scoring_functions_by_hand():
    g = torch.Generator().manual_seed(5)
    Q, K = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    torch.testing.assert_close(dot_scores(Q, K), torch.einsum("bnd,bmd->bnm", Q, K))
    torch.testing.assert_close(scaled_dot_scores(Q, K), torch.einsum("bnd,bmd->bnm", Q, K) / 2.0)

    add = AdditiveScore(4, 4, 6)
    expected = torch.empty(2, 3, 5)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                hidden = torch.tanh(add.W_q.weight @ Q[b, i] + add.W_k.weight @ K[b, j])
                expected[b, i, j] = add.v.weight[0] @ hidden
    torch.testing.assert_close(add(Q, K), expected)

    mul = MultiplicativeScore(4, 3)
    K3 = torch.randn(2, 5, 3, generator=g)
    expected = torch.einsum("bnd,de,bme->bnm", Q, mul.W, K3)
    torch.testing.assert_close(mul(Q, K3), expected)


def test_additive_score_differs_between_queries():
    torch.manual_seed(0)
    add = AdditiveScore(3, 3, 8)
    Q, K = torch.randn(4, 3), torch.randn(6, 3)
    scores = add(Q, K)
    assert scores.shape == (4, 6)
    assert not torch.allclose(scores[0], scores[1])


# --- bad input gets a clear ValueError naming the shapes ---


def test_feature_size_mismatch():
    with pytest.raises(ValueError, match=r"Q has shape \(2, 3, 4\).*K has shape \(2, 5, 6\)"):
        scaled_dot_product_attention(torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 4))


def test_key_value_length_mismatch():
    with pytest.raises(ValueError, match=r"K has shape \(5, 4\).*V has shape \(6, 4\)"):
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(5, 4), torch.randn(6, 4))


def test_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not broadcast.*\(3, 5\)"):
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 4), torch.ones(3, 4, dtype=torch.bool))


def test_mask_that_would_grow_the_output_is_refused():
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 4), torch.ones(2, 3, 5, dtype=torch.bool))


def test_float_mask_is_refused():
    with pytest.raises(ValueError, match="bool"):
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), torch.ones(3, 3))


def test_int_mask_with_values_other_than_0_and_1_is_refused():
    inverted = ~causal_mask(3).long()  # -1 / -2: every entry would count as "attend"
    with pytest.raises(ValueError, match=r"only 0 and 1.*\[-2, -1\]"):
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), inverted)


def test_batch_dims_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"do not broadcast.*Q \(2, 3, 4\)"):
        scaled_dot_product_attention(torch.randn(2, 3, 4), torch.randn(3, 5, 4), torch.randn(3, 5, 4))


def test_one_dimensional_input():
    with pytest.raises(ValueError, match=r"at least 2 dimensions.*\(4,\)"):
        scaled_dot_product_attention(torch.randn(4), torch.randn(3, 4), torch.randn(3, 4))


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_non_positive_sizes(bad):
    with pytest.raises(ValueError, match="positive integer"):
        causal_mask(bad)
    with pytest.raises(ValueError, match="positive integer"):
        AdditiveScore(4, bad, 4)
    with pytest.raises(ValueError, match="positive integer"):
        MultiplicativeScore(bad, 4)


def test_padding_mask_wants_2d_tokens():
    with pytest.raises(ValueError, match=r"\(B, m\).*\(4,\)"):
        padding_mask(torch.tensor([1, 2, 3, 0]), 0)


def test_scoring_modules_check_feature_sizes():
    with pytest.raises(ValueError, match=r"K must have shape \(\.\.\., length, 4\), got shape \(5, 3\)"):
        AdditiveScore(4, 4, 8)(torch.randn(2, 4), torch.randn(5, 3))
    with pytest.raises(ValueError, match=r"Q must have shape"):
        MultiplicativeScore(4, 3)(torch.randn(2, 5), torch.randn(5, 3))


# --- the softmax written over the scores (no autograd), and the gradient path (issue 26) -----------------


def test_no_grad_and_grad_paths_give_the_same_weights_and_gradients_match_torch():
    g = torch.Generator().manual_seed(26)
    Q, K, V = (torch.randn(2, 3, 6, 5, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(6, 6, generator=g) > 0.3
    mask[2] = False  # a fully masked row: zeros on both paths
    plain_out, plain_w = scaled_dot_product_attention(Q, K, V, mask)  # no input needs a gradient: in place
    leaves = [t.clone().requires_grad_() for t in (Q, K, V)]
    out, w = scaled_dot_product_attention(*leaves, mask)
    assert torch.equal(out.detach(), plain_out) and torch.equal(w.detach(), plain_w)
    assert torch.equal(plain_w[..., 2, :], torch.zeros_like(plain_w[..., 2, :]))
    torch_leaves = [t.clone().requires_grad_() for t in (Q, K, V)]
    want = F.scaled_dot_product_attention(*torch_leaves, attn_mask=mask).nan_to_num(0.0)
    upstream = torch.randn(out.shape, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad((out * upstream).sum(), leaves)
    want_grads = torch.autograd.grad((want * upstream).sum(), torch_leaves)
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(grads, want_grads))
    with torch.no_grad():
        assert torch.equal(scaled_dot_product_attention(*leaves, mask)[1], plain_w)


def test_attention_never_changes_its_inputs():
    g = torch.Generator().manual_seed(3)
    Q, K, V = (torch.randn(1, 4, 8, generator=g) for _ in range(3))
    mask = torch.tensor([1, 1, 0, 1], dtype=torch.int64)
    copies = [t.clone() for t in (Q, K, V, mask)]
    scaled_dot_product_attention(Q, K, V, mask)
    assert all(torch.equal(a, b) for a, b in zip((Q, K, V, mask), copies))


# --- grouped-query attention (notebook 15) ----------------------------------------------------------------

from course_utils.core.attention import grouped_query_attention  # noqa: E402


@pytest.mark.parametrize("h, h_kv, n, m", [(8, 2, 5, 7), (4, 1, 6, 6), (3, 3, 4, 9), (6, 2, 1, 5)])
def test_grouped_query_attention_equals_torch_enable_gqa(h, h_kv, n, m):
    g = torch.Generator().manual_seed(h * 10 + h_kv)
    Q = torch.randn(2, h, n, 8, generator=g, dtype=torch.float64)
    K, V = torch.randn(2, h_kv, m, 8, generator=g, dtype=torch.float64), torch.randn(2, h_kv, m, 3, generator=g, dtype=torch.float64)
    out, weights = grouped_query_attention(Q, K, V)
    assert out.shape == (2, h, n, 3) and weights.shape == (2, h, n, m)
    assert torch.allclose(out, F.scaled_dot_product_attention(Q, K, V, enable_gqa=True), atol=1e-12)
    mask = torch.rand(2, 1, n, m, generator=g) > 0.4
    mask[..., 0] = True
    want = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, enable_gqa=True)
    assert torch.allclose(grouped_query_attention(Q, K, V, mask)[0], want, atol=1e-12)
    # each key/value head j serves query heads j*g .. j*g + g - 1: one of them alone gives the same rows
    group = h // h_kv
    for head in range(h):
        alone, _ = scaled_dot_product_attention(Q[:, head], K[:, head // group], V[:, head // group])
        assert torch.allclose(out[:, head], alone, atol=1e-12)


def test_grouped_query_attention_refuses_heads_that_do_not_divide():
    Q, K = torch.randn(1, 6, 3, 4), torch.randn(1, 4, 3, 4)
    with pytest.raises(ValueError, match=r"multiple.*Q \(1, 6, 3, 4\) \(h=6\), K \(1, 4, 3, 4\)"):
        grouped_query_attention(Q, K, K)
    with pytest.raises(ValueError, match="same number h_kv"):
        grouped_query_attention(Q, torch.randn(1, 2, 3, 4), torch.randn(1, 3, 3, 4))
    with pytest.raises(ValueError, match=r"K must have 4 dimension\(s\) \(B, heads, length, features\)"):
        grouped_query_attention(Q, torch.randn(2, 3, 4), torch.randn(1, 2, 3, 4))
    with pytest.raises(TypeError, match="V must be a torch.Tensor"):
        grouped_query_attention(Q, torch.randn(1, 2, 3, 4), None)


def test_broadcast_shape_agrees_with_pytorch():
    from course_utils.core.validation import broadcast_shape

    for shapes in [((2, 3), (1, 3)), ((5, 1, 4), (3, 1)), ((), (2,)), ((2, 1), (1, 2), (1, 1, 1)), ((0, 1), (3,))]:
        assert broadcast_shape(*shapes) == torch.broadcast_shapes(*shapes)
    for shapes in [((2, 3), (3, 3)), ((4,), (5,)), ((2, 0), (3,))]:
        with pytest.raises(RuntimeError):
            broadcast_shape(*shapes)
