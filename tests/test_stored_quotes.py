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


def test_notebook_13_quotes_notebook_04s_step_count_as_04_printed_it():
    steps_04 = S.quote("04", r"(\d+) steps; mean training loss")
    assert steps_04 is not None and S.quote("13", r"\(notebook 04: (\d+) steps\)") == steps_04
    assert int(S.quote("13", r"steps: \d+ per epoch, (\d+) in")) > int(steps_04)  # 13's "more than notebook 04 took"


def test_notebook_08s_accuracies_from_length_12_on_are_as_it_says():
    """08's text: without attention "between 25% and 33% at every length from 12 on"; with it "at least 93%"."""
    lines = S.printed_lines(next(iter(S.notebook_files("08"))))
    start = lines.index(" length  attention  no attention") + 1
    rows = [line.split() for line in lines[start:] if line.split() and line.split()[0].isdigit()]
    long = [float(none) for n, _, none in rows if int(n) >= 12]
    assert len(long) == 5 and all(0.25 <= a <= 0.33 for a in long), long
    assert min(float(att) for n, att, _ in rows) >= 0.93  # "at least 93% at every length"


def test_notebook_14s_exponents_are_near_2_as_it_says():
    """14's text: all three exponents over T >= 512 "come out near 2" (timings: a wide margin, any machine)."""
    lines = S.printed_lines(next(iter(S.notebook_files("14"))))
    fits = {line.split(" exponent")[0].strip(): float(line.split("T >= 512: ")[1].split()[0])
            for line in lines if "exponent over T >= 512:" in line}
    assert len(fits) == 3 and all(1.6 <= k <= 2.6 for k in fits.values()), fits


def test_notebook_10_prints_no_step_count_beyond_its_sweeps_budget():
    lines = [line for line in S.printed_lines(next(iter(S.notebook_files("10")))) if "best steps to 95%" in line]
    assert len(lines) == 3
    counts = [int(n) for line in lines for n in __import__("re").findall(r": (\d+)(?:,|$)", line)]
    assert counts and max(counts) <= 300 and any("none within 300" in line for line in lines)
