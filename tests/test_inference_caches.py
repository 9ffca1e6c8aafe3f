"""The caches inference engines build (models/inference_caches.py, notebook 15), against recomputation."""

import pytest
import torch

from course_utils.core.attention import scaled_dot_product_attention
from course_utils.core.masks import causal_mask
from course_utils.models.inference_caches import PreallocatedKVCache, SlidingWindowKVCache, sliding_window_mask

CHUNKS = [[12], [5, 1, 1, 4, 1], [1] * 12, [3, 9], [7, 5]]


def _qkv(T: int = 12, seed: int = 0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, T, 4, generator=g, dtype=dtype), torch.randn(2, 3, T, 4, generator=g, dtype=dtype),
            torch.randn(2, 3, T, 5, generator=g, dtype=dtype))  # d_v != d_k


def _feed(cache, q, k, v, chunks):
    out, t = [], 0
    for s in chunks:
        out.append(cache.attend(q[..., t:t + s, :], k[..., t:t + s, :], v[..., t:t + s, :]))
        t += s
    return torch.cat(out, dim=-2)


@pytest.mark.parametrize("chunks", CHUNKS)
def test_preallocated_cache_equals_one_causal_pass(chunks):
    q, k, v = _qkv()
    cache = PreallocatedKVCache(16)
    full, _ = scaled_dot_product_attention(q, k, v, causal_mask(12))
    torch.testing.assert_close(_feed(cache, q, k, v, chunks), full, rtol=0, atol=1e-12)
    assert cache.length == 12 and cache.nbytes == 2 * 3 * 16 * (4 + 5) * 8


@pytest.mark.parametrize("window", [1, 3, 4, 12, 20])
@pytest.mark.parametrize("chunks", CHUNKS)
def test_sliding_window_cache_equals_banded_attention(chunks, window):
    q, k, v = _qkv(seed=window)
    cache = SlidingWindowKVCache(window)
    full, _ = scaled_dot_product_attention(q, k, v, sliding_window_mask(12, window))
    torch.testing.assert_close(_feed(cache, q, k, v, chunks), full, rtol=0, atol=1e-12)
    assert cache.nbytes == 2 * 3 * window * (4 + 5) * 8  # the same bytes after 12 positions as after 1


def test_sliding_window_mask_is_a_band_of_the_causal_mask():
    m = sliding_window_mask(6, 2)
    assert m.tolist()[3] == [False, False, True, True, False, False]
    assert torch.equal(sliding_window_mask(6, 6), causal_mask(6))


def test_caches_refuse_overflow_and_other_shapes():
    q, k, v = _qkv(T=5)
    cache = PreallocatedKVCache(4)
    with pytest.raises(ValueError, match="max_len=4"):
        cache.attend(q, k, v)
    cache = SlidingWindowKVCache(2)
    cache.attend(q[..., :1, :], k[..., :1, :], v[..., :1, :])
    with pytest.raises(ValueError, match="k_new"):
        cache.attend(q[:1, :, :1], k[:1, :, :1], v[:1, :, :1])


def test_caches_follow_the_inputs_dtype():
    q, k, v = _qkv(T=3, dtype=torch.float32)
    for cache in (PreallocatedKVCache(4), SlidingWindowKVCache(2)):
        assert cache.attend(q, k, v).dtype == torch.float32 and cache.keys.dtype == torch.float32
