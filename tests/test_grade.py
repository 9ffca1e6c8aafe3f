"""course-grade on the committed submissions (tests/submissions/): the right row for each kind."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest

from course_utils.tooling import grade, grade_kernel
from course_utils.tooling.grade_report import markdown

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "submissions"


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the committed folder once (two kernels at a time, short limits); rows by submission.
    About a minute, so the tests that use it are in the ``slow`` tier (``pytest -m slow``)."""
    out = tmp_path_factory.mktemp("grades") / "grades.csv"
    before = _digest(SUBMISSIONS)
    assert grade.main([str(SUBMISSIONS), "--out", str(out), "--timeout", "20", "--jobs", "2", "--memory", "3"]) == 0
    after = _digest(SUBMISSIONS)
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {"rows": {r["submission"]: r for r in rows}, "order": [r["submission"] for r in rows], "out": out,
            "header": out.read_text(encoding="utf-8").splitlines()[0], "unchanged": before == after}


def test_exercise_table_matches_the_notebooks():
    """EXERCISES names every task each student notebook checks, in the notebook's order."""
    for name, spec in grade.EXERCISES.items():
        nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        calls = [m for c in nb.cells if c.cell_type == "code"
                 for m in re.findall(r"^(check_\w+)\((\w+)\)\s*$", c.source, re.MULTILINE)]
        assert [(obj, check) for check, obj in calls] == list(spec.tasks), name


def test_identify_by_metadata_then_by_content():
    nb = nbformat.read(ROOT / "notebooks" / "06_cross_attention.ipynb", as_version=4)
    assert grade.identify(nb) == "06_cross_attention"
    nb.metadata.pop("course")
    assert grade.identify(nb) == "06_cross_attention"  # from the functions and classes it defines
    lesson = nbformat.read(ROOT / "notebooks" / "03_multi_head_attention.ipynb", as_version=4)
    with pytest.raises(grade.Invalid, match="not one of the exercises"):
        grade.identify(lesson)


@pytest.mark.parametrize(("result", "printed", "expected"), [
    (True, "[correct] causal_mask: well done, every check passed.\n", ("correct", "")),
    (False, "[try again] causal_mask: upper triangle: query i would attend.\n", ("wrong", "upper triangle: query i would attend.")),
    (False, "[not yet] causal_mask: not implemented yet. Replace ...\n", ("not done", "not implemented yet. Replace ...")),
    (True, "", ("wrong", "the checker's answer could not be read")),
])
def test_verdict_from_the_printed_line(result, printed, expected):
    assert grade_kernel.verdict(result, printed) == expected


def test_verdict_from_a_result_object():
    from course_utils.helpers.checkers.report import CheckResult

    def result(status, hint="", error=""):
        return CheckResult("causal_mask", status, hint=hint, error=error)

    assert grade_kernel.verdict(result("correct"), "") == ("correct", "")
    assert grade_kernel.verdict(result("wrong", "calls the course's own causal_mask"), "") == (
        "wrong", "calls the course's own causal_mask")
    assert grade_kernel.verdict(result("not done", "not implemented yet"), "") == ("not done", "not implemented yet")
    assert grade_kernel.verdict(result("crashed", error="TypeError: boom"), "") == ("crashed", "TypeError: boom")
    status, detail = grade_kernel.verdict(result("checker error", error="KeyError: 3"), "")
    assert status == "crashed" and "not the student's" in detail and "KeyError: 3" in detail


EXPECTED = {  # submission: (exercise, correct, the start of each task's value)
    "alice/05_causal_mask.ipynb": ("05_causal_mask", 3, ["correct", "correct", "correct"]),
    "bob/Causal Mask - Bob (1).ipynb": ("05_causal_mask", 1, ["correct", "wrong: no scaling", "not done"]),
    "carol/05_causal_mask.ipynb": ("05_causal_mask", 0, ["not done", "not done", "not done"]),
    "dave/assignment.ipynb": ("05_causal_mask", 1, ["correct", "timed out", "timed out"]),
    "erin/Erin_05.ipynb": ("05_causal_mask", 2, ["correct", "crashed: SyntaxError", "correct"]),
    "grace/memory.ipynb": ("05_causal_mask", 2, ["correct", "crashed: RuntimeError", "correct"]),
    "heidi/files/writes files.ipynb": ("05_causal_mask", 3, ["correct", "correct", "correct"]),
    "ivan/05_causal_mask.ipynb": ("", 0, ["invalid: invalid JSON"] * 3),
    "judy/lab3.ipynb": ("", 0, ["invalid: not an exercise of this course"] * 3),
    "mallory/05_causal_mask.ipynb": ("05_causal_mask", 0, ["not done", "not done", "not done"]),
    "oscar/05 causal mask (oscar).ipynb": ("05_causal_mask", 0, ["wrong: upper triangle", "not done", "not done"]),
    "peggy/05_causal_mask.ipynb": ("05_causal_mask", 0, ["wrong: all True", "not done", "not done"]),
    "victor/notebook.ipynb": ("08_attention_vs_no_attention", 2, ["correct", "correct", "wrong: "]),
}
COLUMNS = {"05_causal_mask": ["causal_mask", "masked_attention", "leaks_future"],
           "08_attention_vs_no_attention": ["token_accuracy", "exact_match", "accuracy_by_length"]}


