"""The worked examples of notebook 01, recomputed by hand (plain Python loops and `math`).

Each expected value is computed here from the definitions, independently of the code under test;
the tests then check (1) that `course_utils` and PyTorch give the same numbers, (2) that the
notebook's stored outputs state these numbers, and (3) that the numbers printed in the lecture
material, which the notebook calls wrong, really differ from them. The documents are named by their
own titles, as in INSTRUCTORS.md's "Where the lecture material is wrong": the theory notes
"Attention Mechanisms" and the slides "The Attention Mechanism".
"""

import json
import math
import re
from pathlib import Path

import pytest
import torch

from course_utils import AdditiveScore, causal_mask, dot_scores, scaled_dot_product_attention

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
# Lesson 01's worked examples now live in 01 and 01b (solutions hold the outputs) and the scores in 04.
NOTEBOOKS = [NOTEBOOK_DIR / "solutions" / "01_scaled_dot_product_attention.ipynb",
             NOTEBOOK_DIR / "solutions" / "01b_scaling_and_masks.ipynb",
             NOTEBOOK_DIR / "04_seq2seq_with_attention.ipynb"]


def softmax(row):
    top = max(row)
    exps = [math.exp(z - top) for z in row]
    return [e / sum(exps) for e in exps]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def attention_by_hand(Q, K, V, scale=True):
    """Weights and outputs as nested lists, one query at a time."""
    d_k = len(Q[0])
    weights, outputs = [], []
    for q in Q:
        scores = [dot(q, k) / (math.sqrt(d_k) if scale else 1.0) for k in K]
        w = softmax(scores)
        weights.append(w)
        outputs.append([sum(w[j] * V[j][c] for j in range(len(V))) for c in range(len(V[0]))])
    return weights, outputs


def t(x):
    return torch.tensor(x, dtype=torch.float64)


