"""Where the course's small data files live, and a loader for the hand-built token features."""

from __future__ import annotations

import csv
from pathlib import Path

import torch

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


def data_path(name: str) -> Path:
    """Path of ``data/<name>`` in the repository; ValueError listing the files there if it is missing.

    ``name`` is relative to ``data/`` (``"results/dates_seeds.json"`` works) and stays inside it. Used from notebook 02 on.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a file name (str) such as 'tiny_corpus.txt', got {type(name).__name__}")
    if not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"name must be a file name inside data/ such as 'tiny_corpus.txt', got {name!r}")
    path = DATA_DIR / name
    if not path.is_file():
        found = sorted(p.name for p in DATA_DIR.glob("*")) if DATA_DIR.is_dir() else []
        raise ValueError(f"no data file {name!r} in {DATA_DIR}: name must be one of the files there: {found}")
    return path


def load_token_features(name: str = "sentence_features.csv") -> tuple[list[str], list[str], torch.Tensor]:
    """Read a CSV of hand-built token features from ``data/``.

    The file's header is ``token,<feature 1>,<feature 2>,...``; every further row is
    one token of the sentence, in order, followed by one number per feature.

    Returns:
        ``(tokens, feature_names, X)``: ``n`` token strings, ``d`` feature names and
        ``X`` of shape ``(n, d)`` (float32), row i being the feature vector of token i. Used in notebooks 02 and 03.
    """
    path = data_path(name)
    tokens, values = [], []
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        if len(header) < 2 or header[0].strip() != "token":
            raise ValueError(f"{path.name}: the header must be 'token,<feature 1>,...', got {header}")
        for row in reader:
            if not row:
                continue  # tolerate blank lines
            if len(row) != len(header):
                raise ValueError(f"{path.name} line {reader.line_num}: {len(row)} fields, the header has {len(header)}")
            try:
                values.append([float(v) for v in row[1:]])
            except ValueError:
                raise ValueError(f"{path.name} line {reader.line_num}: features must be numbers, got {row[1:]}") from None
            tokens.append(row[0].strip())
    if not tokens:
        raise ValueError(f"{path.name} has a header but no token rows")
    return tokens, [h.strip() for h in header[1:]], torch.tensor(values, dtype=torch.float32)
