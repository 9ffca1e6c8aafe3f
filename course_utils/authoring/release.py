"""Build a student release of the course: everything a student needs, no solutions.

    python -m course_utils.authoring.release OUT_DIR

OUT_DIR (new or empty) gets the committed files of the course except the instructors' ones:
``notebooks/solutions/`` (every solution twin), ``tests/`` (the checkers' test banks hold correct
answers), ``course_utils/authoring/``, ``studies/`` and ``grading/`` (maintainers' rooms), ``docs/``
(the website's sources, which need the authoring room), ``.ci/``, ``conftest.py`` and ``INSTRUCTORS.md``.
The release keeps the student notebooks, the lessons, the package, the data,
the README, the licence and the citation. Then it checks itself (``leaks``) and fails if a line
of a solution region is in it that the course does not publish anyway.

What a student can still read: the package's own implementations (``course_utils/core``, e.g.
``causal_mask``) and the checkers' reference code in ``course_utils/helpers/checkers``, which
computes the right answer to compare with; and the lessons, which teach some of the same lines.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from .student_versions import BEGIN, END

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "notebooks" / "solutions"
MAINTAINERS_ROOMS = ("authoring", "studies", "grading")  # course_utils/<room>/: no notebook imports them
LEFT_OUT = ("notebooks/solutions/", "tests/", *(f"course_utils/{room}/" for room in MAINTAINERS_ROOMS), "docs/", ".ci/", ".github/")
LEFT_OUT_FILES = {"conftest.py", "INSTRUCTORS.md", ".gitignore"}
SKIPPED_PARTS = {".git", ".venv", "__pycache__", ".ipynb_checkpoints", ".pytest_cache"}


def course_files(root: Path = ROOT) -> list[str]:
    """The committed files (``git ls-files``), or every file when the course is not a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [p.relative_to(root).as_posix() for p in root.rglob("*")
                 if p.is_file() and not SKIPPED_PARTS.intersection(p.relative_to(root).parts)]
    return sorted(f for f in files if (root / f).is_file())


def released(path: str) -> bool:
    return not path.startswith(LEFT_OUT) and path not in LEFT_OUT_FILES and not SKIPPED_PARTS.intersection(path.split("/"))


def region_lines(root: Path = ROOT) -> dict[str, set[str]]:
    """{solution notebook name: the stripped code lines inside its solution regions (no blanks, no comments)}."""
    found = {}
    for path in sorted((root / "notebooks" / "solutions").glob("*.ipynb")):
        lines, inside = set(), False
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for line in "".join(cell["source"]).splitlines():
                s = line.strip()
                if s in (BEGIN, END):
                    inside = s == BEGIN
                elif inside and s and not s.startswith("#"):
                    lines.add(s)
        found[path.name] = lines
    return found


def _text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""
    if path.suffix == ".ipynb":  # sources and outputs, unescaped
        with_outputs = json.loads(text)
        return "\n".join("".join(c.get("source", "")) + "\n" + json.dumps(c.get("outputs", []))
                         .encode().decode("unicode_escape", "ignore") for c in with_outputs.get("cells", []))
    return text


def published_text(root: Path = ROOT) -> str:
    """What the course publishes anyway: every released file except the student versions of the
    exercises (the lessons, the package and its checkers' reference code), as one text."""
    exercises = {p.name for p in (root / "notebooks" / "solutions").glob("*.ipynb")}
    return "\n".join(_text(root / f) for f in course_files(root)
                     if released(f) and not (f.startswith("notebooks/") and Path(f).name in exercises))


def _outside_regions(root: Path = ROOT) -> str:
    """Every line of the solution notebooks outside their solution regions, as one text: their student
    versions show these lines too (lesson code that a task repeats, a task's signature)."""
    lines = []
    for path in sorted((root / "notebooks" / "solutions").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            inside = False
            for line in "".join(cell["source"]).splitlines():
                s = line.strip()
                if s in (BEGIN, END):
                    inside = s == BEGIN
                elif not inside:
                    lines.append(s)
    return "\n".join(lines)


def leaks(release_dir: Path, root: Path = ROOT) -> list[str]:
    """'file: line' for each solution line found in the release that the course does not publish anyway.

    A line that a solution notebook shows outside its regions (so its student version shows it too),
    or that a published file holds, also as part of a longer line, is not a leak: ``mask = causal_mask(n)``
    inside one task is no secret when a lesson has ``big_mask = causal_mask(n)``.
    """
    published = published_text(root) + "\n" + _outside_regions(root)
    found = []
    for lines in region_lines(root).values():
        secret = {line for line in lines if line not in published}
        for path in sorted(p for p in release_dir.rglob("*") if p.is_file()):
            text = _text(path)
            for line in sorted(secret):
                if line in text:
                    found.append(f"{path.relative_to(release_dir).as_posix()}: {line}")
    if (release_dir / "notebooks" / "solutions").exists():
        found.append("notebooks/solutions/ is in the release")
    return found


def build(out: Path, root: Path = ROOT) -> list[str]:
    """Copy the student release into ``out``; the released paths."""
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty: give a new or empty folder")
    files = [f for f in course_files(root) if released(f)]
    for f in files:
        target = out / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, target)
    pyproject = out / "pyproject.toml"
    if pyproject.exists():  # the instructors' commands are not in the release
        text = pyproject.read_text(encoding="utf-8")
        kept = [line for line in text.splitlines() if not any(f"course_utils.{room}" in line for room in MAINTAINERS_ROOMS)]
        pyproject.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils.authoring.release", description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="a new or empty folder for the release")
    args = parser.parse_args(argv)
    files = build(args.out)
    problems = leaks(args.out)
    if problems:
        print("solution code found in the release:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"student release in {args.out}: {len(files)} files, no solutions "
          f"(left out: {', '.join(LEFT_OUT + tuple(sorted(LEFT_OUT_FILES)))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
