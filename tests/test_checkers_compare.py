"""The shared judging of every checker (``helpers/checkers/compare.py``, ``report.py``), found in review
(issue 24): a right answer in another container passes where the task allows it, a right answer in an order
the task does not allow is told the order, and a function unfinished for one case is told which case."""


import numpy as np
import pytest
import torch
from checker_testing import all_are as _all
from checker_testing import all_wrong as _all_wrong
from checker_testing import results_over_seeds as _run
from checker_testing import slopes as _slopes
from checker_testing import verdicts as _verdicts

from course_utils.helpers import checkers
from course_utils.helpers.checkers import (
    check_causal_mask,
    check_classify_heads,
    check_cross_attention_shapes,
    check_peak_offsets,
    check_slopes,
)

SEEDS = (0, 1)


def test_right_answers_in_another_container_pass_where_the_task_allows_it(capsys):
    def per_example(w, L):  # 04: one tensor per example is fine
        return [w[b, :n, :n].argmax(-1) - (n - 1 - torch.arange(n)) for b, n in enumerate(L.tolist())]

    assert all(_verdicts(check_peak_offsets, per_example))
    assert all(_verdicts(check_peak_offsets, lambda w, L: np.concatenate([p.numpy() for p in per_example(w, L)]).astype(float)))
    assert all(_verdicts(check_cross_attention_shapes, lambda B, n, m, d, h: [torch.Size([B, n, d]), [B, h, n, m]]))

    def classify(distance, n, local_below=0.5, global_above=0.75):
        ratio = distance / ((n * n - 1) / (3 * n))
        return np.array(["local" if r < local_below else "global" if r > global_above else "mixed" for r in ratio.tolist()])

    assert all(_verdicts(check_classify_heads, classify))
    assert all(_verdicts(check_slopes, lambda T, t: np.array(_slopes(T, t))))


def test_a_right_answer_in_an_order_the_task_does_not_allow_is_told_the_order(capsys):
    def step_major(w, L):
        return [int(w[b, t, :n].argmax()) - (n - 1 - t) for t in range(int(L.max())) for b, n in enumerate(L.tolist())
                if t < n]

    _all_wrong(check_peak_offsets, step_major, "in another order, step after step")
    _all_wrong(check_slopes, lambda T, t: _slopes(T, t)[::-1], "reverse order")


# --- a function not finished for one case ---------------------------------------------------------------------


def test_not_implemented_for_one_case_names_the_case(capsys):
    def all_but_one(n):
        if n == 1:
            raise NotImplementedError("one token: todo")
        return torch.ones(n, n, dtype=torch.bool).tril()

    for result in _verdicts(check_causal_mask, all_but_one):
        assert result.status == "not done" and result.case == "n=1" and "NotImplementedError: one token: todo" in result.error
        assert result.message.startswith("[not yet] causal_mask: your function is not finished for n=1")


def test_a_stub_is_still_not_implemented_yet(capsys):
    def stub(n):
        raise NotImplementedError("Your turn: replace this line with your code.")

    for result in _verdicts(check_causal_mask, stub):
        assert result.status == "not done" and "not implemented yet" in result.message and not result.case

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
