"""online_softmax and tiled_attention against PyTorch's softmax and F.scaled_dot_product_attention."""

import math

import pytest
import torch
import torch.nn.functional as F

from course_utils.core.tiled_attention import online_softmax, tiled_attention


@pytest.mark.parametrize("block_size", [1, 3, 7, 64])
def test_online_softmax_equals_torch_softmax(block_size):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 17, generator=g) * 20
    assert torch.allclose(online_softmax(x, block_size), torch.softmax(x, -1), atol=1e-6)


def test_online_softmax_large_scores_and_minus_inf():
    x = torch.tensor([[1000.0, 999.0, -math.inf, 998.0], [-math.inf] * 4])
    got = online_softmax(x, 1)
    assert torch.allclose(got[0], torch.softmax(x[0], -1), atol=1e-6)
    assert torch.equal(got[1], torch.zeros(4))  # a row with nothing to attend to: zeros, not NaN


def test_online_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="x must be a floating-point tensor"):  # a wrong dtype: ValueError
        online_softmax(torch.arange(4))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        online_softmax([1.0, 2.0])
    with pytest.raises(ValueError, match="block_size"):
        online_softmax(torch.randn(4), 0)


@pytest.mark.parametrize("n, m, block, qblock", [(1, 1, 1, None), (5, 9, 4, None), (9, 5, 2, 4), (64, 300, 128, 16), (33, 33, 7, 5)])
def test_tiled_attention_equals_sdpa(n, m, block, qblock):
    g = torch.Generator().manual_seed(n * 1000 + m)
    Q, K, V = torch.randn(2, 3, n, 8, generator=g), torch.randn(2, 3, m, 8, generator=g), torch.randn(2, 3, m, 5, generator=g)
    got = tiled_attention(Q, K, V, block_size=block, query_block_size=qblock)
    assert torch.allclose(got, F.scaled_dot_product_attention(Q, K, V), atol=1e-5)


@pytest.mark.parametrize("n, m, block, qblock", [(6, 6, 2, None), (6, 6, 4, 3), (4, 10, 3, 2), (10, 4, 3, 3)])
def test_tiled_attention_causal_equals_sdpa_is_causal(n, m, block, qblock):
    g = torch.Generator().manual_seed(7)
    Q, K, V = torch.randn(1, 2, n, 4, generator=g), torch.randn(1, 2, m, 4, generator=g), torch.randn(1, 2, m, 4, generator=g)
    want = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    got = tiled_attention(Q, K, V, causal=True, block_size=block, query_block_size=qblock)
    assert torch.allclose(got, want, atol=1e-5)


def test_tiled_attention_with_mask_and_fully_masked_row():
    g = torch.Generator().manual_seed(3)
    Q, K, V = torch.randn(2, 4, 6, generator=g), torch.randn(2, 7, 6, generator=g), torch.randn(2, 7, 3, generator=g)
    mask = torch.rand(2, 4, 7, generator=g) > 0.4
    mask[0, 1] = False  # query 1 of batch 0 may attend nothing: zeros, as in scaled_dot_product_attention
    mask[1, 2] = True
    got = tiled_attention(Q, K, V, mask, block_size=3)
    want = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask).nan_to_num(0.0)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.equal(got[0, 1], torch.zeros(3))
    padding = torch.tensor([True, True, True, True, False, False, True])[None, None, :]  # (1, 1, m) broadcast
    got = tiled_attention(Q, K, V, padding, block_size=2, query_block_size=3)
    assert torch.allclose(got, F.scaled_dot_product_attention(Q, K, V, attn_mask=padding), atol=1e-5)


def test_tiled_attention_follows_dtype_and_broadcasts_leading_dims():
    g = torch.Generator().manual_seed(4)
    Q = torch.randn(3, 1, 5, 4, generator=g, dtype=torch.float64)
    K, V = torch.randn(1, 2, 6, 4, generator=g, dtype=torch.float64), torch.randn(1, 2, 6, 4, generator=g, dtype=torch.float64)
    got = tiled_attention(Q, K, V, block_size=4)
    assert got.dtype == torch.float64 and got.shape == (3, 2, 5, 4)
    assert torch.allclose(got, F.scaled_dot_product_attention(Q, K, V), atol=1e-12)


def test_tiled_attention_rejects_bad_input():
    Q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match="same feature size"):
        tiled_attention(Q, torch.randn(2, 5, 3), torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match="dtype"):  # the package's rule: a wrong dtype is a ValueError
        tiled_attention(Q, Q.double(), Q)
    with pytest.raises(ValueError, match="block_size"):
        tiled_attention(Q, Q, Q, block_size=0)
    with pytest.raises(ValueError, match="query_block_size"):
        tiled_attention(Q, Q, Q, query_block_size=-1)
    with pytest.raises(ValueError, match="broadcast"):
        tiled_attention(Q, Q, Q, torch.ones(5, 5, dtype=torch.bool))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_tiled_attention_on_gpu():
    Q, K, V = (torch.randn(1, 2, 40, 8, device="cuda") for _ in range(3))
    got = tiled_attention(Q, K, V, causal=True, block_size=16, query_block_size=8)
    assert got.device.type == "cuda"
    assert torch.allclose(got, F.scaled_dot_product_attention(Q, K, V, is_causal=True), atol=1e-4)


