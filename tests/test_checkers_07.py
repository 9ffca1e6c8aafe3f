"""Checkers of notebook 07 (head patterns) against the reference answers and banks of known-wrong answers.

Every wrong answer must be rejected (return False) with a hint that names its mistake.
Expected values in the sanity tests are worked out by hand, not taken from the checkers.
"""

import math

import numpy as np
import pytest
import torch
from checker_testing import stub as _stub

from course_utils.helpers.checkers import (
    check_classify_heads,
    check_head_entropy,
    check_head_mean_distance,
    head_patterns,
)

# ---------------------------------------------------------------------------------------------
# Reference answers, written independently of the checkers (loops over rows, plain Python).


def entropy_loops(weights: torch.Tensor) -> torch.Tensor:
    B, h, n, m = weights.shape
    out = torch.zeros(h)
    for head in range(h):
        total = 0.0
        for b in range(B):
            for i in range(n):
                total -= sum(p * math.log(p) for p in weights[b, head, i].tolist() if p > 0)
        out[head] = total / (B * n)
    return out


def distance_loops(weights: torch.Tensor) -> torch.Tensor:
    B, h, n, m = weights.shape
    out = torch.zeros(h)
    for head in range(h):
        total = sum(weights[b, head, i, j].item() * abs(i - j) for b in range(B) for i in range(n) for j in range(m))
        out[head] = total / (B * n)
    return out


def entropy_xlogy(w):
    return -torch.xlogy(w, w).sum(-1).mean(dim=(0, 2))


def entropy_clamped(w):
    return -(w * w.clamp_min(1e-12).log()).sum(-1).mean(dim=(0, 2))


def distance_vectorised(w):
    n = w.shape[-1]
    pos = torch.arange(n)
    return (w * (pos[:, None] - pos[None, :]).abs()).sum(-1).mean(dim=(0, 2))


def classify_formula(distance, n, local_below=0.5, global_above=0.75):
    uniform = (n * n - 1) / (3 * n)
    labels = []
    for d in distance.tolist():
        r = d / uniform
        labels.append("local" if r < local_below else "global" if r > global_above else "mixed")
    return labels


def classify_numeric(distance, n, local_below=0.5, global_above=0.75):
    uniform = distance_vectorised(torch.full((1, 1, n, n), 1.0 / n)).item()  # measured, not the formula
    ratio = distance / uniform
    return ["local" if r < local_below else ("global" if r > global_above else "mixed") for r in ratio]


def test_independent_references_agree_on_hand_examples():
    one_hot = torch.tensor([[[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]])  # (1, 1, 3, 3)
    assert entropy_loops(one_hot).item() == 0.0
    assert distance_loops(one_hot).item() == pytest.approx((1 + 1 + 0) / 3)
    uniform = torch.full((2, 1, 4, 4), 0.25)
    assert entropy_loops(uniform).item() == pytest.approx(math.log(4))
    assert distance_loops(uniform).item() == pytest.approx(15 / 12)  # (n^2 - 1) / (3n) for n = 4
    assert classify_formula(torch.tensor([0.2, 0.8, 1.2]), 4) == ["local", "mixed", "global"]


# ---------------------------------------------------------------------------------------------
# head_entropy


def _plain_log(w):
    return -(w * w.log()).sum(-1).mean(dim=(0, 2))


ENTROPY_WRONG = {
    "log2": (lambda w: -(w * torch.log2(w.clamp_min(1e-30))).sum(-1).mean(dim=(0, 2)), "bits"),
    "log10": (lambda w: -(w * torch.log10(w.clamp_min(1e-30))).sum(-1).mean(dim=(0, 2)), "base 10"),
    "no minus": (lambda w: torch.xlogy(w, w).sum(-1).mean(dim=(0, 2)), "minus sign"),
    "nan from 0 log 0": (_plain_log, "0 * log 0"),
    "mean over keys": (lambda w: -torch.xlogy(w, w).mean(-1).mean(dim=(0, 2)), "mean over the keys"),
    "sum over queries": (lambda w: -torch.xlogy(w, w).sum(-1).sum(-1).mean(0), "summed over the queries"),
    "sum over batch": (lambda w: -torch.xlogy(w, w).sum(-1).mean(-1).sum(0), "summed over the batch"),
    "per query": (lambda w: -torch.xlogy(w, w).sum(-1).mean(dim=(0, 1)), "per query position"),
    "per batch item": (lambda w: -torch.xlogy(w, w).sum(-1).mean(dim=(1, 2)), "per batch item"),
    "forgot batch mean": (lambda w: -torch.xlogy(w, w).sum(-1).mean(-1), "average over the batch"),
    "forgot query mean": (lambda w: -torch.xlogy(w, w).sum(-1).mean(0), "average over the queries"),
    "one number": (lambda w: -torch.xlogy(w, w).sum(-1).mean(), "single number"),
    "normalised": (lambda w: -torch.xlogy(w, w).sum(-1).mean(dim=(0, 2)) / math.log(w.shape[-1]), "normalised"),
    "entropy of mean pattern": (
        lambda w: -torch.xlogy(w.mean(dim=(0, 2)), w.mean(dim=(0, 2))).sum(-1),
        "AVERAGE attention pattern",
    ),
    "in place": (lambda w: -(w * w.masked_fill_(w == 0, 1.0).log()).sum(-1).mean(dim=(0, 2)), "changed its input weights"),
    "list": (lambda w: (-torch.xlogy(w, w).sum(-1).mean(dim=(0, 2))).tolist(), "returned a Python list"),
    "numpy": (lambda w: (-torch.xlogy(w, w).sum(-1).mean(dim=(0, 2))).numpy(), "returned a NumPy array"),
}


@pytest.mark.parametrize("fn", [entropy_xlogy, entropy_clamped], ids=["xlogy", "clamped log"])
def test_head_entropy_accepts_correct_answers(fn, capsys):
    assert check_head_entropy(fn).status == "correct"
    assert "[correct] head_entropy" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(ENTROPY_WRONG))
