"""The package layout shows the architecture: core <- models <- helpers for students; the maintainers'
rooms above them (studies <- authoring; grading apart); small modules."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "course_utils"
LAYERS = ["core", "models", "helpers", "studies", "authoring", "grading"]
# what each room may import: the rooms below it (grading needs no authoring or study)
ALLOWED = {
    "core": {"core"},
    "models": {"core", "models"},
    "helpers": {"core", "models", "helpers"},
    "studies": {"core", "models", "helpers", "studies"},
    "authoring": {"core", "models", "helpers", "studies", "authoring"},
    "grading": {"core", "models", "helpers", "grading"},
}
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
    allowed = ALLOWED[layer]
    imported = _imported_layers(path)
    assert "__init__" not in imported, f"{path.name} imports from the course_utils facade: import from its module instead"
    assert imported <= allowed, f"{layer}/{path.name} imports {sorted(imported - allowed)}; allowed: {sorted(allowed)}"


def test_no_module_is_over_400_lines():
    long = {p.relative_to(PACKAGE).as_posix(): n for p in MODULES if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"modules over 400 lines: {long}"


def test_the_core_stays_small():
    lines = sum(len(p.read_text().splitlines()) for p in (PACKAGE / "core").glob("*.py"))
    # About 800 lines of attention, plus the shared input checks (~200: every public function
    # validates its arguments), the inference-scale modules (tiled attention, RoPE, grouped-query
    # attention) and the references the lessons go on with after their tasks (offset_share, split_heads,
    # strongest_source, classify_heads): what a student reads stays near 1,150 lines.
    assert lines <= 1200, f"core/ has {lines} lines; it is what a student reads: keep it near 1150"


def test_every_module_sits_in_a_layer():
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules outside core/, models/, helpers/, studies/, authoring/, grading/: {loose}"


# --- import cost and import cycles ---------------------------------------------------------

_MODULE_NAMES = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p for p in MODULES}


def _module_level_imports(name: str, path: Path) -> set[str]:
    """The course_utils modules that importing ``name`` imports at once (statements at module level)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        for n in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(n, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - n.level + 1] if n.level else []
                target = ".".join(base + ([n.module] if n.module else [])) if n.level else n.module
                for alias in n.names:
                    found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in _MODULE_NAMES else target)
            elif isinstance(n, ast.Import):
                found |= {alias.name for alias in n.names}
    return {m for m in found if m in _MODULE_NAMES and m != name}


def test_no_import_cycles():
    graph = {name: _module_level_imports(name, path) for name, path in _MODULE_NAMES.items()}
    cycles = []
    for start in graph:  # a path from a module back to itself (few modules: a plain search is enough)
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(" -> ".join(trail + [start]))
                elif nxt not in trail and nxt > start:  # each cycle once, from its smallest module
                    stack.append((nxt, trail + [nxt]))
    assert not cycles, f"import cycles (a re-export no one needs?): {cycles}"


def test_the_facade_names_resolve_to_their_home_modules():
    import importlib

    import course_utils

    for name in course_utils.__all__:
        home = importlib.import_module(f"course_utils.{course_utils._HOMES[name]}")
        assert getattr(course_utils, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        course_utils.no_such_name  # noqa: B018


def test_importing_the_core_and_the_models_loads_pytorch_only():
    """`import course_utils.core` (and every module of core/ and models/, a training, an attention call) loads
    no plotting, no IPython, no Jupyter, no SymPy and no torch._dynamo; `import course_utils` registers nothing in a shell."""
    import subprocess
    import sys

    code = """
import importlib, json, pkgutil, sys
import torch
before = set(sys.modules)
import course_utils.core
for layer in ("core", "models"):
    for m in pkgutil.iter_modules(importlib.import_module("course_utils." + layer).__path__):
        importlib.import_module(f"course_utils.{layer}.{m.name}")
from course_utils import seed_everything, scaled_dot_product_attention
from course_utils.models.training import train_steps
net = torch.nn.Linear(2, 1)
train_steps(net, lambda g: net(torch.randn(4, 2, generator=g)).pow(2).mean(), steps=2, lr=0.1, clip=1.0)
q = torch.randn(1, 2, 4, 8)  # the shape checks load no SymPy (torch.broadcast_shapes would)
scaled_dot_product_attention(q, q, q, torch.ones(4, 4, dtype=torch.bool).tril())
loaded = sorted({m.split(".")[0] for m in set(sys.modules) - before} | ({"torch._dynamo"} & set(sys.modules)))
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import course_utils
registered = [t for t in shell.input_transformers_post if getattr(t, "_course_task_skipper", False)]
print(json.dumps({"loaded": loaded, "registered": len(registered)}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    result = __import__("json").loads(out.splitlines()[-1])
    assert result["loaded"] == ["course_utils"], f"core/ and models/ loaded more than PyTorch: {result['loaded']}"
    assert result["registered"] == 0, "import course_utils must not register the 'needs task' transformer"
