"""The checker of notebook 03b `torch_attn_mask`: held-out wrong answers (none accepted, none called "a bug in the
checker", no hint naming a mistake that was not made) and every valid answer the task allows."""


import pytest
import torch
from checker_testing import all_are as _all
from checker_testing import results_over_seeds as _run
from torch import nn

from course_utils import MultiHeadAttention, causal_mask, to_torch_multihead
from course_utils.helpers import checkers
from course_utils.helpers.checkers.pytorch_multihead import (
    _cases,
    check_torch_attn_mask,
)

# --------------------------------------------------------------------------- 03b torch_attn_mask


def _float_mask(dtype):
    def fn(mask, h):
        blocked = (~mask).repeat_interleave(h, 0) if mask.dim() == 3 else ~mask
        return torch.zeros(blocked.shape, dtype=dtype).masked_fill(blocked, float("-inf"))
    return fn


def test_torch_attn_mask_accepts_what_multihead_attention_accepts(capsys):
    mha, x = nn.MultiheadAttention(8, 2, batch_first=True), torch.randn(1, 5, 8)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    for dtype in (torch.float32, torch.float64, torch.float16):
        accepted = _run(checkers.check_torch_attn_mask, _float_mask(dtype), capsys)[0].status == "correct"
        try:
            mha(x, x, x, attn_mask=_float_mask(dtype)(mask, 2))
            works = True
        except RuntimeError:
            works = False
        assert accepted == works, dtype
    _all(_run(checkers.check_torch_attn_mask, _float_mask(torch.float64), capsys), "wrong", "float64", "bool")


def test_torch_attn_mask_on_another_device_is_named(capsys):
    fn = lambda mask, h: ((~mask).repeat_interleave(h, 0) if mask.dim() == 3 else ~mask).to("meta")  # noqa: E731
    _all(_run(checkers.check_torch_attn_mask, fn, capsys), "wrong", "device 'meta'")


# ------------------------------------------------------------------ the first bank of right and wrong answers


TEN_SEEDS = range(10)


def interleave(mask, num_heads):
    blocked = ~mask
    return blocked.repeat_interleave(num_heads, dim=0) if mask.dim() == 3 else blocked


def expand_reshape(mask, num_heads):
    if mask.dim() == 2:
        return mask.logical_not()
    B, n, m = mask.shape
    return (mask == 0).unsqueeze(1).expand(B, num_heads, n, m).reshape(B * num_heads, n, m)


def additive(mask, num_heads):  # a float mask: 0 keeps a key, -inf blocks it (nn.MultiheadAttention adds it)
    blocked = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    return blocked.repeat_interleave(num_heads, dim=0) if mask.dim() == 3 else blocked


def loop(mask, num_heads):
    if mask.dim() == 2:
        return torch.logical_not(mask)
    return torch.stack([~mask[b] for b in range(mask.shape[0]) for _ in range(num_heads)])


@pytest.mark.parametrize("fn", [interleave, expand_reshape, additive, loop])
def test_right_answers_pass(capsys, fn):
    for seed in TEN_SEEDS:
        result = check_torch_attn_mask(fn, seed=seed)
        out = capsys.readouterr().out
        assert result.status == "correct", (seed, out)
        assert out.startswith("[correct] torch_attn_mask")


def test_a_right_answer_gives_nn_multiheadattention_our_attention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    torch_mha = to_torch_multihead(mha)
    tokens = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 1, 2, 3]])
    mask = causal_mask(5) & (tokens != 0).unsqueeze(1)  # (2, 5, 5), a different mask per sequence
    x = torch.randn(2, 5, 16)
    ours, _ = mha(x, x, x, mask)
    right, _ = torch_mha(x, x, x, attn_mask=interleave(mask, 4))
    wrong_order, _ = torch_mha(x, x, x, attn_mask=(~mask).repeat(4, 1, 1))
    torch.testing.assert_close(right, ours, atol=1e-6, rtol=1e-5)
    assert not torch.allclose(wrong_order, ours, atol=1e-3)  # the order the hint names really matters


def not_inverted(mask, num_heads):
    return mask.repeat_interleave(num_heads, dim=0) if mask.dim() == 3 else mask


def wrong_order(mask, num_heads):
    return (~mask).repeat(num_heads, 1, 1) if mask.dim() == 3 else ~mask


def wrong_order_not_inverted(mask, num_heads):
    return mask.repeat(num_heads, 1, 1) if mask.dim() == 3 else ~mask


def one_copy(mask, num_heads):
    return ~mask


def four_dims(mask, num_heads):
    if mask.dim() == 2:
        return ~mask
    return (~mask).unsqueeze(1).expand(-1, num_heads, -1, -1)


def float_ones(mask, num_heads):
    return interleave(mask, num_heads).float()


def integer(mask, num_heads):
    return interleave(mask, num_heads).long()


def in_place(mask, num_heads):
    blocked = mask.logical_not_()
    return blocked.repeat_interleave(num_heads, dim=0) if mask.dim() == 3 else blocked


def two_d_expanded(mask, num_heads):
    blocked = interleave(mask, num_heads)
    return blocked.unsqueeze(0) if mask.dim() == 2 else blocked


def transposed(mask, num_heads):
    return (~mask).mT.repeat_interleave(num_heads, dim=0) if mask.dim() == 3 else (~mask).T


def diagonal_allowed(mask, num_heads):  # right layout, wrong values
    blocked = interleave(mask, num_heads)
    return blocked & ~torch.eye(*blocked.shape[-2:], dtype=torch.bool)


WRONG = [
    (not_inverted, "not inverted"),
    (wrong_order, "the copies are in the wrong order"),
    (wrong_order_not_inverted, "And invert it"),
    (one_copy, "one copy of each sequence's mask per head"),
    (four_dims, "batch and heads share one axis"),
    (float_ones, "float tensor of 0s and 1s"),
    (integer, "return a bool tensor"),
    (in_place, "changed the mask you passed in"),
    (two_d_expanded, "a 2-D mask stays 2-D"),
    (transposed, "transpose"),
    (diagonal_allowed, "entries differ"),
    (lambda mask, h: (~mask).tolist(), "return a torch.Tensor"),
]


@pytest.mark.parametrize(("fn", "hint"), WRONG, ids=[h for _, h in WRONG])
def test_each_wrong_answer_gets_its_hint(capsys, fn, hint):
    for seed in range(5):
        result = check_torch_attn_mask(fn, seed=seed)
        out = capsys.readouterr().out
        assert result.status == "wrong" and hint in result.hint, (seed, out)
        assert out.startswith("[try again] torch_attn_mask") and result.case, out


def test_the_stub_is_not_yet_and_a_crash_is_the_students(capsys):
    def torch_attn_mask(mask, num_heads):
        raise NotImplementedError("Your turn: replace this line with your code.")

    assert check_torch_attn_mask(torch_attn_mask).status == "not done"
    result = check_torch_attn_mask(lambda mask, h: 1 - mask)  # PyTorch refuses - on bool tensors
    assert result.status == "crashed" and result.case == "a causal mask (5, 5), num_heads=8"
    assert capsys.readouterr().out.count("\n") == 2  # one line per check


def test_the_hidden_cases_make_the_order_of_the_copies_matter():
    for seed in range(50):
        for where, mask, h in _cases(seed):
            assert mask.dtype == torch.bool and mask.any(-1).all(), where  # every query has a key
            if where.startswith("hidden"):
                B = mask.shape[0]
                assert B >= 2 and h >= 2 and not (mask == mask[:1]).all(), where
                assert not torch.equal((~mask).repeat(h, 1, 1), interleave(mask, h))
