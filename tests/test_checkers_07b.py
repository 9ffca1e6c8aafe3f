"""The checkers of lesson 07b's tasks (induction_score, qk_circuit, ov_circuit): right answers of several styles pass on hidden
draws, each wrong answer its hints name gets that hint (and no other), and the course's own score
agrees with a trained model's attention."""


import numpy as np
import pytest
import torch
from checker_testing import all_are as _all
from checker_testing import results_over_seeds as _run

from course_utils.helpers import checkers
from course_utils.helpers.checkers import induction_heads
from course_utils.helpers.checkers.induction_heads import (
    _cases,
    _mistakes,
    _reference,
    check_induction_score,
    check_ov_circuit,
    check_qk_circuit,
)
from course_utils.models.circuits import ov_circuit, qk_circuit
from course_utils.models.induction import induction_score as course_induction_score

SEEDS = range(8)

# ---------------------------------------------------------------------------------------------
# Right answers, written independently of the checker.


def with_diagonal(weights, period):
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)[..., 1:].mean(-1)


def with_a_loop(weights, period):
    T = weights.shape[-1]
    picked = [weights[..., i, i - period + 1] for i in range(period, T)]
    return sum(picked) / len(picked)


def with_a_mask(weights, period):
    T = weights.shape[-1]
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    chosen = (j == i - period + 1) & (i >= period)
    return (weights * chosen).sum((-2, -1)) / chosen.sum()


def with_a_block(weights, period):  # the rows L.. and columns 1.. hold the induction stripe on their diagonal
    T = weights.shape[-1]
    return weights[..., period:, 1 : T - period + 1].diagonal(dim1=-2, dim2=-1).mean(-1)


def in_numpy(weights, period):
    w = weights.numpy()
    T = w.shape[-1]
    rows = np.arange(period, T)
    return w[..., rows, rows - period + 1].mean(-1)


def in_float64(weights, period):
    return with_a_loop(weights.double(), period)


RIGHT = [with_diagonal, with_a_loop, with_a_mask, with_a_block]  # in_numpy, in_float64: wrong (test_checkers_round3.py)


@pytest.mark.parametrize("fn", RIGHT, ids=lambda fn: fn.__name__)
def test_right_answers_pass(capsys, fn):
    for seed in SEEDS:
        result = check_induction_score(fn, seed=seed)
        out = capsys.readouterr().out
        assert result.status == "correct", (seed, out)
        assert out.startswith("[correct] induction_score")


def test_the_reference_is_the_course_function():
    for seed in range(20):
        for _, weights, period in _cases(seed):
            torch.testing.assert_close(_reference(weights, period), course_induction_score(weights, period))


# ---------------------------------------------------------------------------------------------
# Known mistakes, each with the words its hint must contain.


def earlier_occurrence(weights, period):  # key i - L: the duplicate-token head
    return weights.diagonal(offset=-period, dim1=-2, dim2=-1).mean(-1)


def counts_query_l_minus_1(weights, period):  # what offset_share(weights, 1 - L) gives
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1).mean(-1)


def divides_by_t(weights, period):
    T = weights.shape[-1]
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)[..., 1:].sum(-1) / T


def transposed(weights, period):
    return weights.diagonal(offset=period - 1, dim1=-2, dim2=-1).mean(-1)


def summed(weights, period):
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)[..., 1:].sum(-1)


def one_number(weights, period):
    return with_diagonal(weights, period).mean()


def per_query(weights, period):
    return weights.diagonal(offset=1 - period, dim1=-2, dim2=-1)[..., 1:]


def a_list(weights, period):
    return with_diagonal(weights, period).tolist()


def in_place(weights, period):
    weights.clamp_(max=0.5)
    return with_diagonal(weights, period)


def two_further(weights, period):  # key i - L + 2: an off-by-one that no hint names
    return weights.diagonal(offset=2 - period, dim1=-2, dim2=-1).mean(-1)


def rounded(weights, period):
    return (with_diagonal(weights, period) > 0.5).long()