@pytest.fixture(scope="module")
def stored_outputs():
    texts = []
    cells = [c for path in NOTEBOOKS for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    for cell in cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append("".join(out["text"]))
    return "\n".join(texts)


def stated(value, digits=4):
    """How NumPy/PyTorch/f-strings print `value` to `digits` decimals (NumPy drops trailing zeros)."""
    text = f"{value:.{digits}f}"
    return {text, text.rstrip("0")}


def assert_stated(outputs, values, digits=4):
    for v in values:
        # a whole number: not part of a longer one (0.991 must not match 0.9919)
        patterns = [rf"(?<![\d.]){re.escape(s)}(?!\d)" for s in stated(v, digits)]
        assert any(re.search(p, outputs) for p in patterns), f"{v:.{digits}f} not in the notebook's outputs"


# --- "Attention Mechanisms" (theory notes), section 4.3: 3 queries x 4 keys ---------------------------------

Q1 = [[1, 0], [0, 1], [1, 1]]
K1 = [[1, 0], [0, 1], [1, 1], [0, 0]]
V1 = [[1, 2], [3, 4], [5, 6], [7, 8]]


def test_notes_3x4_row0_closed_form_and_course_utils():
    a = math.exp(1 / math.sqrt(2))
    expected_row0 = [a / (2 * a + 2), 1 / (2 * a + 2), a / (2 * a + 2), 1 / (2 * a + 2)]
    w, out = attention_by_hand(Q1, K1, V1)
    assert w[0] == pytest.approx(expected_row0, abs=1e-12)
    cu_out, cu_w = scaled_dot_product_attention(t(Q1), t(K1), t(V1))
    torch.testing.assert_close(cu_w, t(w))
    torch.testing.assert_close(cu_out, t(out))


def test_notes_3x4_printed_row_is_wrong_and_notebook_states_the_right_one(stored_outputs):
    w, out = attention_by_hand(Q1, K1, V1)
    printed = [0.31, 0.17, 0.31, 0.20]
    assert abs(sum(printed) - 1) > 0.005  # the printed row does not even sum to 1
    assert [round(x, 2) for x in w[0]] != printed
    assert_stated(stored_outputs, [x for row in w for x in row] + out[0])


# --- "The Attention Mechanism" (slides): 2 tokens -----------------------------------------------------------

Q2 = [[1, 0], [0, 1]]
K2 = [[1, 1], [2, 0]]
V2 = [[0.1, 0.2], [0.3, 0.4]]


def test_slides_two_tokens(stored_outputs):
    w, out = attention_by_hand(Q2, K2, V2)
    assert [round(x, 2) for x in w[0]] == [0.33, 0.67]  # the slides' A agrees
    assert [round(x, 3) for x in out[0]] == [0.234, 0.334]  # and so does its first output row
    cu_out, cu_w = scaled_dot_product_attention(t(Q2), t(K2), t(V2))
    torch.testing.assert_close(cu_w, t(w))
    torch.testing.assert_close(cu_out, t(out))
    assert_stated(stored_outputs, w[0] + w[1])
    assert_stated(stored_outputs, out[1], digits=3)  # the row the slides leave as "..."


# --- "The Attention Mechanism" (slides): "the cat slept" (unscaled dot product) -----------------------------

H = [[1.0, 0.0], [0.0, 1.0], [0.2, 0.1]]
S_T = [0.1, 0.9]


def test_the_cat_slept(stored_outputs):
    w, context = attention_by_hand([S_T], H, H, scale=False)
    w, context = w[0], context[0]
    torch.testing.assert_close(torch.softmax(dot_scores(t([S_T]), t(H)), dim=-1)[0], t(w))
    assert w[2] > w[0]  # "slept" (0.11) outscores "the" (0.10)...
    printed_weights, printed_context = [0.24, 0.54, 0.22], [0.29, 0.56]
    assert printed_weights[2] < printed_weights[0]  # ...but the slide gives it less weight
    assert [round(x, 2) for x in w] != printed_weights
    assert [round(x, 2) for x in context] != printed_context
    assert_stated(stored_outputs, w + context)


# --- "The Attention Mechanism" (slides): Bahdanau term by term ----------------------------------------------


def test_bahdanau_score(stored_outputs):
    W1, W2, v = [[0.1, 0.2], [0.3, 0.4]], [[0.5, 0.6], [0.7, 0.8]], [0.9, 0.1]
    h, s = [2.0, 1.0], [1.0, 3.0]
    U = [dot(W1[r], h) + dot(W2[r], s) for r in range(2)]
    assert U == pytest.approx([2.7, 4.1])
    e = dot(v, [math.tanh(u) for u in U])
    assert round(e, 3) == 0.992  # the slides print 0.991 (tanh rounded before multiplying)

    additive = AdditiveScore(2, 2, 2).double()
    with torch.no_grad():
        additive.W_q.weight.copy_(t(W2))  # W_q acts on the query s_t
        additive.W_k.weight.copy_(t(W1))  # W_k acts on the key h_i
        additive.v.weight.copy_(t([v]))
    assert additive(t([s]), t([h])).item() == pytest.approx(e, abs=1e-12)
    assert_stated(stored_outputs, [e])


# --- "The Attention Mechanism" (slides): softmax numbers of the sqrt(d_k) part and the causal mask ----------


def test_temperature_rows_differ_from_the_slides(stored_outputs):
    logits = [2.0, 1.0, 0.5]
    by_1 = softmax(logits)
    by_4 = softmax([z / 4 for z in logits])
    times_10 = softmax([z * 10 for z in logits])
    assert [round(x, 2) for x in by_1] == [0.63, 0.23, 0.14] != [0.58, 0.21, 0.13]
    assert [round(x, 2) for x in by_4] == [0.41, 0.32, 0.28] != [0.40, 0.30, 0.26]
    assert round(times_10[2] * 1e7) == 3  # slides: 2e-7
    assert_stated(stored_outputs, by_1 + by_4)


def test_dk256_row(stored_outputs):
    raw = [15.5, -16.1, 2.3]
    unscaled = softmax(raw)
    scaled = softmax([z / 16 for z in raw])
    assert unscaled[2] == pytest.approx(math.exp(2.3 - 15.5), rel=1e-5)  # 1.9e-6, slides 5e-6
    assert round(unscaled[2] * 1e6) == 2
    assert [round(x, 2) for x in scaled] == [0.63, 0.09, 0.28]  # slides: [0.64, 0.09, 0.27]
    assert_stated(stored_outputs, scaled)


def test_causal_rows(stored_outputs):
    S = [[2.1, 1.5, 0.4], [0.8, 3.1, 1.2], [1.4, 0.7, 2.5]]
    expected = [softmax(row[: i + 1]) + [0.0] * (2 - i) for i, row in enumerate(S)]
    assert [round(x, 2) for x in expected[2]] == [0.22, 0.11, 0.67]  # slides: [0.21, 0.10, 0.69]
    # course_utils on the scores: Q = S, K = identity, V = identity, d_k = 3 -> undo the scaling
    cu_out, cu_w = scaled_dot_product_attention(t(S) * math.sqrt(3), torch.eye(3, dtype=torch.float64),
                                                torch.eye(3, dtype=torch.float64), causal_mask(3))
    torch.testing.assert_close(cu_w, t(expected))
    assert_stated(stored_outputs, expected[1][:2] + expected[2])
