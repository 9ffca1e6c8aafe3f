"""The checker of lesson 02's offset_share: cases found in review (issue 24), each rebuilt from its description, and
the hidden cases that now cover the whole class of each mistake."""


import math

import numpy as np
import pytest
import torch
from checker_testing import all_wrong as _all_wrong

from course_utils.helpers.checkers import check_offset_share

SEEDS = (0, 1)


def test_02_a_mean_without_the_zero_weight_queries_is_not_called_argmax(capsys):
    def nonzero_only(w, k):
        values = w.diagonal(k)
        return values[values > 0].mean()

    _all_wrong(check_offset_share, nonzero_only, "zero weight", absent=("argmax", "STRONGEST"))


# ------------------------------------------------------------------ the first bank of right and wrong answers


TEN_SEEDS = range(10)


def share_diagonal(weights, offset):
    return weights.diagonal(offset).mean()  # a 0-d tensor


def share_loop(weights, offset):
    n, m = weights.shape
    values = [weights[i, i + offset].item() for i in range(n) if 0 <= i + offset < m]
    return sum(values) / len(values)  # a Python float


def share_numpy(weights, offset):
    return np.diagonal(weights.numpy(), offset).mean()  # a NumPy float32 scalar


def share_trace(weights, offset):
    w = weights.double().numpy()
    n, m = w.shape
    count = min(n, m - offset) - max(0, -offset)
    return np.float64(np.trace(w, offset) / count)


def share_mask(weights, offset):
    n, m = weights.shape
    i = torch.arange(n)[:, None]
    j = torch.arange(m)[None, :]
    on_offset = j - i == offset
    return ((weights * on_offset).sum() / on_offset.sum()).reshape(1)  # a one-element tensor


def share_index(weights, offset):
    n, m = weights.shape
    rows = torch.arange(max(0, -offset), min(n, m - offset))
    return weights[rows, rows + offset].double().mean().item()


@pytest.mark.parametrize("fn", [share_diagonal, share_loop, share_numpy, share_trace, share_mask, share_index])
def test_right_answers_pass_on_10_seeds(capsys, fn):
    for seed in TEN_SEEDS:
        result = check_offset_share(fn, seed=seed)
        out = capsys.readouterr().out
        assert result.status == "correct", (seed, out)
        assert out.startswith("[correct] offset_share")


def test_hand_worked_values_of_a_right_answer():
    stripe = torch.zeros(4, 4)
    stripe[1:, :-1] = torch.eye(3)
    stripe[0] = 0.25
    assert share_loop(stripe, -1) == 1.0  # queries 1-3 each put all their weight on the previous key
    assert share_loop(stripe, 0) == pytest.approx(0.25 / 4)
    assert share_loop(stripe, 3) == 0.25  # only query 0 has a key 3 ahead


def sum_over(weights, offset):
    return weights.diagonal(offset).sum()


def wrong_sign(weights, offset):
    return weights.diagonal(-offset).mean()


def over_all_queries(weights, offset):
    return weights.diagonal(offset).sum() / weights.shape[0]


def over_all_keys(weights, offset):
    return weights.diagonal(offset).sum() / weights.shape[1]


def over_square_count(weights, offset):
    return weights.diagonal(offset).sum() / (weights.shape[0] - abs(offset))


def strongest_key(weights, offset):
    n, m = weights.shape
    rows = [i for i in range(n) if 0 <= i + offset < m]
    return sum(int(weights[i].argmax()) == i + offset for i in rows) / len(rows)


def rolled(weights, offset):
    return torch.roll(weights, -offset, dims=1).diagonal().mean()


def modulo(weights, offset):
    n, m = weights.shape
    return sum(weights[i, (i + offset) % m].item() for i in range(n)) / n


def percent(weights, offset):
    return 100 * weights.diagonal(offset).mean()


def per_query(weights, offset):
    return weights.diagonal(offset)


def in_place(weights, offset):
    weights[weights == 0] = 1e-12
    return weights.diagonal(offset).mean()


