"""The package layout shows the architecture: core <- models <- helpers, tooling apart, small modules."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "course_utils"
LAYERS = ["core", "models", "helpers", "tooling"]  # each may import only the layers before it
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _layer(parts: tuple[str, ...]) -> str | None:
    return parts[0] if parts and parts[0] in LAYERS else None


def _imported_layers(path: Path) -> set[str]:
    """The course_utils layers a module imports (absolute or relative imports)."""
    here = path.relative_to(PACKAGE).parts[:-1]  # the module's package inside course_utils
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                targets.append(base + tuple((node.module or "").split(".")) if node.module else base)
                targets += [base + (alias.name,) for alias in node.names] if not node.module else []
            elif node.module and node.module.startswith("course_utils"):
                parts = tuple(node.module.split(".")[1:])
                targets.append(parts)
                if not parts:  # from course_utils import x: x is re-exported from core/models/helpers
                    targets.append(("__init__",))
        elif isinstance(node, ast.Import):
            targets += [tuple(a.name.split(".")[1:]) or ("__init__",) for a in node.names if a.name.startswith("course_utils")]
        for parts in targets:
            found.add(_layer(parts) or ("__init__" if parts in ((), ("__init__",)) else None))
    return found - {None}


@pytest.mark.parametrize("path", [p for p in MODULES if _layer(p.relative_to(PACKAGE).parts)],
                         ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_imports_run_one_way(path: Path):
    layer = _layer(path.relative_to(PACKAGE).parts)
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    imported = _imported_layers(path)
    assert "__init__" not in imported, f"{path.name} imports from the course_utils facade: import from its module instead"
    assert imported <= allowed, f"{layer}/{path.name} imports {sorted(imported - allowed)}; allowed: {sorted(allowed)}"


def test_no_module_is_over_400_lines():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in MODULES if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"modules over 400 lines: {long}"


def test_the_core_stays_small():
    lines = sum(len(p.read_text().splitlines()) for p in (PACKAGE / "core").glob("*.py"))
    assert lines <= 1000, f"core/ has {lines} lines; it is what a student reads: keep it under 1000"


def test_every_module_sits_in_a_layer():
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules outside core/, models/, helpers/, tooling/: {loose}"
