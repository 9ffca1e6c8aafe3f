"""course_utils.core.metrics.classify_heads: notebook 07's head labels, measured against uniform attention."""

import numpy as np
import pytest
import torch

from course_utils.core.metrics import classify_heads, mean_attention_distance


def test_uniform_attention_is_global_and_the_previous_key_is_local():
    n = 12
    uniform = torch.full((1, 1, n, n), 1.0 / n)
    previous = torch.diag(torch.ones(n - 1), -1)
    previous[0, 0] = 1.0
    weights = torch.cat([uniform, previous.view(1, 1, n, n)], dim=1)  # (1, 2, n, n): two heads
    assert classify_heads(mean_attention_distance(weights).mean(dim=0), n) == ["global", "local"]


def test_a_ratio_on_a_threshold_is_mixed():
    n = 8  # uniform distance (64 - 1) / 24 = 2.625; 0.5 and 0.75 of it are exact in float32
    distance = torch.tensor([1.3125 - 0.01, 1.3125, 1.96875, 1.96875 + 0.01])
    assert classify_heads(distance, n) == ["local", "mixed", "mixed", "global"]
    assert classify_heads(distance, np.int64(n), local_below=0.0, global_above=1.0) == ["mixed"] * 4


@pytest.mark.parametrize("call, words", [
    (lambda: classify_heads([1.0, 2.0], 8), "distance must be a torch.Tensor"),
    (lambda: classify_heads(torch.tensor([1, 2]), 8), "floating-point"),
    (lambda: classify_heads(torch.ones(2, 2), 8), "1 dimension"),
    (lambda: classify_heads(torch.ones(2), 1), "n >= 2"),
    (lambda: classify_heads(torch.ones(2), 8.0), "n must be a positive integer"),
    (lambda: classify_heads(torch.ones(2), 8, local_below=0.8, global_above=0.5), "local_below <= global_above"),
    (lambda: classify_heads(torch.ones(2), 8, local_below=-0.1), "local_below must be"),
])
def test_bad_input_gets_a_clear_error(call, words):
    with pytest.raises((TypeError, ValueError), match=words):
        call()