def test_head_entropy_rejects_known_mistakes(name, capsys):
    fn, hint = ENTROPY_WRONG[name]
    assert not check_head_entropy(fn)
    out = capsys.readouterr().out
    assert out.startswith("[try again] head_entropy:"), out
    assert hint in out, out


def test_head_entropy_reference_matches_loops_on_checker_like_inputs():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(2, 3, 4, 4, generator=g).softmax(-1)
    w[:, 0] = torch.eye(4)
    torch.testing.assert_close(entropy_xlogy(w), entropy_loops(w))


# ---------------------------------------------------------------------------------------------
# head_mean_distance


def _offset(w, signed=False):
    n = w.shape[-1]
    pos = torch.arange(n)
    d = (pos[:, None] - pos[None, :]).float()
    return d if signed else d.abs()


DISTANCE_WRONG = {
    "signed i - j": (lambda w: (w * _offset(w, True)).sum(-1).mean(dim=(0, 2)), "signed distance i - j"),
    "signed j - i": (lambda w: (w * -_offset(w, True)).sum(-1).mean(dim=(0, 2)), "signed distance j - i"),
    "unweighted": (lambda w: _offset(w).mean().repeat(w.shape[1]), "without the attention weights"),
    "mean over keys": (lambda w: (w * _offset(w)).mean(-1).mean(dim=(0, 2)), "mean over the keys"),
    "fraction of max": (lambda w: (w * _offset(w)).sum(-1).mean(dim=(0, 2)) / (w.shape[-1] - 1), "fraction"),
    "squared": (lambda w: (w * _offset(w) ** 2).sum(-1).mean(dim=(0, 2)), "squared"),
    "argmax only": (
        lambda w: (w.argmax(-1) - torch.arange(w.shape[-2])).abs().float().mean(dim=(0, 2)),
        "most-attended key",
    ),
    "key position": (lambda w: (w * torch.arange(w.shape[-1])).sum(-1).mean(dim=(0, 2)), "key positions j"),
    "sum over queries": (lambda w: (w * _offset(w)).sum(-1).sum(-1).mean(0), "summed over the queries"),
    "sum over batch": (lambda w: (w * _offset(w)).sum(-1).mean(-1).sum(0), "summed over the batch"),
    "per query": (lambda w: (w * _offset(w)).sum(-1).mean(dim=(0, 1)), "per query position"),
    "forgot query mean": (lambda w: (w * _offset(w)).sum(-1).mean(0), "average over the queries"),
    "forgot batch mean": (lambda w: (w * _offset(w)).sum(-1).mean(-1), "average over the batch"),
    "hard-coded n": (lambda w: (w * (torch.arange(12)[:, None] - torch.arange(12)).abs()).sum(-1).mean(dim=(0, 2)),
                     "don't hard-code"),
    "list": (lambda w: (w * _offset(w)).sum(-1).mean(dim=(0, 2)).tolist(), "returned a Python list"),
}


@pytest.mark.parametrize("fn", [distance_vectorised, lambda w: distance_loops(w)], ids=["vectorised", "loops"])
def test_head_mean_distance_accepts_correct_answers(fn, capsys):
    assert check_head_mean_distance(fn).status == "correct"
    assert "[correct] head_mean_distance" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(DISTANCE_WRONG))
def test_head_mean_distance_rejects_known_mistakes(name, capsys):
    fn, hint = DISTANCE_WRONG[name]
    assert not check_head_mean_distance(fn)
    out = capsys.readouterr().out
    assert out.startswith("[try again] head_mean_distance:"), out
    assert hint in out, out


