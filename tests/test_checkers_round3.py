"""Issue 33 (trust, round three): the newest checkers against held-out wrong answers (none accepted, none a
"bug in the checker", no hint naming a mistake that was not made) and the valid answers the task allows."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.helpers import checkers
from course_utils.helpers.checkers import explore_longer_training, induction_heads


def _run(check, fn, capsys, seeds=(0, 1, 2)):
    results = [check(fn, seed=s) for s in seeds]
    capsys.readouterr()
    return results


def _all(results, status, *words):
    for r in results:
        assert r.status == status, r.message
        assert "bug in the checker" not in r.message
        for word in words:
            assert word in r.message, r.message


# --------------------------------------------------------------------------- 03 split_heads


def split_view(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)


def split_reshape(x, h):
    return x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3)


def split_unflatten(x, h):
    return x.unflatten(-1, (h, -1)).transpose(1, 2)


@pytest.mark.parametrize("fn", [split_view, split_reshape, split_unflatten])
def test_split_heads_accepts_right_answers(fn, capsys):
    _all(_run(checkers.check_split_heads, fn, capsys), "correct")


@pytest.mark.parametrize("fn, words", [
    (lambda x, h: split_view(x, h).half(), ("torch.float16", "dtype")),
    (lambda x, h: split_view(x, h).double(), ("torch.float64",)),
    (lambda x, h: torch.from_numpy(split_view(x, h).detach().numpy().copy()), ("autograd", "NumPy round trip")),
    (lambda x, h: split_view(x, h).detach(), ("autograd", "detach")),
    (lambda x, h: split_view(x, h).detach().numpy(), ("NumPy array",)),
    (lambda x, h: split_view(x, h).to("meta"), ("device 'meta'",)),
])
def test_split_heads_names_the_kind_of_the_result(fn, words, capsys):
    _all(_run(checkers.check_split_heads, fn, capsys), "wrong", *words)


def test_split_heads_names_reshaping_not_view(capsys):
    results = _run(checkers.check_split_heads, lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), capsys)
    _all(results, "wrong", "transpose is missing", "reshaping")
    assert all("view" not in r.hint for r in results)


def test_split_heads_blames_the_notebooks_variables_only_when_its_sizes_show(capsys):
    def notebook_heads(x, h):  # num_heads taken from the notebook (h = 8) instead of the argument
        return x.reshape(x.shape[0], x.shape[1], 8, -1).transpose(1, 2)

    _all(_run(checkers.check_split_heads, notebook_heads, capsys), "crashed", "x.shape", "the notebook's B, T, h")
    _all(_run(checkers.check_split_heads, lambda x, h: x.view(2, 5, 8, 8).transpose(1, 2), capsys), "crashed",
         "x.shape")
    flat = _run(checkers.check_split_heads, lambda x, h: split_view(x, h).flatten(0, 1), capsys)
    _all(flat, "wrong", "should have shape")
    assert all("notebook" not in r.hint for r in flat)
    case = type("Case", (), {"got": torch.zeros(2, 8, 5, 8), "expected": torch.zeros(3, 4, 7, 3)})
    from course_utils.helpers.checkers import multi_head_attention
    assert "variables of the notebook" in multi_head_attention._otherwise(case)


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


# --------------------------------------------------------------------------- 07b induction_score


def induction(w, L):
    return w.diagonal(1 - L, dim1=-2, dim2=-1)[..., 1:].mean(-1)


def only_4d(w, L):
    B, h, T, _ = w.shape if w.dim() == 4 else (1, 1, *w.shape[-2:])
    if w.dim() not in (2, 3, 4):
        w = w[:, 0]  # drops the notebook's layer axis
    return induction(w, L)


@pytest.mark.parametrize("fn, words", [
    (lambda w, L: induction(w, L).numpy(), ("NumPy array", "allclose")),
    (lambda w, L: induction(w.double(), L) if w.dtype == torch.float32 else induction(w, L), ("torch.float64",
                                                                                             "allclose")),
    (lambda w, L: induction(w, L).half(), ("torch.float16",)),
    (lambda w, L: induction(w, L).to("meta"), ("device 'meta'",)),
    (only_4d, ("should have shape",)),
])
def test_induction_score_rejects_held_out_wrong_answers(fn, words, capsys):
    _all(_run(checkers.check_induction_score, fn, capsys), "wrong", *words)


def test_induction_score_tries_the_notebooks_5d_weights():
    for seed in range(3):
        assert any(w.dim() == 5 for _, w, _ in induction_heads._cases(seed))


def test_induction_score_hint_never_contradicts_itself(capsys):
    """A score off by a hair more than the tolerance: the hint shows enough digits to tell them apart and
    counts the differing scores by that very tolerance (never "0 of 6 scores differ")."""
    def nudged(w, L):
        s = induction(w, L)
        return s + 3e-4 * (s.abs() + 1)

    for r in _run(checkers.check_induction_score, nudged, capsys):
        assert r.status == "wrong" and " 0 of " not in r.hint, r.hint
        should, got = r.hint.split("should be ")[1].split(", got ")
        assert should != got.split(";")[0], r.hint


# --------------------------------------------------------------------------- 13 argmax_offset_share


def argmax_over_the_source(w, lengths, offset):
    """The peak over the first n source positions only (a masked model puts no weight on padding)."""
    hits, steps = 0, 0
    for b, n in enumerate(lengths.tolist()):
        peak = w[b, :n, :n].argmax(-1)
        hits += int((peak == n - 1 - torch.arange(n) + offset).sum())
        steps += n
    return hits / steps


def test_argmax_offset_share_accepts_the_peak_over_the_first_n_sources(capsys):
    _all(_run(checkers.check_argmax_offset_share, argmax_over_the_source, capsys), "correct")


def test_argmax_offset_share_cases_put_no_weight_on_padding():
    for seed in range(5):
        for _, w, lengths in explore_longer_training._cases(seed):
            padded = torch.arange(w.shape[-1]) >= lengths[:, None, None]
            assert (w.masked_select(padded.expand_as(w)) == 0).all()


# --------------------------------------------------------------------------- another device, every checker


@pytest.mark.parametrize("name", ["check_masked_softmax", "check_masked_attention", "check_qkv_head", "check_rope",
                                  "check_offset_share", "check_causal_mask", "check_next_token_probs"])
def test_a_result_on_another_device_is_named_not_a_checker_bug(name, capsys):
    import sys
    sys.path.insert(0, "tests")
    from test_checkers_contract import CASES

    right = CASES[name][0]

    def moved(*args, **kwargs):
        out = right(*args, **kwargs)
        return tuple(o.to("meta") for o in out) if isinstance(out, tuple) else torch.as_tensor(out).to("meta")

    _all(_run(checkers.CHECKS[name].function, moved, capsys, seeds=(0,)), "wrong", "device 'meta'")


@pytest.mark.parametrize("name", ["check_masked_attention", "check_qkv_head", "check_head_entropy",
                                  "check_next_token_probs", "check_offset_share", "check_online_update"])
def test_a_result_with_less_precision_names_the_dtype(name, capsys):
    import sys
    sys.path.insert(0, "tests")
    from test_checkers_contract import CASES

    right = CASES[name][0]

    def half(*args, **kwargs):
        out = right(*args, **kwargs)
        return tuple(o.half() if o.is_floating_point() else o for o in out) if isinstance(out, tuple) else \
            torch.as_tensor(out).half()

    _all(_run(checkers.CHECKS[name].function, half, capsys, seeds=(0,)), "wrong", "torch.float16")


# --------------------------------------------------------------------------- self-contradicting numbers


@pytest.mark.parametrize("name, nudge", [
    ("check_offset_share", lambda right: lambda w, k: float(right(w, k)) + 2e-5),
    ("check_argmax_offset_share", lambda right: lambda w, n, k: right(w, n, k) + 2e-5),
])
def test_a_value_just_outside_the_tolerance_prints_two_different_numbers(name, nudge, capsys):
    import sys
    sys.path.insert(0, "tests")
    from test_checkers_contract import CASES

    (result,) = _run(checkers.CHECKS[name].function, nudge(CASES[name][0]), capsys, seeds=(0,))
    assert result.status == "wrong", result.message
    expected, got = result.hint.split("expected ")[1].split(", got ")
    assert expected != got.split(":")[0].rstrip("."), result.hint


def test_two_numbers_uses_the_digits_it_takes():
    from course_utils.helpers.checkers.compare import two_numbers

    assert two_numbers(0.16667, 0.5) == ("0.1667", "0.5")
    assert two_numbers(0.0626001, 0.0626049) == ("0.0626001", "0.0626049")
    assert two_numbers(1 / 3, 1 / 3 + 1e-12)[0] != "0.3333"


@pytest.mark.parametrize("name", ["check_qkv_head", "check_masked_attention", "check_online_update",
                                  "check_sparsemax_threshold"])
def test_float64_is_named_where_the_next_cell_compares_with_allclose(name, capsys):
    import sys
    sys.path.insert(0, "tests")
    from test_checkers_contract import CASES

    right = CASES[name][0]
    def double(*a):
        out = right(*a)
        return tuple(o.double() for o in out) if isinstance(out, tuple) else out.double()

    (result,) = _run(checkers.CHECKS[name].function, double, capsys, seeds=(0,))
    assert result.status == "wrong" and "torch.float64" in result.hint and "allclose" in result.hint, result.message