WRONG = [
    (sum_over, "summed the weights over the queries"),
    (wrong_sign, "runs the wrong way"),
    (over_all_queries, "you divided by n ="),
    (over_all_keys, "you divided by m ="),
    (over_square_count, "you divided by n - |offset|"),
    (strongest_key, "STRONGEST key (argmax)"),
    (rolled, "wrapped around"),
    (modulo, "wrapped around"),
    (percent, "not a percentage"),
    (per_query, "one per query: return their MEAN"),
    (in_place, "changed the weights you passed in"),
    (lambda w, k: "0.5", "should be one number"),
    (lambda w, k: w.diagonal(k).mean() + 0.01, "expected"),
]


@pytest.mark.parametrize("fn, hint", WRONG, ids=[h for _, h in WRONG])
def test_each_wrong_answer_gets_its_hint(capsys, fn, hint):
    for seed in range(6):
        result = check_offset_share(fn, seed=seed)
        out = capsys.readouterr().out
        square = hint == "you divided by m =" and "you divided by n = m =" in result.hint  # n = m: the same value
        assert result.status == "wrong" and (hint in result.hint or square), (seed, out)
        assert out.startswith("[try again] offset_share") and "Failing case:" in out, out
        assert result.case and "seed" not in out and result.seed == seed


def test_the_failing_case_is_named():
    result = check_offset_share(over_all_queries, seed=0)
    assert result.case == "a previous-token stripe (5, 5) whose row 0 is uniform, offset -1"


def test_a_fault_only_in_hidden_random_cases_is_caught_and_named(capsys):
    def right_on_small(weights, offset):  # right on the fixed cases, wrong once a matrix has 9 or more rows
        value = weights.diagonal(offset).mean()
        return value if weights.shape[0] < 9 else value + 0.2

    statuses = {check_offset_share(right_on_small, seed=s).status for s in range(30)}
    out = capsys.readouterr().out
    assert statuses == {"correct", "wrong"}
    assert "hidden weights (" in out


def loop_over_keys(weights, offset):
    n, m = weights.shape
    values = [weights[i, i + offset] for i in range(m) if 0 <= i + offset < m]  # i runs past the last query if m > n
    return sum(values) / len(values)


def test_a_crash_is_the_students_error_with_the_case(capsys):
    result = check_offset_share(loop_over_keys, seed=0)
    out = capsys.readouterr().out
    assert result.status == "crashed" and result.error.startswith("IndexError"), out
    assert out.startswith("[try again] offset_share: your code raised IndexError")
    assert "n = 3 queries < m = 8 keys" in result.case
    assert "weights.shape" in out  # the tip


def test_the_stub_is_not_yet(capsys):
    def offset_share(weights, offset):
        raise NotImplementedError("Your turn: replace this line with your code.")

    result = check_offset_share(offset_share)
    out = capsys.readouterr().out
    assert result.status == "not done" and not result
    assert out.startswith("[not yet] offset_share: not implemented yet")


def test_the_hidden_cases_cover_shapes_offsets_and_row_kinds():
    from course_utils.helpers.checkers.attention_heatmaps import (
        _fixed_cases,
        _random_cases,
    )

    cases = [c for s in range(20) for c in _random_cases(s)] + _fixed_cases()
    shapes = {tuple(w.shape) for _, w, _ in cases}
    assert any(n < m for n, m in shapes) and any(n > m for n, m in shapes) and len(shapes) > 20
    for _, w, offset in cases:
        n, m = w.shape
        assert -(n - 1) <= offset <= m - 1  # some query has the key i + offset
        assert torch.allclose(w.sum(-1), torch.ones(n))
    rows = [row for _, w, _ in cases for row in w]
    assert any(row.max() == 1 for row in rows)  # one-hot rows
    assert any(row.topk(2).values[0] == row.topk(2).values[1] and row.max() < 1 for row in rows)  # ties
    assert any(torch.all(row == row[0]) for row in rows)  # uniform rows
    assert not any(math.isnan(row.sum().item()) for row in rows)
