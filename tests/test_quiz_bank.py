"""The question bank data/quizzes.json, its loader load_quiz, and spot checks of the facts it states."""

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import course_utils.models.data_files as data_module
from course_utils import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from course_utils.helpers.quiz import Question, feedback, load_quiz, static_answers
from course_utils.models.data_files import data_path

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted({p.name.split("_")[0] for p in NOTEBOOK_DIR.glob("*.ipynb")})  # "01", "04b", ...


def _bank() -> dict:
    return json.loads(data_path("quizzes.json").read_text(encoding="utf-8"))


def _question(notebook: str, fragment: str) -> Question:
    """The one question of ``notebook`` whose prompt contains ``fragment``."""
    found = [q for q in load_quiz(notebook) if fragment in q.prompt]
    assert len(found) == 1, f"{len(found)} questions of {notebook} contain {fragment!r}"
    return found[0]


def _right_and_wrong(q: Question) -> tuple[str, list[str]]:
    return q.options[q.answer], [o for i, o in enumerate(q.options) if i != q.answer]


# ---------------------------------------------------------------- the bank's structure


def test_every_notebook_has_a_quiz_and_every_quiz_a_notebook():
    keys = set(_bank())
    assert set(NOTEBOOKS) <= keys, f"missing quizzes: {sorted(set(NOTEBOOKS) - keys)}"
    for key in keys:
        assert re.fullmatch(r"\d\d[a-z]?", key), key  # 04b: a lesson added after 04
        assert list(NOTEBOOK_DIR.glob(f"{key}_*.ipynb")), f"quiz {key!r} has no notebook {key}_*.ipynb"


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_each_quiz_has_4_to_6_valid_questions(notebook):
    questions = load_quiz(notebook)  # runs Question's own validation and the loader's
    assert 4 <= len(questions) <= 6
    assert len({q.prompt for q in questions}) == len(questions), "a prompt occurs twice"
    for q in questions:
        assert 3 <= len(q.options) <= 4, q.prompt
        assert 0 <= q.answer < len(q.options), q.prompt
        assert q.wrong_why is not None and len(q.wrong_why) == len(q.options), q.prompt
        assert [i for i, w in enumerate(q.wrong_why) if w is None] == [q.answer], q.prompt
        assert all(isinstance(w, str) and len(w) > 10 for i, w in enumerate(q.wrong_why) if i != q.answer)
        assert len(q.why) > 20, q.prompt
        # An option is one radio-button label (a fixed-height line in ipywidgets), and feedback() and
        # static_answers() write "<option>. <why>": keep options short and without a final period.
        for option in q.options:
            assert len(option) <= 110 and not option.endswith("."), option


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_right_answers_are_not_all_in_the_same_position(notebook):
    assert len({q.answer for q in load_quiz(notebook)}) > 1


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_feedback_and_static_answers_work_on_the_bank(notebook):
    questions = load_quiz(notebook)
    for q in questions:
        for i in range(len(q.options)):
            ok, text = feedback(q, i)
            assert ok == (i == q.answer)
            assert q.why in text
            if not ok:
                assert q.wrong_why[i] in text and q.options[q.answer] in text
    html_text = static_answers(questions)
    assert html_text.count("<details>") == len(questions)


# ---------------------------------------------------------------- spot checks of the facts


def test_mha_parameter_count():
    d, h = 64, 8
    formula = 4 * d * d + 4 * d
    torch_count = sum(p.numel() for p in nn.MultiheadAttention(d, h).parameters())
    course_count = sum(p.numel() for p in MultiHeadAttention(d, h).parameters())
    assert formula == torch_count == course_count
    right, wrong = _right_and_wrong(_question("03", "MultiHeadAttention(d_model=64, num_heads=8)"))
    assert f"{formula:,}" in right
    assert not any(f"{formula:,}" in w for w in wrong)


def test_more_heads_same_parameters_thinner_heads():
    few, many = MultiHeadAttention(64, 8), MultiHeadAttention(64, 16)
    assert sum(p.numel() for p in few.parameters()) == sum(p.numel() for p in many.parameters())
    x = torch.randn(2, 5, 64)
    _, weights = many(x, x, x)
    assert weights.shape == (2, 16, 5, 5)
    right, _ = _right_and_wrong(_question("03", "MultiHeadAttention(64, 16)"))
    assert "from 8 to 4" in right and "(B, 16, T, T)" in right


def test_score_matrix_bytes():
    n = 8192
    size = {dt: n * n * torch.empty(0, dtype=dt).element_size() for dt in (torch.float16, torch.float32, torch.float64)}
    assert size[torch.float32] == 268_435_456
    q = _question("14", "8192 × 8192")
    right, wrong = _right_and_wrong(q)
    assert f"{size[torch.float32]:,}" in right
    assert not any(f"{size[torch.float32]:,}" in w for w in wrong)
    # the tempting wrong options are the entry count and the other precisions
    assert {f"{n * n:,}", f"{size[torch.float16]:,}", f"{size[torch.float64]:,}"} == {w.split(" ")[0] for w in wrong}


