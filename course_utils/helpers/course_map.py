"""The course map: for every notebook, what it teaches and where its pieces are (one entry each, in order).

The entries, pure data, are in ``course_notebooks.py``; this module reads them and finds a notebook's pieces.
The README's and the instructor guide's notebook tables are generated from it (``authoring/guide.py``), and
``tests/test_course_map.py`` holds every entry to its notebook and to the package.
Fields: ``key`` ("05"), ``stem`` ("05_causal_mask"), ``title`` (the notebook's first heading after "05 · ");
``kind`` (core or optional, "(exercise)" for an exercise); ``needs`` (notebooks to read first) and ``background``;
``outcomes``; ``sections`` (its numbered headings, ``## 2.`` and ``### 2.1``, exactly as the solution writes
them); ``tasks`` ({what the student writes: its check}, task 1 first); ``builds`` (the functions and classes of
``core/`` and ``models/`` whose docstring says "Built in notebook NN"); ``drawings`` (its ``<!-- drawing: NAME
-->`` markers); ``plots`` (its plot modules in ``helpers/``); ``tests`` (its files in ``tests/``).

The one rule to find a notebook's pieces, for notebook ``NN_name``: its entry names them all
(``python -m course_utils.helpers.course_map NN`` prints them as paths); its checker is always
``helpers/checkers/<name>.py``, and new checker tests go to ``tests/test_checkers_NN.py``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import NamedTuple

from .course_notebooks import ENTRIES


class Task(NamedTuple):
    """One task: its number in the notebook, the function (or class) the student writes, and its check."""

    number: int
    function: str
    check: str


@dataclass(frozen=True)
class Notebook:
    key: str
    stem: str
    title: str
    kind: str
    needs: tuple[str, ...]
    outcomes: str
    sections: tuple[str, ...]
    tasks: dict[str, str]
    builds: tuple[str, ...]
    drawings: tuple[str, ...]
    plots: tuple[str, ...]
    tests: tuple[str, ...]
    background: str = ""

    @property
    def name(self) -> str:
        """The stem without its number: ``"causal_mask"`` for ``05_causal_mask``."""
        return self.stem.split("_", 1)[1]

    @property
    def checker(self) -> str | None:
        """The checker module's path (from the repository root), or None for a notebook without tasks."""
        return f"course_utils/helpers/checkers/{self.name}.py" if self.tasks else None

    def task_list(self) -> list[Task]:
        return [Task(number, function, check) for number, (function, check) in enumerate(self.tasks.items(), 1)]

    def prerequisites(self) -> str:
        """``"01, 02; a little of RNNs"``: the notebooks to read first, then anything else."""
        return "; ".join(part for part in (", ".join(self.needs), self.background) if part) or "none"

    def pieces(self) -> dict[str, list[str]]:
        """Every file of this notebook, by kind, as paths from the repository root."""
        return {
            "notebook": [f"notebooks/{self.stem}.ipynb", f"notebooks/solutions/{self.stem}.ipynb"],
            "checker": [self.checker] if self.checker else [],
            "reference code": [f"course_utils/{b.rsplit('.', 1)[0].replace('.', '/')}.py: {b.rsplit('.', 1)[1]}"
                               for b in self.builds],
            "drawings": [f"notebooks/figures/{d}.svg" for d in self.drawings],
            "plots": [f"course_utils/helpers/{p}.py" for p in self.plots],
            "tests": [f"tests/{t}" for t in self.tests],
        }


NOTEBOOKS: tuple[Notebook, ...] = tuple(Notebook(**entry) for entry in ENTRIES)

_LATEX = ((r"$\sqrt{d_k}$", "√d_k"), (r"$n \times m$", "n × m"))


def plain_title(title: str) -> str:
    """A title without LaTeX, for tables and links: ``Why $\\sqrt{d_k}$`` -> ``Why √d_k``."""
    for latex, plain in _LATEX:
        title = title.replace(latex, plain)
    return re.sub(r"[$\\]", "", title)


def notebook(key: str) -> Notebook:
    """The entry of a notebook by its key (``"05"``, ``"01b"``) or its stem (``"05_causal_mask"``)."""
    for entry in NOTEBOOKS:
        if key in (entry.key, entry.stem):
            return entry
    raise KeyError(f"no notebook {key!r} in the course map; it has {[e.key for e in NOTEBOOKS]}")


def main(argv: list[str]) -> int:
    for key in argv or [entry.key for entry in NOTEBOOKS]:
        entry = notebook(key)
        print(f"{entry.stem}: {plain_title(entry.title)} ({entry.kind})")
        for kind, paths in entry.pieces().items():
            print(f"  {kind}: " + (", ".join(paths) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
