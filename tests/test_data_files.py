"""The hand-built sentence features in data/ and their loader."""

import pytest
import torch

import course_utils.models.data_files as data_module
from course_utils.models.data_files import data_path, load_token_features


def test_sentence_tokens_and_feature_names():
    tokens, features, X = load_token_features()
    assert tokens == "the cat sat on the mat".split()
    assert features == ["determiner", "noun", "verb", "preposition", "animate", "place"]
    assert X.shape == (6, 6) and X.dtype == torch.float32


def test_sentence_features_say_what_the_notebook_claims():
    tokens, features, X = load_token_features()
    active = {
        (i, tok): {f for f, v in zip(features, X[i].tolist()) if v != 0} for i, tok in enumerate(tokens)
    }
    assert active == {
        (0, "the"): {"determiner"},
        (1, "cat"): {"noun", "animate"},
        (2, "sat"): {"verb"},
        (3, "on"): {"preposition"},
        (4, "the"): {"determiner"},
        (5, "mat"): {"noun", "place"},
    }
    assert set(X.unique().tolist()) == {0.0, 1.0}
    assert torch.equal(X[0], X[4])  # the two "the" are indistinguishable by content alone


def test_loader_agrees_with_a_plain_text_reading_of_the_file():
    lines = data_path("sentence_features.csv").read_text(encoding="utf-8").split("\n")
    rows = [line.split(",") for line in lines if line.strip()]
    tokens, features, X = load_token_features("sentence_features.csv")
    assert features == rows[0][1:]
    assert tokens == [r[0] for r in rows[1:]]
    for i, r in enumerate(rows[1:]):
        for j, v in enumerate(r[1:]):
            assert X[i, j].item() == float(v)


def _write(tmp_path, monkeypatch, text):
    monkeypatch.setattr(data_module, "DATA_DIR", tmp_path)
    (tmp_path / "f.csv").write_text(text, encoding="utf-8")
    return "f.csv"


def test_loader_reads_other_files_and_skips_blank_lines(tmp_path, monkeypatch):
    name = _write(tmp_path, monkeypatch, "token,a,b\nx,0.5,-2\n\ny,3,0\n")
    tokens, features, X = load_token_features(name)
    assert tokens == ["x", "y"] and features == ["a", "b"]
    assert X.tolist() == [[0.5, -2.0], [3.0, 0.0]]


@pytest.mark.parametrize(
    "text, message",
    [
        ("word,a\nx,1\n", "header must be 'token"),
        ("token\nx\n", "header must be 'token"),
        ("token,a,b\nx,1\n", "line 2: 2 fields, the header has 3"),
        ("token,a\nx,1\ny,high\n", "line 3: features must be numbers"),
        ("token,a\n", "no token rows"),
    ],
)
def test_loader_rejects_malformed_files(tmp_path, monkeypatch, text, message):
    name = _write(tmp_path, monkeypatch, text)
    with pytest.raises(ValueError, match=message):
        load_token_features(name)


def test_loader_names_a_missing_file():
    with pytest.raises(ValueError, match="no data file 'missing.csv'"):
        load_token_features("missing.csv")
