"""The course map (course_utils/helpers/course_map.py) agrees with the notebooks and the package.

When one of these fails, the message names the entry and says what to change in the map (or, for a
docstring, in the package). Change the map when a notebook changed on purpose: it is the course's table
of contents, and the README's and the instructor guide's tables are generated from it.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

from course_utils.helpers import course_map
from course_utils.helpers.checkers import CHECKS

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "notebooks" / "solutions"
ENTRIES = course_map.NOTEBOOKS
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?[.·]? .*)$")  # "## 2. Masks", "### 2.1 Padding", "## 1 · The data"
DRAWING = re.compile(r"^<!-- drawing: (\w+) -->$")
BUILT = re.compile(r"[Bb]uilt in notebook (\d\d[a-z]?)\b")
# checker tests of the shared machinery, not of one notebook
SHARED_CHECKER_TESTS = {"test_checkers_compare.py", "test_checkers_contract.py", "test_checkers_registry.py",
                        "test_checkers_report.py", "test_checkers_twins.py"}


def _markdown_lines(stem: str) -> list[str]:
    nb = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    return [line.strip() for cell in nb.cells if cell.cell_type == "markdown" for line in cell.source.splitlines()]


def _code(stem: str) -> str:
    nb = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


def test_every_notebook_is_in_the_map_in_order():
    for folder in (ROOT / "notebooks", SOLUTIONS):
        on_disk = sorted(p.stem for p in folder.glob("[0-9][0-9]*.ipynb"))
        mapped = [e.stem for e in ENTRIES]
        assert mapped == on_disk, (f"{folder.relative_to(ROOT)} and course_map.NOTEBOOKS differ: not in the map "
                                   f"{sorted(set(on_disk) - set(mapped))}, in the map without a notebook "
                                   f"{sorted(set(mapped) - set(on_disk))} (entries go in file-name order)")
    assert all(e.stem.startswith(e.key + "_") for e in ENTRIES), "an entry's key is its stem's number"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.key)
def test_the_title_is_the_notebooks_first_heading(entry):
    first = next(line for line in _markdown_lines(entry.stem) if line.startswith("# "))
    assert first == f"# {entry.key} · {entry.title}", f"course map {entry.key}: set title= to {first[2:].split(' · ', 1)[-1]!r}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.key)
def test_the_sections_are_the_notebooks_numbered_headings(entry):
    headings = tuple(m.group(1) for line in _markdown_lines(entry.stem) if (m := HEADING.match(line)))
    missing = [h for h in headings if h not in entry.sections]
    extra = [s for s in entry.sections if s not in headings]
    assert entry.sections == headings, (f"course map {entry.key}: sections differ from notebooks/solutions/"
                                        f"{entry.stem}.ipynb; in the notebook only: {missing}; in the map only: "
                                        f"{extra}; the notebook's order: {headings}")


def test_every_prerequisite_is_a_notebook_of_the_course():
    keys = {e.key for e in ENTRIES}
    for entry in ENTRIES:
        assert set(entry.needs) <= keys, f"course map {entry.key}: needs {sorted(set(entry.needs) - keys)}, not notebooks"
        assert entry.key not in entry.needs
        assert entry.kind in ("core", "optional", "core (exercise)", "optional (exercise)"), entry.kind
    outcomes = [e.outcomes for e in ENTRIES]
    assert len(set(outcomes)) == len(outcomes), "two notebooks share their learning outcomes"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.key)
def test_the_tasks_are_the_registered_checks_in_the_notebooks_order(entry):
    from course_utils.helpers.checkers import checks_in_cell

    registered = {name: c for name, c in CHECKS.items() if c.notebook == entry.stem}
    assert set(entry.tasks.values()) == set(registered), (
        f"course map {entry.key}: tasks name {sorted(entry.tasks.values())}, the checkers' registry (CHECKS) has "
        f"{sorted(registered)} for {entry.stem}")
    for task in entry.task_list():
        check = registered[task.check]
        assert check.takes == task.function, f"course map {entry.key}: {task.check} takes {check.takes!r}, not {task.function!r}"
        assert check.module.replace(".", "/") + ".py" == entry.checker, (
            f"{task.check} lives in {check.module}; the rule is {entry.checker} (the notebook's name without its number)")
    nb = nbformat.read(SOLUTIONS / f"{entry.stem}.ipynb", as_version=4)
    called = [check for cell in nb.cells if cell.cell_type == "code" for check, _ in checks_in_cell(cell.source)]
    order = [check for check in dict.fromkeys(called) if check in registered]
    assert order == list(entry.tasks.values()), (f"course map {entry.key}: the notebook checks its tasks in the "
                                                 f"order {order}; list tasks= in that order (task 1 first)")


def _docstring_claims() -> dict[str, str]:
    """{"core.masks.causal_mask": "01b"}: each public function or class of core/ and models/ whose docstring
    says "Built in notebook NN" (the first such NN)."""
    claims = {}
    for path in sorted((ROOT / "course_utils").glob("*/*.py")):
        if path.parent.name not in ("core", "models"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            public = isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
            if public and (m := BUILT.search(ast.get_docstring(node) or "")):
                claims[f"{path.parent.name}.{path.stem}.{node.name}"] = m.group(1)
    return claims


def test_every_built_in_notebook_docstring_agrees_with_the_map():
    claims = _docstring_claims()
    mapped = {name: e.key for e in ENTRIES for name in e.builds}
    assert claims, "no docstring says 'Built in notebook NN': has the phrase changed?"
    wrong = [f"{name}: docstring says {claims[name]}, the map says {mapped[name]}"
             for name in sorted(claims.keys() & mapped.keys()) if claims[name] != mapped[name]]
    unmapped = [f"{name} (notebook {claims[name]})" for name in sorted(claims.keys() - mapped.keys())]
    unclaimed = [f"{name} (notebook {mapped[name]})" for name in sorted(mapped.keys() - claims.keys())]
    assert not wrong, f"docstring and course map disagree: {wrong}"
    assert not unmapped, f"docstrings say 'Built in notebook NN' but the map's builds= lacks them: {unmapped}"
    assert not unclaimed, (f"the map's builds= names these, but their docstrings do not say 'Built in notebook NN' "
                           f"(or they do not exist): {unclaimed}")


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.key)
def test_the_drawings_are_the_notebooks_markers(entry):
    from course_utils.authoring.drawings.registry import NAMES

    markers = tuple(m.group(1) for line in _markdown_lines(entry.stem) if (m := DRAWING.match(line)))
    assert entry.drawings == markers, (f"course map {entry.key}: drawings={entry.drawings}, the notebook's "
                                       f"<!-- drawing: NAME --> markers are {markers}")
    assert set(markers) <= set(NAMES), f"{entry.stem} shows drawings that do not exist: {set(markers) - set(NAMES)}"


def test_the_plot_modules_are_the_ones_each_notebook_imports():
    helpers = ROOT / "course_utils" / "helpers"
    for entry in ENTRIES:
        code = _code(entry.stem)
        for module in entry.plots:
            assert (helpers / f"{module}.py").is_file(), f"course map {entry.key}: no module helpers/{module}.py"
            assert re.search(rf"\b{module}\b", code), f"course map {entry.key}: the notebook does not import {module}"
    claimed = {module for e in ENTRIES for module in e.plots}
    unclaimed = sorted(p.stem for p in helpers.glob("*_plots.py") if p.stem not in claimed)
    assert not unclaimed, f"plot modules no notebook of the map claims (add them to its plots=): {unclaimed}"


def test_the_test_files_exist_and_every_checker_test_belongs_somewhere():
    for entry in ENTRIES:
        for name in entry.tests:
            path = ROOT / "tests" / name
            assert path.is_file(), f"course map {entry.key}: tests= names {name}, which does not exist"
            if name.startswith("test_checkers_"):
                text = path.read_text(encoding="utf-8")
                assert any(check in text for check in entry.tasks.values()), (
                    f"course map {entry.key}: {name} tests none of its checks {list(entry.tasks.values())}")
    claimed = {name for e in ENTRIES for name in e.tests} | SHARED_CHECKER_TESTS
    orphans = sorted(p.name for p in (ROOT / "tests").glob("test_checkers_*.py") if p.name not in claimed)
    assert not orphans, (f"checker tests no notebook claims: {orphans}; add each to its notebook's tests= "
                         "(or to SHARED_CHECKER_TESTS here if it tests the shared machinery)")


def test_new_checker_tests_follow_the_rule():
    # The rule (CONTRIBUTING.md): notebook NN's checker tests are tests/test_checkers_NN.py.
    for entry in ENTRIES:
        for name in entry.tests:
            if name.startswith("test_checkers_"):
                assert name == f"test_checkers_{entry.key}.py", (
                    f"course map {entry.key}: {name} does not follow the rule tests/test_checkers_{entry.key}.py")


def test_the_one_rule_prints_every_piece():
    pieces = course_map.notebook("05").pieces()
    assert pieces["checker"] == ["course_utils/helpers/checkers/causal_mask.py"]
    assert pieces["tests"] == ["tests/test_checkers_05.py"]
    assert course_map.notebook("05_causal_mask") is course_map.notebook("05")
    with pytest.raises(KeyError, match="no notebook '99'"):
        course_map.notebook("99")
    for entry in ENTRIES:
        for paths in entry.pieces().values():
            for path in paths:
                assert (ROOT / path.split(":")[0]).is_file(), f"course map {entry.key}: {path} does not exist"


def test_titles_in_tables_have_no_latex():
    for entry in ENTRIES:
        assert not re.search(r"[$\\]", course_map.plain_title(entry.title)), entry.title
    assert course_map.plain_title(course_map.notebook("01b").title) == "Why √d_k, and masks"