WRONG = [
    (earlier_occurrence, "earlier occurrence of the query's own token"),
    (counts_query_l_minus_1, "query L - 1"),
    (divides_by_t, "you divided by T"),
    (transposed, "the transpose"),
    (summed, "the sum over the"),
    (one_number, "you averaged them into one number"),
    (per_query, "average over the queries too"),
    (a_list, "return a torch.Tensor"),
    (in_place, "changed the weights you passed in"),
    (two_further, "scores differ"),
    (rounded, "return a float tensor"),
]


@pytest.mark.parametrize(("fn", "hint"), WRONG, ids=[h for _, h in WRONG])
def test_each_wrong_answer_gets_its_hint(capsys, fn, hint):
    for seed in range(5):
        result = check_induction_score(fn, seed=seed)
        out = capsys.readouterr().out
        assert result.status == "wrong" and hint in result.hint, (seed, out)
        assert out.startswith("[try again] induction_score") and result.case, out


def test_the_first_case_tells_every_named_mistake_from_the_others():
    """A recognised mistake is named on the first case, where no two of them give the same numbers."""
    for seed in range(20):
        _, weights, period = _cases(seed)[0]
        values = [wrong for wrong, _ in _mistakes(weights.double(), period)] + [_reference(weights.double(), period)]
        for a in range(len(values)):
            for b in range(a + 1, len(values)):
                assert not torch.allclose(values[a], values[b], rtol=1e-3, atol=1e-4), (seed, a, b)


def test_an_ambiguous_match_names_no_mistake(capsys):
    """On a perfect induction pattern the transpose and the duplicate-token head both give 0: a wrong
    answer that only fails there hears neither hint."""
    def only_wrong_on_perfect_heads(weights, period):
        right = with_diagonal(weights, period)
        return torch.zeros_like(right) if bool((right == 1).all()) else right

    result = check_induction_score(only_wrong_on_perfect_heads, seed=0)
    assert result.status == "wrong" and "scores differ" in result.hint, result.hint
    assert "transpose" not in result.hint and "earlier occurrence of" not in result.hint
    capsys.readouterr()


def test_an_answer_of_zeros_hears_no_named_mistake(capsys):
    result = check_induction_score(lambda weights, period: torch.zeros(weights.shape[:-2]), seed=0)
    assert result.status == "wrong" and "scores differ" in result.hint, result.hint
    capsys.readouterr()


def test_the_stub_is_not_yet_and_a_crash_is_the_students(capsys):
    def induction_score(weights, period):
        raise NotImplementedError("Your turn: replace this line with your code.")

    assert check_induction_score(induction_score).status == "not done"
    result = check_induction_score(lambda weights, period: weights @ torch.ones(3))
    assert result.status == "crashed" and result.case.startswith("random weights")
    assert capsys.readouterr().out.count("\n") == 2  # one line per check


def test_the_cases_are_attention_with_every_boundary():
    periods = set()
    for seed in range(30):
        for k, (where, weights, period) in enumerate(_cases(seed)):
            T = weights.shape[-1]
            assert weights.shape[-2] == T and 1 <= period < T, where
            torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=weights.dtype))
            assert k == 0 or bool((weights.triu(1) == 0).all()), where  # after the first: no weight on a later key
            periods.add(period if period in (1, 2) else ("T-1" if period == T - 1 else "other"))
    assert periods == {1, 2, "T-1", "other"}


def test_an_answer_that_only_calls_the_course_function_is_told_to_write_it():
    def induction_score(weights, period):
        return course_induction_score(weights, period)

    result = check_induction_score(induction_score, seed=0)
    assert result.status == "wrong" and "course's own induction_score" in result.message


# ---------------------------------------------------------------------------------------------
# Tasks 2 and 3: the QK and OV circuits.



def qk_in_one_go(xq, xk, wq, wk):
    return xq @ wq @ wk.T @ xk.T


def qk_einsum(xq, xk, wq, wk):
    return torch.einsum("nd,de,mf,fe->nm", xq, wq, xk, wk)


def qk_numpy(xq, xk, wq, wk):
    return (xq.numpy() @ wq.numpy()) @ (xk.numpy() @ wk.numpy()).T


def ov_right_to_left(x, wv, wo, wu):
    return x @ (wv @ (wo @ wu))


def ov_numpy(x, wv, wo, wu):
    return x.numpy() @ wv.numpy() @ wo.numpy() @ wu.numpy()


