"""Numbers one notebook quotes from another, read from that notebook's stored outputs (never typed by hand).

``quote("04", r"(\\d+) steps; mean training loss")`` finds the first printed line of notebook 04 that
matches the pattern and returns its first group (``"126"``). It reads the solved notebook
(``notebooks/solutions/04_*.ipynb``) where there is one, else the lesson or student version
(``notebooks/04_*.ipynb``, as in the student release), and returns None when neither holds the
line: the caller then points at the notebook instead (``quote_or_pointer``). Used from notebook 13 on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def notebook_files(number: str, root: Path = NOTEBOOKS) -> list[Path]:
    """The stored files of notebook ``number`` ("04", "07b"), solution first; empty if there is none."""
    if not isinstance(number, str) or not re.fullmatch(r"\d\d[a-z]?", number):
        raise ValueError(f"number must be a notebook number such as '04' or '07b', got {number!r}")
    return sorted((root / "solutions").glob(f"{number}_*.ipynb")) + sorted(root.glob(f"{number}_*.ipynb"))


def printed_lines(path: Path) -> list[str]:
    """Every line the notebook at ``path`` printed (stream outputs and plain-text results), in order."""
    lines = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            lines += "".join(text).splitlines() if isinstance(text, list) else text.splitlines()
    return lines


def quote(number: str, pattern: str, root: Path = NOTEBOOKS) -> str | None:
    """The first group of ``pattern`` in the first matching printed line of notebook ``number``; None if none."""
    if not isinstance(pattern, str) or re.compile(pattern).groups < 1:
        raise ValueError(f"pattern must be a regular expression with a group around the quoted value, got {pattern!r}")
    for path in notebook_files(number, root):
        for line in printed_lines(path):
            found = re.search(pattern, line)
            if found:
                return found.group(1)
    return None


def quote_or_pointer(number: str, pattern: str, root: Path = NOTEBOOKS) -> str:
    """``quote``'s value, or "see notebook NN" where no stored output holds it."""
    return quote(number, pattern, root) or f"see notebook {number}"
