"""Checkers of notebook 06 (cross-attention): the reference answers pass, every answer in the
banks of known mistakes fails with a hint that names the mistake, and stubs get "not implemented yet"."""

import math

import pytest
import torch
import torch.nn.functional as F
from checker_testing import stub as _stub
from torch import nn

from course_utils import scaled_dot_product_attention
from course_utils.helpers.checkers import (
    check_cross_attention,
    check_cross_attention_shapes,
    check_strongest_source,
)


def _run(check, answer, capsys) -> tuple[bool, str]:
    ok = check(answer)
    return ok, capsys.readouterr().out


# --- task 1: shapes -------------------------------------------------------------------------

def shapes_right(B, n, m, d_model, num_heads):
    return (B, n, d_model), (B, num_heads, n, m)


def shapes_as_lists(B, n, m, d_model, num_heads):
    return [B, n, d_model], torch.Size([B, num_heads, n, m])


WRONG_SHAPES = {
    # name: (answer, words the hint must contain)
    "output follows the encoder": (lambda B, n, m, d, h: ((B, m, d), (B, h, n, m)), "its length is n"),
    "everything swapped": (lambda B, n, m, d, h: ((B, m, d), (B, h, m, n)), "its length is n"),
    "output has d_k features": (lambda B, n, m, d, h: ((B, n, d // h), (B, h, n, m)), "not d_k"),
    "heads not merged": (lambda B, n, m, d, h: ((B, h, n, d // h), (B, h, n, m)), "before the heads are merged"),
    "output without batch axis": (lambda B, n, m, d, h: ((n, d), (B, h, n, m)), "keep the batch axis"),
    "output given the weights' shape": (lambda B, n, m, d, h: ((B, n, m), (B, h, n, m)), "not of the output"),
    "weights transposed": (lambda B, n, m, d, h: ((B, n, d), (B, h, m, n)), "transposed"),
    "weights without head axis": (lambda B, n, m, d, h: ((B, n, d), (B, n, m)), "one weight matrix per head"),
    "weights square (decoder)": (lambda B, n, m, d, h: ((B, n, d), (B, h, n, n)), "not square"),
    "weights square (encoder)": (lambda B, n, m, d, h: ((B, n, d), (B, h, m, m)), "not square"),
    "head axis in the wrong place": (lambda B, n, m, d, h: ((B, n, d), (B, n, h, m)), "head axis comes right after"),
    "weights over features": (lambda B, n, m, d, h: ((B, n, d), (B, h, n, d // h)), "not features"),
    "weights without batch axis": (lambda B, n, m, d, h: ((B, n, d), (h, n, m)), "keep the batch axis"),
    "hard-coded numbers": (lambda B, n, m, d, h: ((2, 3, 24), (2, 4, 3, 5)), "from the arguments"),
    "one shape only": (lambda B, n, m, d, h: (B, n, d), "pair of shapes"),
    "not shapes": (lambda B, n, m, d, h: ("B, n, d", None), "tuple of ints"),
}


@pytest.mark.parametrize("answer", [shapes_right, shapes_as_lists])
def test_shapes_right_answers_pass(answer, capsys):
    ok, out = _run(check_cross_attention_shapes, answer, capsys)
    assert ok and "[correct]" in out


@pytest.mark.parametrize("name", list(WRONG_SHAPES))
def test_shapes_wrong_answers_fail_with_their_hint(name, capsys):
    answer, words = WRONG_SHAPES[name]
    ok, out = _run(check_cross_attention_shapes, answer, capsys)
    assert not ok
    assert "[try again]" in out and words in out, out


def test_shapes_stub_is_not_implemented_yet(capsys):
    ok, out = _run(check_cross_attention_shapes, _stub, capsys)
    assert not ok and "not implemented yet" in out


# --- task 2: the layer --------------------------------------------------------------------------
# A student's layer: the notebook's __init__ and a forward(decoder_states, encoder_states, encoder_mask).


class Layer(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def merge(self, x):
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.d_model)


def layer_class(forward):
    return type(forward.__name__, (Layer,), {"forward": forward})


def right_with_course_attention(self, dec, enc, mask=None):
    Q, K, V = self.split(self.W_q(dec)), self.split(self.W_k(enc)), self.split(self.W_v(enc))
    heads, weights = scaled_dot_product_attention(Q, K, V, None if mask is None else mask.unsqueeze(1))
    return self.W_o(self.merge(heads)), weights


def right_from_scratch_with_inf(self, dec, enc, mask=None):
    Q, K, V = self.split(self.W_q(dec)), self.split(self.W_k(enc)), self.split(self.W_v(enc))
    scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None], float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return self.W_o(self.merge(weights @ V)), weights


def _attend(self, q_src, k_src, v_src, mask, *, divisor=None, axis=-1, keep=None, how="fill", merge=None, split=None):
    """Student-style building block for the wrong answers below (each passes its own mistake)."""
    split = split or self.split
    Q, K, V = split(self.W_q(q_src)), split(self.W_k(k_src)), split(self.W_v(v_src))
    scores = Q @ K.transpose(-2, -1) / (math.sqrt(self.d_k) if divisor is None else divisor)
    if keep is None and mask is not None:
        keep = mask.unsqueeze(1)
    if keep is None:
        weights = torch.softmax(scores, dim=axis)
    elif how == "fill":
        weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=axis)
    elif how == "times":
        weights = torch.softmax(scores * keep, dim=axis)
    else:  # after the softmax
        weights = torch.softmax(scores, dim=axis) * keep
    heads = weights @ V
    return (merge or self.merge)(heads), weights


def swapped(self, dec, enc, mask=None):
    out, w = _attend(self, enc, dec, dec, mask)
    return self.W_o(out), w


def keys_from_decoder(self, dec, enc, mask=None):
    out, w = _attend(self, dec, dec, enc, mask)
    return self.W_o(out), w


def values_from_decoder(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, dec, mask)
    return self.W_o(out), w


def all_from_encoder(self, dec, enc, mask=None):
    out, w = _attend(self, enc, enc, enc, mask)
    return self.W_o(out), w


def all_from_decoder(self, dec, enc, mask=None):
    out, w = _attend(self, dec, dec, dec, mask)
    return self.W_o(out), w


def no_scaling(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, divisor=1.0)
    return self.W_o(out), w


def scaled_by_sqrt_d_model(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, divisor=math.sqrt(self.d_model))
    return self.W_o(out), w


def scaled_by_d_k(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, divisor=self.d_k)
    return self.W_o(out), w


def softmax_over_queries(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, axis=-2)
    return self.W_o(out), w


def mask_inverted(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, keep=None if mask is None else ~mask.unsqueeze(1))
    return self.W_o(out), w


def mask_ignored(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, None)
    return self.W_o(out), w


def mask_on_queries(self, dec, enc, mask=None):
    keep = None if mask is None else mask.transpose(1, 2).unsqueeze(1)  # (B, 1, m, 1)
    out, w = _attend(self, dec, enc, enc, mask, keep=keep)
    return self.W_o(out), w


def mask_not_unsqueezed(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, keep=mask)  # (B, 1, m) against (B, h, n, m)
    return self.W_o(out), w


def mask_via_course_attention_not_unsqueezed(self, dec, enc, mask=None):
    Q, K, V = self.split(self.W_q(dec)), self.split(self.W_k(enc)), self.split(self.W_v(enc))
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)
    return self.W_o(self.merge(heads)), weights


def scores_times_mask(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, how="times")
    return self.W_o(out), w


def masked_after_softmax(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, how="after")
    return self.W_o(out), w


def no_output_projection(self, dec, enc, mask=None):
    return _attend(self, dec, enc, enc, mask)


def merge_without_transpose(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, merge=lambda x: x.reshape(x.shape[0], x.shape[2], self.d_model))
    return self.W_o(out), w


def split_with_direct_view(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask, split=lambda x: x.reshape(x.shape[0], self.num_heads, x.shape[1], self.d_k))
    return self.W_o(out), w


def split_without_transpose(self, dec, enc, mask=None):
    def split(x):
        return x.view(x.shape[0], x.shape[1], self.num_heads, self.d_k)

    def merge(x):
        return x.reshape(x.shape[0], x.shape[1], self.d_model)

    out, w = _attend(self, dec, enc, enc, mask, split=split, merge=merge)
    return self.W_o(out), w


def key_not_transposed(self, dec, enc, mask=None):
    Q, K, V = self.split(self.W_q(dec)), self.split(self.W_k(enc)), self.split(self.W_v(enc))
    weights = torch.softmax(Q @ K / math.sqrt(self.d_k), dim=-1)
    return self.W_o(self.merge(weights @ V)), weights


def weights_averaged_over_heads(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask)
    return self.W_o(out), w.mean(1)


def single_head(self, dec, enc, mask=None):
    Q, K, V = self.W_q(dec), self.W_k(enc), self.W_v(enc)
    weights = torch.softmax((Q @ K.transpose(-2, -1) / math.sqrt(self.d_model)).masked_fill(
        torch.zeros(1, dtype=torch.bool) if mask is None else ~mask, float("-inf")), dim=-1)
    return self.W_o(weights @ V), weights


def weights_transposed(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask)
    return self.W_o(out), w.transpose(-2, -1)


def returns_scores(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask)
    Q, K = self.split(self.W_q(dec)), self.split(self.W_k(enc))
    return self.W_o(out), Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)


def output_only(self, dec, enc, mask=None):
    out, _ = _attend(self, dec, enc, enc, mask)
    return self.W_o(out)


def reshaped_with_decoder_length(self, dec, enc, mask=None):
    B, n, _ = dec.shape

    def split(x):
        return x.reshape(B, n, self.num_heads, self.d_k).transpose(1, 2)

    out, w = _attend(self, dec, enc, enc, mask, split=split)
    return self.W_o(out), w


def crashes_without_mask(self, dec, enc, mask=None):
    out, w = _attend(self, dec, enc, enc, mask.bool())
    return self.W_o(out), w


WRONG_LAYERS = {
    # forward: words the hint must contain
    swapped: "swapped",
    keys_from_decoder: "the keys come from the decoder",
    values_from_decoder: "the values come from the decoder",
    all_from_encoder: "self-attention over the encoder",
    all_from_decoder: "self-attention over the decoder",
    no_scaling: "not scaled",
    scaled_by_sqrt_d_model: "sqrt(d_model)",
    scaled_by_d_k: "divided by d_k",
    softmax_over_queries: "wrong axis",
    mask_inverted: "inverted",
    mask_ignored: "padded encoder positions get weight",
    mask_on_queries: "applied to the queries",
    mask_not_unsqueezed: "without a head axis",
    mask_via_course_attention_not_unsqueezed: "without a head axis",
    scores_times_mask: "still gets weight",
    masked_after_softmax: "after the softmax",
    no_output_projection: "output projection is missing",
    merge_without_transpose: "merged without moving the head axis back",
    split_with_direct_view: "mixes positions and features",
    split_without_transpose: "attention runs across heads",
    key_not_transposed: "K.transpose(-2, -1)",
    weights_averaged_over_heads: "per-head weights",
    single_head: "per-head weights",
    weights_transposed: "transposed",
    returns_scores: "not probabilities",
    output_only: "return a pair",
    reshaped_with_decoder_length: "same length but fails",
    crashes_without_mask: "encoder_mask=None",
}


def right_head_by_head(self, dec, enc, mask=None):
    # One head at a time with explicit loops over heads, masking with a large negative number.
    B, n, d = dec.shape
    h = self.num_heads
    d_k = d // h
    q, k, v = self.W_q(dec), self.W_k(enc), self.W_v(enc)
    outs, weights = [], []
    for j in range(h):
        cols = slice(j * d_k, (j + 1) * d_k)
        s = q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(d_k)  # (B, n, m)
        if mask is not None:
            s = s.masked_fill(~mask, -1e9)
        w = s.softmax(-1)
        weights.append(w)
        outs.append(w @ v[..., cols])
    return self.W_o(torch.cat(outs, -1)), torch.stack(weights, 1)


@pytest.mark.parametrize(
    "layer", [layer_class(right_head_by_head), layer_class(right_with_course_attention),
              layer_class(right_from_scratch_with_inf)],
    ids=["head by head", "course attention", "from scratch with -inf"],
)
def test_layer_right_answers_pass(layer, capsys):
    ok, out = _run(check_cross_attention, layer, capsys)
    assert ok and "[correct]" in out, out


@pytest.mark.parametrize("forward", list(WRONG_LAYERS), ids=[f.__name__ for f in WRONG_LAYERS])
def test_layer_wrong_answers_fail_with_their_hint(forward, capsys):
    ok, out = _run(check_cross_attention, layer_class(forward), capsys)
    assert not ok
    assert "[try again]" in out and WRONG_LAYERS[forward] in out, out


def test_layer_stub_is_not_implemented_yet(capsys):
    ok, out = _run(check_cross_attention, layer_class(_stub), capsys)
    assert not ok and "not implemented yet" in out


def test_layer_check_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_cross_attention(layer_class(right_with_course_attention))
    assert torch.equal(torch.rand(3), expected)


def test_layer_with_a_changed_init_is_told_to_keep_it(capsys):
    class NoProjections(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.num_heads = num_heads

        def forward(self, dec, enc, mask=None):
            return dec, None

    ok, out = _run(check_cross_attention, NoProjections, capsys)
    assert not ok and "keep the given __init__" in out


# --- task 3: strongest source ---------------------------------------------------------------------


def source_right(weights):
    return weights.mean(dim=1).argmax(dim=-1)


def source_right_with_sum(weights):
    return weights.sum(1).argmax(-1).to(torch.int32)


def source_right_by_loops(weights):
    B, h, n, m = weights.shape
    out = torch.zeros(B, n, dtype=torch.long)
    for b in range(B):
        for i in range(n):
            avg = [sum(weights[b, k, i, j].item() for k in range(h)) / h for j in range(m)]
            out[b, i] = max(range(m), key=lambda j: avg[j])
    return out


WRONG_SOURCES = {
    "argmax over the decoder axis": (lambda w: w.mean(1).argmax(-2), "argmax over the decoder axis"),
    "no head averaging": (lambda w: w.argmax(-1), "not per head"),
    "argmax over heads": (lambda w: w.argmax(1), "argmax over the head axis"),
    "first head only": (lambda w: w[:, 0].argmax(-1), "one head only"),
    "last head only": (lambda w: w[:, -1].argmax(-1), "one head only"),
    "max over heads": (lambda w: w.amax(1).argmax(-1), "maximum over the heads"),
    "heads vote": (lambda w: w.argmax(-1).mode(1).values, "vote"),
    "argmin": (lambda w: w.mean(1).argmin(-1), "SMALLEST"),
    "weights instead of positions": (lambda w: w.mean(1).max(-1).values, "not weights"),
    "one-based positions": (lambda w: w.mean(1).argmax(-1) + 1, "count from 0"),
    "averaged over the batch": (lambda w: w.mean((0, 1)).argmax(-1), "combined the batch items"),
    "argmax of the flattened matrix": (lambda w: w.mean(1).flatten(1).argmax(-1), "along each row"),
    "averaged over the decoder positions": (lambda w: w.mean(2).argmax(-1), "averaged over the decoder positions"),
    "a list": (lambda w: w.mean(1).argmax(-1).tolist(), "torch.Tensor"),
    "always position 0": (lambda w: torch.zeros(w.shape[0], w.shape[2], dtype=torch.long), "decoder position"),
}


@pytest.mark.parametrize("answer", [source_right, source_right_with_sum, source_right_by_loops])
def test_source_right_answers_pass(answer, capsys):
    ok, out = _run(check_strongest_source, answer, capsys)
    assert ok and "[correct]" in out, out


@pytest.mark.parametrize("name", list(WRONG_SOURCES))
def test_source_wrong_answers_fail_with_their_hint(name, capsys):
    answer, words = WRONG_SOURCES[name]
    ok, out = _run(check_strongest_source, answer, capsys)
    assert not ok
    assert "[try again]" in out and words in out, out


def test_source_stub_is_not_implemented_yet(capsys):
    ok, out = _run(check_strongest_source, _stub, capsys)
    assert not ok and "not implemented yet" in out


def test_bank_sizes():
    # The counts the report gives; a test so that they stay true.
    assert (len(WRONG_SHAPES), len(WRONG_LAYERS), len(WRONG_SOURCES)) == (16, 28, 15)


# --- layers that ignore their inputs (issue 30) ---------------------------------------------------

def fills_the_mask_in_place(self, dec, enc, mask=None):
    if mask is not None:
        mask.fill_(True)  # the checker's reference must not see this
    return right_from_scratch_with_inf(self, dec, enc, mask)


class ZeroWeights(Layer):
    def __init__(self, d_model, num_heads):
        super().__init__(d_model, num_heads)
        with torch.no_grad():
            for p in self.parameters():
                p.zero_()

    forward = right_from_scratch_with_inf  # correct arithmetic on zero weights: a constant output


class LyingStateDict(Layer):
    def state_dict(self, *args, **kwargs):
        return {k: torch.zeros_like(v) for k, v in super().state_dict(*args, **kwargs).items()}

    def forward(self, dec, enc, mask=None):
        B, n, _ = dec.shape
        m = enc.shape[1]
        weights = torch.ones(B, self.num_heads, n, m) if mask is None else mask[:, None].expand(
            B, self.num_heads, n, m).float()
        return torch.zeros(B, n, self.d_model), weights / weights.sum(-1, keepdim=True)


@pytest.mark.parametrize("layer, hint", [
    (layer_class(fills_the_mask_in_place), "padded encoder positions get weight"),
    (ZeroWeights, "does not change when decoder_states change"),
    (LyingStateDict, "does not change when decoder_states change")],
    ids=["mask filled in place", "zero weights", "lying state_dict"])
def test_layers_that_ignore_their_inputs_fail(layer, hint, capsys):
    """The layer is measured on copies the checker keeps (a mask filled in place changes nothing of the
    reference) and must depend on its inputs as attention does, whatever parameters it reports."""
    result = check_cross_attention(layer, seed=0)
    assert result.status == "wrong" and hint in result.hint, result.message
