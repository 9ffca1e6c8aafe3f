"""The shared judging of every checker (``helpers/checkers/compare.py``, ``report.py``), found in review
(issue 24): a right answer in another container passes where the task allows it, a right answer in an order
the task does not allow is told the order, and a function unfinished for one case is told which case."""

import math

import numpy as np
import torch

from course_utils.helpers.checkers import (
    check_causal_mask,
    check_classify_heads,
    check_cross_attention_shapes,
    check_peak_offsets,
    check_slopes,
)

SEEDS = (0, 1)


def _verdicts(check, answer, seeds=SEEDS):
    return [check(answer, seed=s) for s in seeds]


def _all_wrong(check, answer, words, status="wrong", absent=()):
    for result in _verdicts(check, answer):
        assert result.status == status and words in result.message, result.message
        assert not any(w in result.message for w in absent), result.message
        assert "seed" not in result.message


def _slopes(T, t):
    return [math.log(b / a) / math.log(T1 / T0) for T0, T1, a, b in zip(T, T[1:], t, t[1:])]


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
