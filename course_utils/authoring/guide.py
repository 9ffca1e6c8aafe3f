"""Fill the generated parts of INSTRUCTORS.md (the notebook table, what each exercise's checkers catch) and
the README's notebook table, from the course map (``course_utils/helpers/course_map.py``).

    python -m course_utils.authoring.guide                              # tables, reading times, checkers; keeps run times
    python -m course_utils.authoring.guide --run notebooks/01_*.ipynb   # benchmark these notebooks first
    python -m course_utils.authoring.guide --benchmark bench.md         # or read a saved benchmark table

Run times come from ``nbtools benchmark`` (``authoring/benchmark.py``; the first three columns of its
first table: wall seconds on one core and peak memory per notebook; for an exercise, its solution
notebook is what a finished student notebook costs).
A notebook not measured yet keeps its previous figure, or shows TO BE MEASURED. Reading time is
estimated from word counts: prose at 200 words a minute plus code at 10 lines a minute (figures and
drawings not counted).
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

import nbformat

from ..helpers.course_map import NOTEBOOKS, plain_title

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "INSTRUCTORS.md"
README = ROOT / "README.md"
TABLE = ("<!-- notebook-table:start -->", "<!-- notebook-table:end -->")  # in both files
CATCHES = ("<!-- checkers:start -->", "<!-- checkers:end -->")
UNMEASURED = "TO BE MEASURED"
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 200, 10

def reading_minutes(path: Path) -> int:
    """Estimated minutes to read a notebook's prose and code, rounded up to 5. A drawing counts as a plotted
    figure does, not at all: its embedded ``<img>`` (alt text for screen readers, a data URL) is no prose."""
    nb = nbformat.read(path, as_version=4)
    words = sum(len(re.sub(r"<img[^>]*>|<!--.*?-->", " ", c.source, flags=re.S).split())
                for c in nb.cells if c.cell_type == "markdown")
    code = sum(len([line for line in c.source.splitlines() if line.strip()]) for c in nb.cells if c.cell_type == "code")
    minutes = words / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE
    return int(-(-minutes // 5) * 5)


def notebook_key(name: str) -> str:
    """"01b" for 01b_scaling_and_masks.ipynb, "04" for 04_seq2seq_with_attention.ipynb."""
    m = re.match(r"\d\d[a-z]?(?=_)", name)
    if not m:
        raise ValueError(f"a course notebook's name starts with its number (01_, 01b_), got {name!r}")
    return m.group(0)


def parse_benchmark(text: str) -> dict[str, str]:
    """{notebook key: "wall s / peak MiB"} from nbtools' benchmark table; solutions win for exercises."""
    found: dict[str, tuple[bool, str]] = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*(\S+\.ipynb)\s*\|\s*([\d.]+)\s*\|\s*(\d+)\s*\|", line)
        if m:
            path, seconds, mib = m.groups()
            number, solution = notebook_key(Path(path).name), "/solutions/" in path
            if number not in found or solution or not found[number][0]:
                found[number] = (solution, f"{float(seconds):.0f} s, {mib} MiB")
    return {number: figure for number, (_, figure) in found.items()}


def current_runtimes(guide: str) -> dict[str, str]:
    """The run times already in the guide's table (so a partial benchmark keeps the others)."""
    out = {}
    for line in guide.split(TABLE[0])[-1].split(TABLE[1])[0].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 5 and re.match(r"\d\d", cells[0].strip("`")):
            out[notebook_key(cells[0].strip("`"))] = cells[4]
    return out


def notebook_table(runtimes: dict[str, str]) -> str:
    """The instructor guide's table: one row per notebook of the course map, with reading and run times."""
    rows = ["| notebook | core or optional | prerequisites | reading (estimate) | run time, peak memory (measured) | learning outcomes |",
            "| --- | --- | --- | ---: | ---: | --- |"]
    for entry in NOTEBOOKS:
        minutes = reading_minutes(ROOT / "notebooks" / "solutions" / f"{entry.stem}.ipynb")
        runtime = runtimes.get(entry.key) or UNMEASURED
        rows.append(f"| `{entry.stem}` | {entry.kind} | {entry.prerequisites()} | {minutes} min | {runtime} | {entry.outcomes} |")
    return "\n".join(rows)


def readme_table() -> str:
    """The README's table (also the course website's landing page): number, title, what it teaches."""
    rows = ["| # | notebook | what you learn | core or optional |", "| --- | --- | --- | --- |"]
    for entry in NOTEBOOKS:
        link = f"[{plain_title(entry.title)}](notebooks/{entry.stem}.ipynb)"
        rows.append(f"| {entry.key} | {link} | {entry.outcomes} | {entry.kind} |")
    return "\n".join(rows)


def between(text: str, markers: tuple[str, str]) -> str:
    """What ``text`` holds between the two marker lines."""
    return text.split(markers[0], 1)[1].split(markers[1], 1)[0].strip("\n")


def checker_catches() -> str:
    """Per notebook, the named mistakes of its checkers' test banks (tests/test_checkers_NN.py, NN like 05 or 09b)."""
    sys.path.insert(0, str(ROOT / "tests"))
    lines = []
    for path in sorted((ROOT / "tests").glob("test_checkers_[0-9][0-9]*.py")):
        module = importlib.import_module(path.stem)
        banks = [(name, value) for name, value in vars(module).items()
                 if isinstance(value, dict) and "WRONG" in name and value]
        if not banks:  # checker tests without a bank of named mistakes (cases found in review)
            continue
        lines.append(f"**{path.stem.removeprefix('test_checkers_')}**: "
                     + sum(len(bank) for _, bank in banks).__str__() + " named mistakes, each rejected with its hint.")
        for name, bank in banks:
            keys = [k if isinstance(k, str) else getattr(k, "__name__", str(k)).replace("_", " ") for k in bank]
            lines.append(f"- {name.replace('_', ' ').lower()}: " + "; ".join(keys))
        lines.append("")
    return "\n".join(lines).rstrip()


def replace_between(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    head, rest = text.split(start, 1)
    return f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils.authoring.guide", description=__doc__.split("\n")[0])
    parser.add_argument("--run", nargs="*", type=Path, default=[], help="benchmark these notebooks now")
    parser.add_argument("--benchmark", type=Path, help="a saved `nbtools benchmark` table")
    args = parser.parse_args(argv)
    guide = GUIDE.read_text(encoding="utf-8")
    runtimes = current_runtimes(guide)
    if args.benchmark:
        runtimes.update(parse_benchmark(args.benchmark.read_text(encoding="utf-8")))
    if args.run:
        from .benchmark import benchmark

        table = benchmark([p.resolve() for p in args.run])
        print(table)
        runtimes.update(parse_benchmark(table))
    guide = replace_between(guide, TABLE, notebook_table({k: v for k, v in runtimes.items() if v != UNMEASURED}))
    guide = replace_between(guide, CATCHES, checker_catches())
    GUIDE.write_text(guide, encoding="utf-8")
    README.write_text(replace_between(README.read_text(encoding="utf-8"), TABLE, readme_table()), encoding="utf-8")
    print(f"updated {GUIDE.relative_to(ROOT)} and {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
