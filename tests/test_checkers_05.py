"""Checkers of notebook 05 (causal mask): each accepts a correct answer, says "not implemented yet"
for the stub, and rejects a bank of real student mistakes with a hint that names the mistake."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from checker_testing import stub as _stub

from course_utils.helpers.checkers import (
    check_causal_mask,
    check_leaks_future,
    check_masked_attention,
)

NEG_INF = float("-inf")


def _assert_rejected(capsys, checker, answer, phrase):
    assert not checker(answer)
    printed = capsys.readouterr().out
    assert printed.startswith("[try again]"), printed
    assert phrase.lower() in printed.lower(), printed


# --- causal_mask(n) ----------------------------------------------------------


def mask_loops(n):
    # Written independently of the checker's reference: a double loop over (query, key).
    return torch.tensor([[j <= i for j in range(n)] for i in range(n)], dtype=torch.bool)


CORRECT_MASKS = {
    "loops": mask_loops,
    "tril": lambda n: torch.tril(torch.ones(n, n)).bool(),
    "arange": lambda n: torch.arange(n)[:, None] >= torch.arange(n)[None, :],
    "tril == 1": lambda n: torch.tril(torch.ones(n, n)) == 1,
    "not triu": lambda n: ~torch.ones(n, n, dtype=torch.bool).triu(1),
}

WRONG_MASKS = {  # name: (student answer, phrase the hint must contain)
    "inverted triangle (True = blocked)": (lambda n: torch.ones(n, n, dtype=torch.bool).triu(1), "inverted triangle"),
    "upper triangle with diagonal": (lambda n: torch.ones(n, n, dtype=torch.bool).triu(), "upper triangle"),
    "transposed": (lambda n: mask_loops(n).T, "upper triangle"),
    "diagonal excluded": (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1), "diagonal excluded"),
    "one step of future": (lambda n: torch.ones(n, n, dtype=torch.bool).tril(1), "tril(diagonal=1)"),
    "all ones": (lambda n: torch.ones(n, n, dtype=torch.bool), "all ones"),
    "all zeros": (lambda n: torch.zeros(n, n, dtype=torch.bool), "all False"),
    "only the diagonal": (lambda n: torch.eye(n, dtype=torch.bool), "only the diagonal"),
    "float 0/1 mask": (lambda n: torch.tril(torch.ones(n, n)), "float mask"),
    "float64 via numpy": (lambda n: torch.from_numpy(np.tril(np.ones((n, n)))), "float mask"),
    "additive 0/-inf mask": (
        lambda n: torch.zeros(n, n).masked_fill(~mask_loops(n), NEG_INF), "additive form"),
    "int 0/1 mask": (lambda n: torch.tril(torch.ones(n, n, dtype=torch.long)), "int mask 0/1"),
    "uint8 0/1 mask": (lambda n: torch.tril(torch.ones(n, n, dtype=torch.uint8)), "int mask 0/1"),
    "int mask inverted with ~": (lambda n: ~torch.tril(torch.ones(n, n, dtype=torch.long)), "should be torch.bool"),
    "wrong size n+1": (lambda n: mask_loops(n + 1), "wrong size"),
    "flat (n*n,)": (lambda n: mask_loops(n).flatten(), "wrong size"),
    "extra batch axis (1, n, n)": (lambda n: mask_loops(n)[None], "wrong size"),
    "ignoring n": (lambda n: mask_loops(4), "ignoring n"),
    "n=1 squeezed to shape ()": (lambda n: mask_loops(n).squeeze(), "n=1 edge case"),
    "python list": (lambda n: [[j <= i for j in range(n)] for i in range(n)], "Python list"),
    "numpy array": (lambda n: np.tril(np.ones((n, n), dtype=bool)), "NumPy array"),
    "row 0 missed by a loop from 1": (
        lambda n: torch.tensor([[0 < i and j <= i for j in range(n)] for i in range(n)], dtype=torch.bool),
        "causal_mask(8)[0, 0] is False, expected True"),
}


@pytest.mark.parametrize("name", CORRECT_MASKS)
def test_causal_mask_accepts_correct_answers(capsys, name):
    assert check_causal_mask(CORRECT_MASKS[name]).status == "correct"
    assert capsys.readouterr().out.startswith("[correct] causal_mask")


def test_causal_mask_stub_is_not_implemented(capsys):
    assert not check_causal_mask(_stub)
    assert "not implemented yet" in capsys.readouterr().out


@pytest.mark.parametrize("name", WRONG_MASKS)
def test_causal_mask_rejects_mistake_with_hint(capsys, name):
    answer, phrase = WRONG_MASKS[name]
    _assert_rejected(capsys, check_causal_mask, answer, phrase)


def test_causal_mask_bank_size():
    assert len(WRONG_MASKS) >= 20


# --- masked_attention(Q, K, V, mask) ------------------------------------------


def attention_loops(Q, K, V, mask):
    # Independent reference: one query at a time, softmax written out, blocked keys skipped.
    out, weights = torch.zeros(*Q.shape[:-1], V.shape[-1]), torch.zeros(*Q.shape[:-1], K.shape[-2])
    mask = mask.expand(weights.shape)
    for idx in np.ndindex(*Q.shape[:-1]):
        lead = idx[:-1]
        allowed = [j for j in range(K.shape[-2]) if mask[idx][j]]
        s = {j: float(Q[idx] @ K[lead + (j,)]) / math.sqrt(Q.shape[-1]) for j in allowed}
        top = max(s.values())
        z = sum(math.exp(v - top) for v in s.values())
        for j in allowed:
            weights[idx + (j,)] = math.exp(s[j] - top) / z
        out[idx] = weights[idx] @ V[lead]
    return out, weights


def attention_masked_fill(Q, K, V, mask):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    weights = torch.softmax(scores.masked_fill(mask == 0, -1e9), dim=-1)
    return weights @ V, weights


def attention_torch(Q, K, V, mask):
    # F.scaled_dot_product_attention gives the output; the weights come from the same formula.
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    scores = (Q / math.sqrt(Q.shape[-1])) @ K.mT
    return out, scores.masked_fill(~mask, torch.finfo(Q.dtype).min).softmax(-1)


def attention_renormalised(Q, K, V, mask):
    # Mask after the softmax, then renormalise: mathematically the same weights.
    w = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1) * mask
    w = w / w.sum(-1, keepdim=True)
    return w @ V, w


def _attention(scores_fn=None, scale=None, fill=NEG_INF, dim=-1, invert=False, order="before", out_fn=None):
    """Build a student-style attention with one mistake switched on."""

    def fn(Q, K, V, mask):
        raw = scores_fn(Q, K) if scores_fn else Q @ K.transpose(-2, -1)
        scores = raw / (scale(Q, K, V) if scale else math.sqrt(Q.shape[-1]))
        blocked = mask if invert else ~mask
        if order == "before":
            weights = torch.softmax(scores.masked_fill(blocked, fill), dim=dim)
        elif order == "ignored":
            scores.masked_fill(blocked, fill)  # result thrown away
            weights = torch.softmax(scores, dim=dim)
        elif order == "after":
            weights = torch.softmax(scores, dim=dim) * mask
        elif order == "added":
            weights = torch.softmax(scores + mask, dim=dim)
        elif order == "multiplied":
            weights = torch.softmax(scores * mask, dim=dim)
        out = out_fn(weights, V) if out_fn else weights @ V
        return out, weights

    return fn


def attention_scaled_after_softmax(Q, K, V, mask):
    w = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, NEG_INF), dim=-1) / math.sqrt(Q.shape[-1])
    return w @ V, w


def attention_in_place_scaling(Q, K, V, mask):
    Q /= math.sqrt(Q.shape[-1])
    w = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, NEG_INF), dim=-1)
    return w @ V, w


def attention_K_dot_T(Q, K, V, mask):
    with warnings.catch_warnings():  # PyTorch warns that .T on more than 2 dimensions is deprecated
        warnings.simplefilter("ignore", UserWarning)
        w = torch.softmax((Q @ K.T / math.sqrt(Q.shape[-1])).masked_fill(~mask, NEG_INF), dim=-1)
    return w @ V, w


def attention_index_assign(Q, K, V, mask):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    scores[~mask] = NEG_INF  # boolean indexing does not broadcast the mask
    w = torch.softmax(scores, dim=-1)
    return w @ V, w


CORRECT_ATTENTION = {
    "loops": attention_loops,
    "masked_fill -1e9": attention_masked_fill,
    "torch": attention_torch,
    "renormalised after softmax": attention_renormalised,
    "scale Q first": _attention(scores_fn=lambda Q, K: (Q / math.sqrt(Q.shape[-1])) @ K.mT, scale=lambda *a: 1.0),
}

WRONG_ATTENTION = {
    "no scaling": (_attention(scale=lambda Q, K, V: 1.0), "no scaling"),
    "divided by d_k": (_attention(scale=lambda Q, K, V: Q.shape[-1]), "divided the scores by d_k"),
    "scaled by sqrt(d_v)": (_attention(scale=lambda Q, K, V: math.sqrt(V.shape[-1])), "sqrt(d_v"),
    "scaled by sqrt(Q.size(1))": (_attention(scale=lambda Q, K, V: math.sqrt(Q.size(1))), "sqrt(Q.shape[1])"),
    "scaled by sqrt(n)": (_attention(scale=lambda Q, K, V: math.sqrt(Q.shape[-2])), "sqrt(n (the number of queries)"),
    "scaled after the softmax": (attention_scaled_after_softmax, "scaled after the softmax"),
    "softmax over dim=-2": (_attention(dim=-2), "the same as dim=-2"),
    "softmax over dim=1": (_attention(dim=1), "wrong axis (dim=1,"),
    "softmax over dim=0": (_attention(dim=0), "wrong axis (dim=0,"),
    "transposes forgotten (Q @ K)": (_attention(scores_fn=lambda Q, K: Q @ K), "transposes forgotten"),
    "K @ Q^T": (_attention(scores_fn=lambda Q, K: K @ Q.transpose(-2, -1)), "K @ Q^T"),
    "K.T on batched input": (attention_K_dot_T, "K.T reverses EVERY axis"),
    "mask inverted": (_attention(invert=True), "mask inverted"),
    "masked_fill with 0": (_attention(fill=0.0), "instead of -inf"),
    "scores * mask": (_attention(order="multiplied"), "instead of -inf"),
    "masked_fill result not assigned": (_attention(order="ignored"), "returns a NEW tensor"),
    "mask after the softmax": (_attention(order="after"), "after the softmax"),
    "mask added to the scores": (_attention(order="added"), "not additive"),
    "output V @ weights": (_attention(out_fn=lambda w, V: V @ w), "raised RuntimeError"),
    "output forgotten (returns weights twice)": (_attention(out_fn=lambda w, V: w), "output should have shape"),
    "output and weights swapped": (lambda Q, K, V, m: attention_masked_fill(Q, K, V, m)[::-1], "swapped"),
    "only the output returned": (lambda Q, K, V, m: attention_masked_fill(Q, K, V, m)[0], "return a pair"),
    "Q scaled in place": (attention_in_place_scaling, "in place"),
    "boolean index assignment": (attention_index_assign, "masked_fill (it broadcasts the mask)"),
    "output from the wrong rows of V": (
        _attention(out_fn=lambda w, V: w @ V.flip(-2)), "output = weights @ V"),
}


@pytest.mark.parametrize("name", CORRECT_ATTENTION)
def test_masked_attention_accepts_correct_answers(capsys, name):
    assert check_masked_attention(CORRECT_ATTENTION[name]).status == "correct"
    assert capsys.readouterr().out.startswith("[correct] masked_attention")


def test_masked_attention_stub_is_not_implemented(capsys):
    assert not check_masked_attention(_stub)
    assert "not implemented yet" in capsys.readouterr().out


@pytest.mark.parametrize("name", WRONG_ATTENTION)
def test_masked_attention_rejects_mistake_with_hint(capsys, name):
    answer, phrase = WRONG_ATTENTION[name]
    _assert_rejected(capsys, check_masked_attention, answer, phrase)


def test_masked_attention_bank_size():
    assert len(WRONG_ATTENTION) >= 20


def test_loop_reference_agrees_with_torch():
    # The loop reference above is itself checked against PyTorch (with a padding-style mask too).
    g = torch.Generator().manual_seed(0)
    Q, K, V = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 2, generator=g)
    mask = torch.tensor([[[1, 1, 0, 1, 0]], [[1, 1, 1, 1, 1]]], dtype=torch.bool)
    out, w = attention_loops(Q, K, V, mask)
    assert torch.allclose(out, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask), atol=1e-5)
    assert torch.all(w[0, :, [2, 4]] == 0)


# --- leaks_future(attn_fn, x) --------------------------------------------------


def leaks_each_position(attn_fn, x):
    base = attn_fn(x)
    for t in range(1, x.shape[0]):
        x2 = x.clone()
        x2[t] = x2[t] + 1.0
        if not torch.allclose(attn_fn(x2)[:t], base[:t], atol=1e-5, rtol=0):
            return True
    return False


def leaks_whole_future(attn_fn, x):
    # Replace the whole future after t by fresh random numbers; exact comparison.
    base = attn_fn(x)
    for t in range(1, x.shape[0]):
        x2 = torch.cat([x[:t], torch.randn(x.shape[0] - t, x.shape[1])])
        if not torch.equal(attn_fn(x2)[:t], base[:t]):
            return True
    return False


def _leaks(positions=None, compare="before", tol=1e-5, clone=True, in_place=False, answer=lambda leak: leak):
    """Build a student-style leaks_future with one mistake switched on."""

    def fn(attn_fn, x):
        base = attn_fn(x)
        n = x.shape[0]
        for t in positions(n) if positions else range(1, n):
            x2 = x if in_place else (x.clone() if clone else x)
            if in_place or clone:
                x2[t] += 1.0
            else:
                x2 = x  # forgot to change anything: "x2 = x" then compared x with x
            out = attn_fn(x2)
            upto = {"before": t, "including": t + 1, "all": n}[compare]
            if not torch.allclose(out[:upto], base[:upto], atol=tol, rtol=0):
                return answer(True)
        return answer(False)

    return fn


def leaks_tensor_result(attn_fn, x):
    return torch.tensor(leaks_each_position(attn_fn, x))


def leaks_first_token_only(attn_fn, x):
    # Changes token 0 and looks at later outputs: the wrong direction.
    x2 = x.clone()
    x2[0] += 1.0
    return not torch.allclose(attn_fn(x2)[1:], attn_fn(x)[1:])


WRONG_LEAKS = {
    "answers inverted": (_leaks(answer=lambda leak: not leak), "inverted"),
    "compares the changed position too": (_leaks(compare="including"), "says a CAUSAL attention leaks"),
    "compares every output": (_leaks(compare="all"), "says a CAUSAL attention leaks"),
    "changes token 0, checks later outputs": (leaks_first_token_only, "says a CAUSAL attention leaks"),
    "x2 = x, nothing really changed": (_leaks(clone=False), "x2 = x is the same tensor"),
    "only the last token changed": (_leaks(positions=lambda n: [n - 1]), "from token 1 into output 0"),
    "only token 1 changed": (_leaks(positions=lambda n: [1]), "from the LAST token"),
    "loop stops one early": (_leaks(positions=lambda n: range(1, n - 1)), "from the LAST token"),
    "fixed length 4": (_leaks(positions=lambda n: range(1, 4)), "from the LAST token"),
    "tolerance too loose": (_leaks(tol=1e-2), "tolerance is too loose"),
    "changes the caller's x in place": (_leaks(in_place=True), "in place"),
    "returns a tensor": (leaks_tensor_result, "Python bool"),
    "always False": (lambda attn_fn, x: False, "WITHOUT a mask"),
    "always True": (lambda attn_fn, x: True, "says a CAUSAL attention leaks"),
}


def test_leaks_future_bank_size():
    assert len(WRONG_LEAKS) >= 12


@pytest.mark.parametrize("fn", [leaks_each_position, leaks_whole_future], ids=["each", "whole future"])
def test_leaks_future_accepts_correct_answers(capsys, fn):
    assert check_leaks_future(fn).status == "correct"
    assert capsys.readouterr().out.startswith("[correct] leaks_future")


def test_leaks_future_stub_is_not_implemented(capsys):
    assert not check_leaks_future(_stub)
    assert "not implemented yet" in capsys.readouterr().out


@pytest.mark.parametrize("name", WRONG_LEAKS)
def test_leaks_future_rejects_mistake_with_hint(capsys, name):
    answer, phrase = WRONG_LEAKS[name]
    _assert_rejected(capsys, check_leaks_future, answer, phrase)
