"""The contributors' guide's module table (CONTRIBUTING.md) names every module of course_utils: it is how a
newcomer finds them."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_module_is_in_the_contributors_guide():
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in guide.splitlines() if line.startswith("| `"))
    named = set(re.findall(r"`([\w/*]+\.py)`", table))
    missing = []
    for path in sorted((ROOT / "course_utils").rglob("*.py")):
        rel = path.relative_to(ROOT / "course_utils")
        if rel.name == "__init__.py":
            continue
        folder = rel.parent.as_posix()
        if rel.as_posix() in named or (rel.name in named and any(n.startswith(folder + "/") for n in named)):
            continue
        missing.append(rel.as_posix())
    assert not missing, f"modules missing from CONTRIBUTING.md's course_utils table: {missing}"