@pytest.mark.parametrize("fn", [qk_in_one_go, qk_einsum, qk_numpy], ids=lambda fn: fn.__name__)
def test_right_qk_circuits_pass(capsys, fn):
    for seed in SEEDS:
        assert check_qk_circuit(fn, seed=seed).status == "correct", capsys.readouterr().out


@pytest.mark.parametrize("fn", [ov_right_to_left, ov_numpy], ids=lambda fn: fn.__name__)
def test_right_ov_circuits_pass(capsys, fn):
    for seed in SEEDS:
        assert check_ov_circuit(fn, seed=seed).status == "correct", capsys.readouterr().out


QK_WRONG = [
    (lambda xq, xk, wq, wk: (xk @ wk) @ (xq @ wq).T, "transpose"),
    (lambda xq, xk, wq, wk: (xq @ wq) @ (xk @ wk).T / wq.shape[1] ** 0.5, "1/sqrt(d_k)"),
    (lambda xq, xk, wq, wk: torch.softmax((xq @ wq) @ (xk @ wk).T, -1), "no softmax"),
    (lambda xq, xk, wq, wk: (xq @ wq) @ (xk @ wq).T, "used W_Q for both"),
    (lambda xq, xk, wq, wk: (xq @ wk) @ (xk @ wq).T, "swapped"),
    (lambda xq, xk, wq, wk: ((xq @ wq) @ (xk @ wk).T).nan_to_num(0.0), "NaN"),
]
OV_WRONG = [
    (lambda x, wv, wo, wu: (x @ wv @ wo @ wu).T, "transpose"),
    (lambda x, wv, wo, wu: torch.softmax(x @ wv @ wo @ wu, -1), "no softmax"),
    (lambda x, wv, wo, wu: x @ wv @ wu, "through W_O"),
    (lambda x, wv, wo, wu: x @ wo @ wv @ wu, "W_V comes first"),
    (lambda x, wv, wo, wu: (x @ wv @ wo @ wu).nan_to_num(0.0), "NaN"),
]


@pytest.mark.parametrize("check, wrong, words", [(check_qk_circuit, *w) for w in QK_WRONG]
                         + [(check_ov_circuit, *w) for w in OV_WRONG], ids=lambda v: v if isinstance(v, str) else "")
def test_circuit_mistakes_get_their_hint(capsys, check, wrong, words):
    for seed in SEEDS:
        result = check(wrong, seed=seed)
        assert result.status == "wrong" and words in result.hint, (seed, capsys.readouterr().out)


def test_circuit_checkers_refuse_in_place_changes_and_wrong_types(capsys):
    def in_place(xq, xk, wq, wk):
        return (xq.mul_(1.0) @ wq) @ (xk.add_(1.0) @ wk).T

    assert "in place" in check_qk_circuit(in_place, seed=0).hint
    assert "torch.Tensor" in check_ov_circuit(lambda x, wv, wo, wu: (x @ wv @ wo @ wu).tolist(), seed=0).hint
    assert check_qk_circuit(lambda *a: (_ for _ in ()).throw(NotImplementedError()), seed=0).status == "not done"


def test_the_circuit_references_are_the_course_functions():
    from course_utils.helpers.checkers.induction_heads import _circuit_cases, _ov_reference, _qk_reference

    for seed in range(5):
        for _, args in _circuit_cases(seed, ov=False):
            torch.testing.assert_close(_qk_reference(*args), qk_circuit(*args), equal_nan=True)
        for _, args in _circuit_cases(seed, ov=True):
            torch.testing.assert_close(_ov_reference(*args), ov_circuit(*args), equal_nan=True)


def test_the_circuits_reject_bad_shapes():
    with pytest.raises(ValueError, match="W_Q and W_K"):
        qk_circuit(torch.ones(3, 4), torch.ones(5, 4), torch.ones(4, 2), torch.ones(4, 3))
    with pytest.raises(ValueError, match="W_V"):
        ov_circuit(torch.ones(3, 4), torch.ones(4, 2), torch.ones(3, 4), torch.ones(4, 7))


# --- review cases: held-out wrong answers and the valid answers the task allows






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
