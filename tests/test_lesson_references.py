"""The course's references for the lesson tasks of 02 and 03 (``offset_share``, ``split_heads``): what the
lessons go on with after a task, so they must be right, and refuse bad input."""

import numpy as np
import pytest
import torch

from course_utils import MultiHeadAttention
from course_utils.core.metrics import offset_share
from course_utils.core.multihead import split_heads


def test_offset_share_averages_over_the_queries_that_have_the_key():
    w = torch.arange(12.0).reshape(3, 4)  # n = 3 queries, m = 4 keys
    assert offset_share(w, 0).item() == pytest.approx((0 + 5 + 10) / 3)
    assert offset_share(w, -1).item() == pytest.approx((4 + 9) / 2)  # query 0 has no previous key
    assert offset_share(w, 3).item() == pytest.approx(3.0)  # only query 0 has key 3
    assert offset_share(w, -2).item() == pytest.approx(8.0)  # only query 2 has key 0
    tall = torch.arange(12.0).reshape(4, 3)  # n > m: query 3 has no key on the diagonal
    assert offset_share(tall, 0).item() == pytest.approx((0 + 4 + 8) / 3)
    assert offset_share(tall, np.int64(1)).item() == pytest.approx((1 + 5) / 2)


def test_offset_share_of_a_stripe_and_of_a_batch():
    stripe = torch.zeros(5, 5)
    stripe[1:, :-1] = torch.eye(4)
    stripe[0] = 0.2
    assert offset_share(stripe, -1).item() == 1.0 and offset_share(stripe, 0).item() == pytest.approx(0.2 / 5)
    batch = torch.stack([stripe, torch.eye(5)])
    torch.testing.assert_close(offset_share(batch, 0), torch.tensor([0.04, 1.0]))


@pytest.mark.parametrize(("weights", "offset", "error", "match"), [
    (torch.ones(3, 4), 4, ValueError, "from -2 to 3"),
    (torch.ones(3, 4), -3, ValueError, "from -2 to 3"),
    (torch.ones(3, 4), 1.0, ValueError, "integer"),
    (torch.ones(3, 4), True, ValueError, "integer"),
    (torch.ones(4), 0, ValueError, "at least 2"),
    (torch.ones(3, 4, dtype=torch.long), 0, ValueError, "floating-point"),
    (np.ones((3, 4)), 0, TypeError, "torch.Tensor"),
])
def test_offset_share_refuses_bad_input(weights, offset, error, match):
    with pytest.raises(error, match=match):
        offset_share(weights, offset)


def test_split_heads_cuts_contiguous_feature_slices():
    x = torch.randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    for i in range(3):
        assert torch.equal(heads[:, i], x[:, :, 4 * i : 4 * (i + 1)])
    assert torch.equal(heads.transpose(1, 2).reshape(2, 5, 12), x)  # the merge undoes it
    assert torch.equal(split_heads(x.transpose(0, 1).contiguous().transpose(0, 1), 3), heads)  # not contiguous
    assert split_heads(x, np.int64(12)).shape == (2, 12, 5, 1)


def test_split_heads_is_what_the_module_does():
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(3, 7, 16)
    assert torch.equal(split_heads(x, 4), mha.split_heads(x))


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: split_heads(torch.ones(2, 5, 12), 5), ValueError, "divisible by num_heads = 5"),
    (lambda: split_heads(torch.ones(2, 5, 12), 0), ValueError, "positive integer"),
    (lambda: split_heads(torch.ones(2, 5, 12), 2.0), ValueError, "positive integer"),
    (lambda: split_heads(torch.ones(5, 12), 2), ValueError, "3 dimension"),
    (lambda: split_heads(np.ones((2, 5, 12)), 2), TypeError, "torch.Tensor"),
])
def test_split_heads_refuses_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
