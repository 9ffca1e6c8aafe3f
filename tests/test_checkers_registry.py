"""The registry of checks: from a notebook's cell ``check_x(name)`` a grader learns which check to run on
which object; the checker modules follow one naming rule (the notebook's file name without its number)."""

import ast
import functools
import inspect
import json
from pathlib import Path

import pytest

from course_utils.helpers import checkers
from course_utils.helpers.checkers import CHECKS, checks_in_cell, find_check
from course_utils.helpers.checkers.registry import KINDS, MACHINERY, checker_modules

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_utils" / "helpers" / "checkers"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))


@functools.lru_cache(maxsize=None)
def _check_calls(path: Path) -> list[tuple[str, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [pair for cell in cells if cell["cell_type"] == "code" for pair in checks_in_cell("".join(cell["source"]))]


def test_every_check_is_importable_from_the_package_and_registered_once():
    assert len(CHECKS) >= 30
    for name, check in CHECKS.items():
        assert getattr(checkers, name) is check.function and check.name == name
        assert check.kind in KINDS and check.takes.isidentifier() and check.task
        assert list(inspect.signature(check.function).parameters) == ["answer", "seed"]
        assert check.function.__doc__ and check.function.__name__ == name


def test_each_check_cell_of_a_notebook_names_its_check_and_object():
    found = [(path.name, name, takes) for path in NOTEBOOKS for name, takes in _check_calls(path)]
    assert len(found) >= 2 * len(CHECKS)  # every check, in the student version and the solution or lesson
    wrong = [(file, name, takes) for file, name, takes in found
             if (CHECKS[name].takes, CHECKS[name].notebook) != (takes, file.removesuffix(".ipynb"))]
    assert not wrong


def test_every_check_is_called_in_its_notebook():
    called = {pair for path in NOTEBOOKS for pair in _check_calls(path)}
    assert {(c.name, c.takes) for c in CHECKS.values()} <= called


def test_one_module_per_notebook_named_after_it():
    stems = {p.stem for p in NOTEBOOKS}
    for module in checker_modules():
        loaded = __import__(module, fromlist=["NOTEBOOK"])
        notebook = loaded.NOTEBOOK
        assert notebook in stems and notebook.split("_", 1)[1] == module.rsplit(".", 1)[1], (module, notebook)
    files = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert files - {m.rsplit(".", 1)[1] for m in checker_modules()} <= MACHINERY  # anything else is a checker module


def test_no_public_name_is_defined_twice_in_the_checkers():
    seen = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                assert node.name not in seen, (node.name, seen.get(node.name), path.name)
                seen[node.name] = path.name


def test_importing_the_package_loads_no_checker_module():
    # the package and the machinery it imports reach the checker modules only through registry.checks()
    for name in ("__init__", "registry", "report", "twins"):
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        relative = {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 1}
        assert relative <= MACHINERY, (name, relative)


def test_checks_in_a_cell_are_found_in_order():
    cell = "# needs task 1\nsummarize(\n    check_causal_mask(causal_mask),\n    check_leaks_future(leaks_future),\n)\n"
    assert checks_in_cell(cell) == [("check_causal_mask", "causal_mask"), ("check_leaks_future", "leaks_future")]
    assert checks_in_cell("check_causal_mask(lambda n: n)\ncheck_unknown(x)\nprint(") == []


def test_a_check_is_found_by_name_or_by_the_object_it_takes():
    assert find_check("check_cross_attention") is find_check("CrossAttention")
    assert find_check("CrossAttention").kind == "class"
    with pytest.raises(KeyError):
        find_check("nothing")