# ---------------------------------------------------------------------------------------------
# classify_heads


def _rule(reference, lo_fixed=None, hi_fixed=None, names=("local", "mixed", "global"), split=None):
    def fn(distance, n, local_below=0.5, global_above=0.75):
        lo = local_below if lo_fixed is None else lo_fixed
        hi = global_above if hi_fixed is None else hi_fixed
        labels = []
        for d in distance.tolist():
            r = d / reference(n)
            if split is not None:
                labels.append(names[0] if r < (lo if split == "lo" else hi) else names[2])
            else:
                labels.append(names[0] if r < lo else names[2] if r > hi else names[1])
        return labels

    return fn


def uniform(n):
    return (n * n - 1) / (3 * n)


CLASSIFY_WRONG = {
    "swapped": (_rule(uniform, names=("global", "mixed", "local")), "swapped"),
    "two labels at local_below": (_rule(uniform, split="lo"), "only two labels"),
    "two labels at global_above": (_rule(uniform, split="hi"), "split at global_above"),
    "raw distance": (_rule(lambda n: 1.0), "raw distances"),
    "n / 3": (_rule(lambda n: n / 3), "n / 3"),
    "n / 2": (_rule(lambda n: n / 2), "n / 2"),
    "(n - 1) / 2": (_rule(lambda n: (n - 1) / 2), "(n - 1) / 2"),
    "(n + 1) / 3": (_rule(lambda n: (n + 1) / 3), "(n + 1) / 3"),
    "ignores n": (_rule(lambda n: uniform(12)), "ignores n"),
    "hard-coded thresholds": (_rule(uniform, lo_fixed=0.5, hi_fixed=0.75), "hard-coded"),
    "tensor of bools": (lambda d, n, local_below=0.5, global_above=0.75: d / uniform(n) < local_below, "list of strings"),
    "capitalised": (lambda d, n, local_below=0.5, global_above=0.75:
                    [s.capitalize() for s in classify_formula(d, n, local_below, global_above)], "unknown label"),
    "one label too few": (lambda d, n, local_below=0.5, global_above=0.75:
                          classify_formula(d, n, local_below, global_above)[:-1], "one label per head"),
    "reference off by 10% (generic hint)": (lambda d, n, local_below=0.5, global_above=0.75:
                          classify_formula(d * 0.9, n, local_below, global_above), "should be"),
}


@pytest.mark.parametrize("fn", [classify_formula, classify_numeric], ids=["formula", "measured uniform distance"])
def test_classify_heads_accepts_correct_answers(fn, capsys):
    assert check_classify_heads(fn).status == "correct"
    assert "[correct] classify_heads" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(CLASSIFY_WRONG))
def test_classify_heads_rejects_known_mistakes(name, capsys):
    fn, hint = CLASSIFY_WRONG[name]
    assert not check_classify_heads(fn)
    out = capsys.readouterr().out
    assert out.startswith("[try again] classify_heads:"), out
    assert hint in out, out


# ---------------------------------------------------------------------------------------------
# Stubs and crashes


@pytest.mark.parametrize("checker", [check_head_entropy, check_head_mean_distance, check_classify_heads])
def test_stub_is_not_implemented_yet(checker, capsys):
    assert not checker(_stub)
    out = capsys.readouterr().out
    assert out.startswith("[not yet]") and "not implemented yet" in out


def test_a_crash_is_reported_without_traceback(capsys):
    assert not check_head_entropy(lambda w: w @ np.ones(3))
    out = capsys.readouterr().out
    assert out.startswith("[try again] head_entropy:") and "raised" in out and "Traceback" not in out


# --- found in review (issue 24): n != m for the entropy, and the shape in the hint ---------------------------


def test_07_every_entropy_case_has_n_different_from_m():
    for seed in range(10):
        assert all(w.shape[-2] != w.shape[-1] for w in head_patterns._entropy_inputs(seed))


def test_07_summing_over_the_queries_instead_of_the_keys_fails_by_name(capsys):
    for seed in (0, 1):
        result = check_head_entropy(lambda w: -torch.xlogy(w, w).sum(-2).mean(-1).mean(0), seed=seed)
        assert result.status == "wrong" and "averaged over the keys" in result.message, result.message


def test_07_the_shape_hint_prints_the_real_shape(capsys):
    result = check_head_entropy(lambda w: -torch.xlogy(w, w).sum(-1).mean(0), seed=0)  # (h, n): one value per query
    B, h, n, m = head_patterns._entropy_inputs(0)[0].shape
    assert f"({B}, {h}, {n}, {m}) (B, h, n, m)" in result.hint and n != m
