"""Numbers quoted across notebooks come from stored outputs: the helper, and the quotes of notebooks 12-16."""

import json

import pytest

from course_utils.helpers import stored_outputs as S


def _notebook(path, lines):
    cells = [{"cell_type": "code", "source": "", "metadata": {}, "execution_count": 1,
              "outputs": [{"output_type": "stream", "name": "stdout", "text": [line + "\n" for line in lines]}]}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_quote_prefers_the_solution_then_the_student_version_then_nothing(tmp_path):
    _notebook(tmp_path / "04_x.ipynb", ["70 steps; mean training loss per epoch: [1.0]"])
    assert S.quote("04", r"(\d+) steps; mean", tmp_path) == "70"  # a release without solutions
    _notebook(tmp_path / "solutions" / "04_x.ipynb", ["126 steps; mean training loss per epoch: [1.0]"])
    assert S.quote("04", r"(\d+) steps; mean", tmp_path) == "126"
    assert S.quote("04", r"(\d+) epochs", tmp_path) is None
    assert S.quote_or_pointer("05", r"(\d+) steps", tmp_path) == "see notebook 05"


def test_quote_rejects_what_it_cannot_use(tmp_path):
    with pytest.raises(ValueError, match="notebook number"):
        S.quote("4", r"(\d+)", tmp_path)
    with pytest.raises(ValueError, match="group"):
        S.quote("04", r"\d+ steps", tmp_path)


def test_notebook_04s_step_count_is_quoted_from_its_outputs():
    assert S.quote("04", r"(\d+) steps; mean training loss") == "126"
