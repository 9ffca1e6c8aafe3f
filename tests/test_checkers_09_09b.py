"""The "your turn" checkers of lessons 09 (decode_position) and 09b (pre_norm_block): right answers
pass on every hidden draw, the stub is "not yet", and each known-wrong answer gets its own hint."""

import functools
import math

import numpy as np
import pytest
import torch

from course_utils.core.transformer import TransformerBlock
from course_utils.helpers.checkers import check_decode_position, check_pre_norm_block

SEEDS = range(10)  # every hidden draw differs; 10 prove what 100 did (each draw covers every size and mask)


def _passes_every_draw(checker, answer, seeds, capsys):
    wrong = [s for s in seeds if not checker(answer, seed=s)]
    assert not wrong, (answer.__name__, wrong[:5], capsys.readouterr().out[-1500:])


def _stub_is_not_yet(checker, task, capsys):
    result = checker(_stub)
    assert result.status == "not done" and capsys.readouterr().out.startswith(f"[not yet] {task}")


def _wrong(capsys, result, phrase):
    out = capsys.readouterr().out
    assert not result and result.status == "wrong", out
    assert out.startswith("[try again]") and phrase in out, out


def _stub(*args):
    raise NotImplementedError("Your turn: replace this line with your code.")


# --- 09: decode_position ----------------------------------------------------------------------------


def _slowest_angle(pe):
    d = pe.shape[-1]
    i = d // 2 - 1
    return torch.atan2(pe[..., 2 * i], pe[..., 2 * i + 1]), 10000.0 ** (-2 * i / d)


def decode_atan2(pe):
    angle, w = _slowest_angle(pe)
    return torch.round(angle / w).long()


def decode_numpy(pe):  # a NumPy array of floats with whole values: accepted
    pe = pe.double().numpy()
    d = pe.shape[-1]
    return np.rint(np.arctan2(pe[..., -2], pe[..., -1]) * 10000.0 ** ((d - 2) / d))


def _acos(pe):  # right in exact arithmetic, but float32 cos of a small angle rounds to 1
    d = pe.shape[-1]
    return torch.round(torch.acos(pe[..., -1].clamp(-1, 1)) / math.exp(-(d - 2) / d * math.log(10000)))


@functools.lru_cache(maxsize=None)
def _position_table(d: int) -> torch.Tensor:  # (5000, d): the encoding of every position below 5000
    p = torch.arange(5000, dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack([torch.sin(p * w), torch.cos(p * w)], -1).reshape(5000, d)


def decode_lookup(pe):  # the nearest row of a table of every position below 5000
    d = pe.shape[-1]
    table = _position_table(d)
    flat = pe.reshape(-1, d).double()
    # every row of the table has the same length, so the nearest row is the one with the largest dot product
    return (flat @ table.T).argmax(-1).reshape(pe.shape[:-1])


@pytest.mark.parametrize("answer, seeds", [(decode_atan2, SEEDS), (decode_numpy, SEEDS), (decode_lookup, SEEDS[:1])])
def test_decode_position_right_answers_pass_every_draw(answer, seeds, capsys):
    # the lookup compares 1,000 encodings with 5,000 table rows in every draw: one draw of it
    _passes_every_draw(check_decode_position, answer, seeds, capsys)


def test_decode_position_stub_is_not_yet(capsys):
    _stub_is_not_yet(check_decode_position, "decode_position", capsys)


def _fast_pair(pe):
    return torch.round(torch.atan2(pe[..., 0], pe[..., 1])).long()


def _middle_pair(pe):
    d = pe.shape[-1]
    i = d // 4
    angle = torch.remainder(torch.atan2(pe[..., 2 * i], pe[..., 2 * i + 1]), 2 * math.pi)
    return torch.round(angle / 10000.0 ** (-2 * i / d))


def _swapped(pe):
    d = pe.shape[-1]
    return torch.round(torch.atan2(pe[..., -1], pe[..., -2]) / 10000.0 ** (-(d - 2) / d))


def _asin(pe):
    d = pe.shape[-1]
    return torch.round(torch.asin(pe[..., -2]) / 10000.0 ** (-(d - 2) / d))


def _dimension_index(pe):  # i taken as the dimension index d - 2, not the pair index d/2 - 1
    angle, _ = _slowest_angle(pe)
    d = pe.shape[-1]
    return torch.round(angle / 10000.0 ** (-2 * (d - 2) / d))


def _unrounded(pe):
    angle, w = _slowest_angle(pe)
    return angle / w + 0.01


def _floor(pe):
    angle, w = _slowest_angle(pe.float())
    return (angle / w).floor().long()


WRONG_DECODE = {
    "the fast pair 0, which wraps every 2 pi positions": (_fast_pair, "pair 0"),
    "a middle pair, which wraps too": (_middle_pair, "wrap around"),
    "sin and cos swapped in atan2": (_swapped, "sin and cos swapped"),
    "asin of the sine": (_asin, "asin only returns angles up to pi/2"),
    "acos of the cosine": (_acos, "acos of the cosine loses small angles"),
    "the frequency of the dimension index": (_dimension_index, "check the frequency"),
    "not rounded": (_unrounded, "round to the nearest whole position"),
    "floor instead of round": (_floor, "cut 41.9997 down to 41"),
    "keepdim": (lambda pe: decode_atan2(pe)[..., None], "not keepdim"),
    "a list of lists of bools": (lambda pe: decode_atan2(pe) > 0, "whole numbers"),
    "right below 100 only": (lambda pe: decode_atan2(pe).clamp(max=99), "came back as 99"),
}


@pytest.mark.parametrize("name", WRONG_DECODE)
def test_decode_position_known_mistakes_get_their_hint(name, capsys):
    answer, phrase = WRONG_DECODE[name]
    for seed in (0, 1):
        _wrong(capsys, check_decode_position(answer, seed=seed), phrase)


def test_decode_position_in_place_change_is_named(capsys):
    def in_place(pe):
        result = decode_atan2(pe)
        pe.zero_()
        return result

    _wrong(capsys, check_decode_position(in_place, seed=0), "changed its input pe in place")


# --- 09b: pre_norm_block ----------------------------------------------------------------------------


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
