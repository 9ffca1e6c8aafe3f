"""The checker of notebook 03 `split_heads`: held-out wrong answers (none accepted, none called "a bug in the
checker", no hint naming a mistake that was not made) and every valid answer the task allows."""


import pytest
import torch
from checker_testing import all_are as _all
from checker_testing import once as _run_once
from checker_testing import results_over_seeds as _run

from course_utils.helpers import checkers
from course_utils.helpers.checkers import check_split_heads

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


# ------------------------------------------------------------------ the first bank of right and wrong answers


def split_by_view(x, num_heads):
    B, T, d = x.shape
    return x.view(B, T, num_heads, d // num_heads).transpose(1, 2)


def split_by_unflatten(x, num_heads):
    return x.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3)


def split_stack(x, num_heads):
    d_k = x.shape[-1] // num_heads
    return torch.stack([x[..., i * d_k:(i + 1) * d_k] for i in range(num_heads)], dim=1)


@pytest.mark.parametrize("fn", [split_by_view, split_by_unflatten, split_stack])
def test_split_heads_accepts_correct_answers(fn, capsys):
    ok, out = _run_once(check_split_heads, fn, capsys)
    assert ok, out


@pytest.mark.parametrize("fn, needle", [
    (lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), "transpose is missing"),
    (lambda x, h: x.reshape(x.shape[0], x.shape[1], -1, h).permute(0, 3, 1, 2), "every h-th feature"),
    (lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1).transpose(2, 3), "wrong order"),
    (lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1), "not swapped"),
    (lambda x, h: x.view(2, 5, 8, 8).transpose(1, 2), "raised"),
    (lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1).transpose(1, 2) * 1.0 + 1e-3, "values are not"),
])
def test_split_heads_rejects_known_mistakes(fn, needle, capsys):
    ok, out = _run_once(check_split_heads, fn, capsys)
    assert not ok
    assert needle in out, out