@pytest.mark.slow
@pytest.mark.parametrize("submission", sorted(EXPECTED))
def test_row(graded, submission):
    exercise, correct, starts = EXPECTED[submission]
    row = graded["rows"][submission]
    assert row["exercise"] == exercise
    assert int(row["correct"]) == correct, row
    columns = COLUMNS.get(exercise, COLUMNS["05_causal_mask"])
    for column, start in zip(columns, starts):
        assert row[column].startswith(start), (column, row[column])
    assert int(row["tasks"]) == (3 if exercise else 0)


@pytest.mark.slow
def test_package_calling_answer_is_wrong(graded):
    row = graded["rows"]["trent/05_causal_mask.ipynb"]
    assert row["causal_mask"].startswith("wrong: calls the course's own causal_mask"), row["causal_mask"]


@pytest.mark.slow
def test_table_shape_and_order(graded):
    assert graded["header"] == ("submission,exercise,correct,tasks,causal_mask,masked_attention,leaks_future,"
                                "token_accuracy,exact_match,accuracy_by_length")
    assert graded["order"] == sorted(graded["order"]) and len(graded["order"]) == 14
    text = graded["out"].read_text(encoding="utf-8")
    assert "/tmp" not in text and "course-grade-" not in text and "COURSE-GRADE" not in text


@pytest.mark.slow
def test_submissions_never_modified_and_writes_stay_in_the_temporary_folder(graded):
    assert graded["unchanged"]
    assert not (SUBMISSIONS / "heidi" / "files" / "notes.txt").exists()
    assert not (SUBMISSIONS / "course_utils").exists() and not (ROOT / "notes.txt").exists()


@pytest.mark.slow
def test_class_report(graded):
    md = graded["out"].with_name("grades_report.md").read_text(encoding="utf-8")
    assert "### causal_mask: " in md and "no scaling" in md and "upper triangle" in md
    assert "## Not graded" in md and "judy/lab3.ipynb" in md
    page = graded["out"].with_name("grades_report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "Class report" in page


def test_report_counts_most_common_mistake_first():
    rows = [{"submission": f"s{i}", "exercise": "05_causal_mask", "correct": "0", "tasks": "3",
             "causal_mask": hint, "masked_attention": "not done", "leaks_future": "timed out"}
            for i, hint in enumerate(["wrong: B", "wrong: A", "wrong: A", "correct"])]
    md = markdown(rows)
    assert "### causal_mask: 1 of 4 passed (3 wrong)" in md
    assert md.index("| 2 | A |") < md.index("| 1 | B |")
    assert "leaks_future: 0 of 4 passed (4 timed out)" in md


def test_grading_cell_carries_no_solution_and_valid_json_marker():
    cell = grade.grading_cell("05_causal_mask", "COURSE-GRADE-x:", 5)
    assert "check_causal_mask" in cell.source and json.dumps({"a": 1})


@pytest.mark.slow
def test_each_submission_kernel_is_shut_down(tmp_path, live_child_pids):
    # Before: the grader's client did not own its kernel manager, so every graded notebook left its
    # kernel (and whatever threads the submission started) running until the grader exited.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, threading, time\nprint(os.getpid())\nthreading.Thread(target=lambda: time.sleep(600), daemon=False).start()")])
    outcome = grade.run_notebook(nb, "05_causal_mask", tmp_path, timeout=60, memory_bytes=0)
    kernel_pid = int(nb.cells[0].outputs[0].text)
    assert kernel_pid not in live_child_pids(), outcome
