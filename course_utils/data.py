"""Where the course's small data files live."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def data_path(name: str) -> Path:
    """Path of ``data/<name>`` in the repository; ValueError listing the files there if it is missing."""
    path = DATA_DIR / name
    if not path.is_file():
        found = sorted(p.name for p in DATA_DIR.glob("*")) if DATA_DIR.is_dir() else []
        raise ValueError(f"no data file {name!r} in {DATA_DIR}; files there: {found}")
    return path
