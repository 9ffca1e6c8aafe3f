"""course_utils.core.metrics.strongest_source: the reference of notebook 06's task 3."""

import pytest
import torch

from course_utils.core.metrics import strongest_source


def test_the_head_average_decides_not_one_head():
    # One item, 2 heads, 1 query, 3 keys: head 0 prefers key 0 a little, head 1 prefers key 2 strongly.
    w = torch.tensor([[[[0.40, 0.35, 0.25]], [[0.05, 0.05, 0.90]]]])
    assert strongest_source(w).tolist() == [[2]]  # mean: 0.225, 0.2, 0.575
    assert w[0, 0].argmax(-1).tolist() == [0]  # one head alone would say 0


def test_shape_dtype_and_every_query_of_every_item():
    g = torch.Generator().manual_seed(0)
    w = torch.softmax(torch.randn(3, 4, 5, 7, generator=g), dim=-1)  # (B, h, n, m), n != m
    got = strongest_source(w)
    assert got.shape == (3, 5) and got.dtype == torch.long
    for b in range(3):
        for i in range(5):
            assert got[b, i] == max(range(7), key=lambda j: float(w[b, :, i, j].mean()))


@pytest.mark.parametrize("bad, error", [([[0.5, 0.5]], TypeError), (torch.ones(2, 3, 4), ValueError),
                                        (torch.ones(1, 1, 2, 2, dtype=torch.long), ValueError)])
def test_bad_input_is_named(bad, error):
    with pytest.raises(error, match="weights"):
        strongest_source(bad)