def test_entropy_of_a_row_split_over_two_keys():
    row = [0.5, 0.5] + [0.0] * 8
    entropy = -sum(a * math.log(a) for a in row if a > 0)
    right, wrong = _right_and_wrong(_question("02", "row of 10 attention weights"))
    assert f"{entropy:.3f}" in right and f"e^H = {round(math.exp(entropy))}" in right
    assert not any(f"{entropy:.3f}" in w for w in wrong)


def test_mean_distance_of_uniform_attention():
    n = 8
    total = sum(Fraction(abs(i - j), n) for i in range(n) for j in range(n))  # weight 1/n on each key
    distance = total / n  # averaged over the n queries
    assert distance == Fraction(n * n - 1, 3 * n)
    right, wrong = _right_and_wrong(_question("07", "uniformly over n = 8"))
    assert right == str(float(distance))
    assert not any(str(float(distance)) in w for w in wrong)


def test_squared_norm_of_the_sinusoidal_encoding():
    d = 64
    for p in (0, 1, 7, 1000):
        angles = [p / 10000 ** (2 * i / d) for i in range(d // 2)]
        norm2 = sum(math.sin(a) ** 2 + math.cos(a) ** 2 for a in angles)
        assert norm2 == pytest.approx(d / 2)
    right, wrong = _right_and_wrong(_question("09", "‖PE(p)‖²"))
    assert right.startswith(f"{d // 2},")
    assert not any(str(d // 2) in w for w in wrong)


def test_parameters_of_one_encoder_block():
    d, d_ff = 512, 2048
    layer = nn.TransformerEncoderLayer(d, 8, d_ff, batch_first=True)
    count = lambda *modules: sum(p.numel() for m in modules for p in m.parameters())  # noqa: E731
    total = count(layer)
    assert total == 4 * d * d + 2 * d * d_ff + 9 * d + d_ff
    right, wrong = _right_and_wrong(_question("09b", "nn.TransformerEncoderLayer(512, 8, 2048)"))
    assert right == f"{total:,}"
    # the tempting wrong options: attention alone, the FFN alone, everything but the two LayerNorms
    parts = {count(layer.self_attn), count(layer.linear1, layer.linear2), total - count(layer.norm1, layer.norm2)}
    assert {f"{n:,}" for n in parts} == set(wrong)


def test_number_of_allowed_entries_in_a_causal_mask():
    n = 4
    allowed = sum(1 for i in range(n) for j in range(n) if j <= i)
    assert int(causal_mask(n).sum()) == allowed
    right, wrong = _right_and_wrong(_question("05", "causal_mask(4)"))
    assert f"{allowed} of {n * n}" in right
    assert not any(f"{allowed} of" in w for w in wrong)


def test_exact_sequence_accuracy_from_token_accuracy():
    right, _ = _right_and_wrong(_question("08", "99% token accuracy"))
    assert f"{0.99 ** 11:.2f}" == "0.90" and "0.99¹¹ ≈ 0.90" in right


def test_shapes_in_the_attention_formula_and_in_cross_attention():
    output, weights = scaled_dot_product_attention(torch.randn(3, 8), torch.randn(5, 8), torch.randn(5, 4))
    right, _ = _right_and_wrong(_question("01", "(n, d_k) = (3, 8)"))
    assert right == f"weights {tuple(weights.shape)}, output {tuple(output.shape)}"

    mha = MultiHeadAttention(64, 8)
    decoder, encoder = torch.randn(2, 4, 64), torch.randn(2, 7, 64)
    out, w = mha(decoder, encoder, encoder)
    right, _ = _right_and_wrong(_question("06", "n = 4 positions cross-attends"))
    assert right == f"output {tuple(out.shape)}, weights {tuple(w.shape)}"


def test_fully_masked_row_with_minus_infinity_is_nan():
    assert torch.softmax(torch.full((5,), float("-inf")), dim=-1).isnan().all()
    right, _ = _right_and_wrong(_question("01b", "every key of one query is blocked"))
    assert "NaN" in right


def test_our_causal_mask_in_nn_multiheadattention_attends_to_the_future():
    torch.manual_seed(0)
    torch_mha = nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(1, 5, 16)
    _, weights = torch_mha(x, x, x, attn_mask=causal_mask(5))
    weights = weights[0]
    assert weights[-1].isnan().all()  # the last query has no future keys
    for i in range(4):
        assert torch.all(weights[i, : i + 1] == 0) and weights[i, i + 1 :].sum().item() == pytest.approx(1)
    right, _ = _right_and_wrong(_question("03b", "torch.nn.MultiheadAttention"))
    assert "strictly later keys" in right and "NaN" in right


def test_a_float_tril_mask_is_added_and_blocks_nothing():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 4, 8).unbind(0)
    float_mask = torch.tril(torch.ones(4, 4))
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)
    assert torch.allclose(out, torch.softmax(scores + float_mask, dim=-1) @ v, atol=1e-6)
    blocked = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask.bool())
    assert not torch.allclose(out, blocked, atol=1e-3)
    right, _ = _right_and_wrong(_question("05", "torch.tril(torch.ones(n, n))"))
    assert "added" in right and "nothing is blocked" in right


def test_softmax_jacobian_vanishes_when_saturated():
    jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, dim=-1), torch.tensor([60.0, 0.0, -3.0]))
    assert jac.abs().max().item() < 1e-20
    right, _ = _right_and_wrong(_question("10", "diag(p) − p pᵀ"))
    assert "zero matrix" in right


