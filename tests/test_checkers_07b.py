"""The checker of notebook 07b `induction_score`: held-out wrong answers (none accepted, none called "a bug in the
checker", no hint naming a mistake that was not made) and every valid answer the task allows."""


import pytest
import torch

from course_utils.helpers import checkers
from course_utils.helpers.checkers import induction_heads


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
