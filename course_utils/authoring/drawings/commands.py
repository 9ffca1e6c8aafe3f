"""The drawings command: write the SVG files, check them, embed the drawings in notebooks.

    python -m course_utils.authoring.drawings                  # write notebooks/figures/NAME.svg for every drawing
    python -m course_utils.authoring.drawings --check          # exit 1 if a file or an embedded copy is out of date
    python -m course_utils.authoring.drawings --embed [NB ...] # insert/refresh drawings at their markers
                                                             # (default: every notebook that has a marker)
    python -m course_utils.authoring.drawings --list           # name, notebook and alt text of every drawing
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from . import embed as E
from .registry import drawings

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = ROOT / "notebooks"
FIGURES = NOTEBOOKS / "figures"


def generated() -> dict[str, str]:
    """Every drawing's SVG text, generated from the source now."""
    return {name: d.svg() for name, d in drawings().items()}


def write(figures: Path = FIGURES) -> list[Path]:
    """(Re)write ``figures/NAME.svg`` for every drawing; returns the files written."""
    figures.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, svg in generated().items():
        path = figures / f"{name}.svg"
        path.write_text(svg, encoding="utf-8", newline="\n")
        paths.append(path)
    return paths


def _notebooks(notebooks: Path) -> list[Path]:
    return sorted(p for p in notebooks.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def check(figures: Path = FIGURES, notebooks: Path = NOTEBOOKS) -> list[str]:
    """What is out of date: SVG files that differ from what the source generates (or are missing, or
    belong to no drawing), and drawings embedded in notebooks that differ from them."""
    svgs = generated()
    found = []
    for name, svg in svgs.items():
        path = figures / f"{name}.svg"
        if not path.is_file():
            found.append(f"{path.relative_to(figures.parent.parent)}: missing")
        elif path.read_text(encoding="utf-8") != svg:
            found.append(f"{path.relative_to(figures.parent.parent)}: differs from what the source draws")
    if figures.is_dir():
        stray = [p for p in sorted(figures.glob("*.svg")) if p.stem not in svgs]
        found += [f"{p.relative_to(figures.parent.parent)}: belongs to no drawing" for p in stray]
    for path in _notebooks(notebooks):
        nb = nbformat.read(path, as_version=4)
        try:
            issues = E.problems(nb, drawings(), svgs)
        except ValueError as error:
            issues = [str(error)]
        found += [f"{path.relative_to(notebooks.parent)}: {issue}" for issue in issues]
    return found


def embed_files(paths: list[Path]) -> dict[Path, list[str]]:
    """Embed the current drawings at the markers of each notebook; a notebook is written only if it changed."""
    done = {}
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        before = nbformat.writes(nb)
        names = E.embed(nb, drawings())
        if nbformat.writes(nb) != before:
            nbformat.write(nb, path)
        if names:
            done[path] = names
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils.authoring.drawings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 if a drawing file or embedded copy is stale")
    group.add_argument("--embed", nargs="*", metavar="NOTEBOOK", help="embed drawings at their markers")
    group.add_argument("--list", action="store_true", help="print every drawing's name, notebook and alt text")
    args = parser.parse_args(argv)
    if args.check:
        found = check()
        for line in found:
            print(line)
        if found:
            print("out of date: run `python -m course_utils.authoring.drawings` (files), then "
                  "`python -m course_utils.authoring.drawings --embed` (notebooks)")
            return 1
        print(f"{len(drawings())} drawings up to date, in notebooks/figures/ and in every notebook that shows one")
        return 0
    if args.embed is not None:
        paths = [Path(p) for p in args.embed] or [p for p in _notebooks(NOTEBOOKS) if "drawing:" in p.read_text()]
        for path, names in embed_files(paths).items():
            print(f"{path}: {', '.join(names)}")
        return 0
    if args.list:
        for name, d in drawings().items():
            print(f"{name} (notebook {d.notebook}, {d.section}):\n    <!-- drawing: {name} -->\n    alt: {d.alt}\n")
        return 0
    for path in write():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