def test_temperature_keeps_the_order_and_flattens():
    torch.manual_seed(0)
    scores = torch.randn(50, 7) * 3
    sharp, flat = torch.softmax(scores, -1), torch.softmax(scores / 4, -1)
    assert torch.equal(sharp.argsort(-1), flat.argsort(-1))
    entropy = lambda p: -(p * p.log()).sum(-1)  # noqa: E731
    assert torch.all(entropy(flat) > entropy(sharp))
    right, _ = _right_and_wrong(_question("02", "temperature T = 4"))
    assert "flatter" in right and "order" in right


# ---------------------------------------------------------------- the loader's errors


def test_unknown_notebook_names_the_available_keys():
    with pytest.raises(ValueError, match=r"no quiz for notebook '99'.*available: \['01', '01b', '02'"):
        load_quiz("99")


GOOD = {"prompt": "p?", "options": ["a", "b", "c"], "answer": 1, "why": "because", "wrong_why": ["no a", None, "no c"]}


def _write_bank(tmp_path, monkeypatch, content) -> None:
    monkeypatch.setattr(data_module, "DATA_DIR", tmp_path)
    text = content if isinstance(content, str) else json.dumps(content)
    (tmp_path / "quizzes.json").write_text(text, encoding="utf-8")


def test_a_good_entry_loads_and_wrong_why_is_optional(tmp_path, monkeypatch):
    without = {k: v for k, v in GOOD.items() if k != "wrong_why"}
    _write_bank(tmp_path, monkeypatch, {"01": [GOOD, without]})
    first, second = load_quiz("01")
    assert first == Question("p?", ("a", "b", "c"), 1, "because", ("no a", None, "no c"))
    assert second.wrong_why is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"answer": 3}, r"answer index 3 is not one of the 3 options"),
        ({"answer": "1"}, r"'answer' must be the integer index"),
        ({"answer": True}, r"'answer' must be the integer index"),
        ({"options": "abc"}, r"'options' must be a list of non-empty strings"),
        ({"options": ["a", "a", "c"]}, r"two options are identical"),
        ({"prompt": ""}, r"'prompt' must be a non-empty string"),
        ({"wrong_why": ["no a", "no b", "no c"]}, r"wrong_why\[1\] must be null, option 1 is the right answer"),
        ({"wrong_why": [None, None, "no c"]}, r"wrong_why\[0\] must say why option 0 is wrong"),
        ({"wrong_why": ["no a", None]}, r"wrong_why has 2 entries for 3 options"),
        ({"anwser": 1}, r"unknown fields \['anwser'\]"),
        ({"why": None}, r"'why' must be a non-empty string"),
    ],
)
def test_malformed_entries_are_refused_with_their_location(tmp_path, monkeypatch, change, message):
    entry = {**GOOD, **change}
    _write_bank(tmp_path, monkeypatch, {"01": [GOOD, entry]})
    with pytest.raises(ValueError, match=r"quizzes\.json, notebook '01', question 2: " + message):
        load_quiz("01")


def test_missing_field_is_named(tmp_path, monkeypatch):
    entry = {k: v for k, v in GOOD.items() if k != "why"}
    _write_bank(tmp_path, monkeypatch, {"01": [entry]})
    with pytest.raises(ValueError, match=r"question 1: missing fields \['why'\]"):
        load_quiz("01")


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"01": [', r"quizzes\.json is not valid JSON"),
        ([GOOD], r"must hold a JSON object of notebook keys, got list"),
        ({"01": []}, r"notebook '01': expected a non-empty list of questions, got an empty list"),
        ({"01": GOOD}, r"notebook '01': expected a non-empty list of questions, got dict"),
        ({"01": ["just a string"]}, r"question 1: expected an object"),
    ],
)
def test_malformed_files_are_refused(tmp_path, monkeypatch, content, message):
    _write_bank(tmp_path, monkeypatch, content)
    with pytest.raises(ValueError, match=message):
        load_quiz("01")


def test_missing_bank_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(data_module, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"no data file 'quizzes\.json'"):
        load_quiz("01")