# --- peak_tensor_bytes: the exact count notebook 16 prints ---------------------------------------

from course_utils.helpers.live_memory import peak_tensor_bytes  # noqa: E402
from course_utils.helpers.timing import score_matrix_bytes  # noqa: E402


def test_peak_tensor_bytes_counts_live_tensors_and_not_views():
    x = torch.randn(1000)

    def two_alive():
        a = x * 2  # 4,000 bytes
        b = a + 1  # 4,000 bytes, a still alive
        return b.view(10, 100)  # a view: free

    def one_at_a_time():
        for _ in range(3):
            _ = x * 2  # each freed before the next
        return None

    assert peak_tensor_bytes(two_alive) == 8000
    assert peak_tensor_bytes(one_at_a_time) == 4000
    assert peak_tensor_bytes(lambda: None) == 0
    with pytest.raises(TypeError, match="function"):
        peak_tensor_bytes(3)


def test_peak_tensor_bytes_counts_only_what_the_call_allocates():
    """Issue 24: a view or slice of an input allocates nothing, whatever the input's size."""
    x = torch.randn(1000, 1000)  # 4 MB made before the call
    assert peak_tensor_bytes(lambda: x.view(100, 10_000)) == 0
    assert peak_tensor_bytes(lambda: x[:10]) == 0
    assert peak_tensor_bytes(lambda: x.t()) == 0
    assert peak_tensor_bytes(lambda: x[:10].t().view(-1, 10)[:3]) == 0  # views of views
    assert peak_tensor_bytes(lambda: x[:10] * 2) == 10 * 1000 * 4  # a real allocation: 10 rows of float32
    assert peak_tensor_bytes(lambda: x[:10].clone()) == 40_000
    assert peak_tensor_bytes(lambda: x.t().contiguous()) == 4_000_000  # a copy, not a view
    assert peak_tensor_bytes(lambda: x.mul_(1.0)) == 0  # in place: no new storage
    out = torch.empty(10, 1000)
    assert peak_tensor_bytes(lambda: torch.mul(x[:10], 2, out=out)) == 0  # written into a tensor that exists

    def sliced_inside():
        y = x[:100] + 1  # 400 kB, counted once
        return y[:5], y.view(-1), y.t()  # views of what the call made: not counted again

    assert peak_tensor_bytes(sliced_inside) == 400_000


def test_tiled_attention_counts_its_blocks_not_its_inputs():
    """K and V are only sliced: the peak is the same whether they are views into a 100x larger buffer or not."""
    B, h, T, d = 1, 2, 256, 16
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(B, h, T, d, generator=g) for _ in range(3))
    big = torch.randn(2, B, h, 100 * T, d, generator=g)
    big[0, :, :, :T], big[1, :, :, :T] = K, V
    K_view, V_view = big[0, :, :, :T], big[1, :, :, :T]  # the same numbers, in a 6.5 MB storage
    alone = peak_tensor_bytes(lambda: tiled_attention(Q, K, V, block_size=64))
    assert peak_tensor_bytes(lambda: tiled_attention(Q, K_view, V_view, block_size=64)) == alone
    assert alone < big.nbytes / 10
    assert peak_tensor_bytes(lambda: (K[..., :64, :], V[..., 64:, :])) == 0


def test_tiled_attention_holds_far_less_than_the_score_matrix():
    Q, K, V = (torch.randn(1, 2, 512, 16) for _ in range(3))
    one = score_matrix_bytes(1, 2, 512)

    def scratch():
        s = Q @ K.transpose(-2, -1)
        s = s / 4.0
        return torch.softmax(s, dim=-1) @ V

    assert peak_tensor_bytes(scratch) >= 2 * one
    assert peak_tensor_bytes(lambda: tiled_attention(Q, K, V, block_size=32, query_block_size=64)) < 0.25 * one


def test_quiz_16_numbers():
    import json

    from course_utils.models.data_files import data_path

    bank = json.loads(data_path("quizzes.json").read_text(encoding="utf-8"))["16"]
    l = 1.0
    m = 2.0
    for x in (5.0, 1.0, 7.0):
        m_new = max(m, x)
        l, m = l * math.exp(m - m_new) + math.exp(x - m_new), m_new
    assert f"{l:.4f}" == "1.1446"
    q = next(q for q in bank if "x = 9 arrives" in q["prompt"])
    assert f"{l * math.exp(-2) + 1:.4f}" in q["options"][q["answer"]]
    q = next(q for q in bank if "largest block of scores" in q["prompt"])
    assert f"{1 * 8 * 2048 * 128 * 4 / 1e6:.4g} MB" in q["options"][q["answer"]]
