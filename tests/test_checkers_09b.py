"""The checker of lesson 09b's pre_norm_block: every known-wrong answer is rejected with the hint
that names it, and several correct answers pass."""

import pytest
import torch
from checker_testing import passes_every_draw as _passes_every_draw
from checker_testing import stub_is_not_yet as _stub_is_not_yet
from checker_testing import wrong as _wrong

from course_utils.core.transformer import TransformerBlock
from course_utils.helpers.checkers import check_pre_norm_block

SEEDS = range(10)  # every hidden draw differs; 10 prove what 100 did (each draw covers every size and mask)


def pre_norm(block, x, mask=None):
    h = block.norm1(x)
    attended, weights = block.attn(h, h, h, mask)
    y = x + attended
    return y + block.ffn(block.norm2(y)), weights


def pre_norm_by_hand(block, x, mask=None):  # LayerNorm written out, a list returned: accepted
    def layer_norm(norm, v):
        mu, var = v.mean(-1, keepdim=True), v.var(-1, unbiased=False, keepdim=True)
        return (v - mu) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias

    h = layer_norm(block.norm1, x)
    attended, weights = block.attn(h, h, h, mask=mask)
    y = attended + x
    return [y + block.ffn.linear2(torch.relu(block.ffn.linear1(layer_norm(block.norm2, y)))), weights]


@pytest.mark.parametrize("answer", [pre_norm, pre_norm_by_hand])
def test_pre_norm_block_right_answers_pass_every_draw(answer, capsys):
    _passes_every_draw(check_pre_norm_block, answer, SEEDS[:3], capsys)  # 5 blocks of random weights per draw


def test_pre_norm_block_stub_is_not_yet(capsys):
    _stub_is_not_yet(check_pre_norm_block, "pre_norm_block", capsys)


def test_the_checker_leaves_the_global_random_state_alone(capsys):
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    check_pre_norm_block(pre_norm, seed=0)
    assert torch.equal(torch.rand(3), expected)


def _post_norm(block, x, mask=None):
    attended, weights = block.attn(x, x, x, mask)
    y = block.norm1(x + attended)
    return block.norm2(y + block.ffn(y)), weights


def _variant(first="norm1", second="norm2", normed_residual=False, ffn_reads_y=False, last=False, mask_on=True,
             residual=True):
    def answer(block, x, mask=None):
        h = getattr(block, first)(x)
        attended, weights = block.attn(h, h, h, mask if mask_on else None)
        y = attended + ((h if normed_residual else x) if residual else 0)
        h2 = getattr(block, second)(y)
        out = block.ffn(y if ffn_reads_y else h2) + ((h2 if normed_residual else y) if residual else 0)
        return (block.norm2(out) if last else out), weights
    return answer


def _via_course_block(block, x, mask=None):
    pre = TransformerBlock(block.d_model, block.num_heads, block.d_ff, norm_first=True).to(x.dtype)
    pre.load_state_dict(block.state_dict())
    return pre(x, mask)


def _in_place(block, x, mask=None):
    h = block.norm1(x)
    attended, weights = block.attn(h, h, h, mask)
    x += attended
    return x + block.ffn(block.norm2(x)), weights


def _weights_of_x(block, x, mask=None):
    out, _ = pre_norm(block, x, mask)
    return out, block.attn(x, x, x, mask)[1]


WRONG_BLOCK = {
    "post-norm": (_post_norm, "that is the post-norm block"),
    "norm1 and norm2 swapped": (_variant("norm2", "norm1"), "norm1 and norm2 swapped"),
    "residual from the normalised input": (_variant(normed_residual=True), "residual path carries the normalised"),
    "FFN reads y": (_variant(ffn_reads_y=True), "the FFN reads y itself"),
    "a LayerNorm at the end": (_variant(last=True), "a LayerNorm after the last sum"),
    "mask dropped": (_variant(mask_on=False), "the mask does not reach the attention"),
    "no residual": (_variant(residual=False), "no residual connections"),
    "the course's own block": (_via_course_block, "calls the course's own TransformerBlock"),
    "x changed in place": (_in_place, "changed its input x in place"),
    "weights of the un-normalised x": (_weights_of_x, "out is right but weights are not"),
    "only out returned": (lambda b, x, m=None: pre_norm(b, x, m)[0], "return a pair (out, weights)"),
    "out and weights swapped": (lambda b, x, m=None: pre_norm(b, x, m)[::-1], "out should have x's shape"),
}


@pytest.mark.parametrize("name", WRONG_BLOCK)
def test_pre_norm_block_known_mistakes_get_their_hint(name, capsys):
    answer, phrase = WRONG_BLOCK[name]
    for seed in (0, 1):
        _wrong(capsys, check_pre_norm_block(answer, seed=seed), phrase)


def test_a_failing_case_is_named_with_its_sizes_and_mask(capsys):
    result = check_pre_norm_block(_variant(mask_on=False), seed=3)
    assert "causal mask" in result.case and "d_model 32" in result.case
    capsys.readouterr()


def test_pre_norm_block_names_a_result_of_another_dtype(capsys):
    """A float64 out would make the notebook's next cell (torch.allclose) raise: the checker names the dtype."""
    def in_float64(block, x, mask=None):
        out, weights = pre_norm(block, x, mask)
        return out.double(), weights

    result = check_pre_norm_block(in_float64, seed=0)
    capsys.readouterr()
    assert result.status != "correct" and "float64" in result.message and "bug in the checker" not in result.message
