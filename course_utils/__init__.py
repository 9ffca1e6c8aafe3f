"""course_utils: the code the Attention Mechanisms notebooks share.

Each notebook first builds its idea in plain sight, then checks it against the
version here; later notebooks import it from here. Four folders, imports running
one way (core <- models <- helpers; tooling apart):

- ``core``: the attention a student reads (PyTorch only);
- ``models``: the course's models and tasks, built from the core;
- ``helpers``: plotting, explorers, quizzes, timing and the exercise checkers;
- ``tooling``: maintainers' commands (``python -m course_utils.tooling.nbtools``).

The names below are the ones every notebook uses, importable from ``course_utils`` itself
(``from course_utils import seed_everything``). Each is loaded from its module the first time it
is asked for, so ``import course_utils.core`` loads PyTorch and nothing of plotting.
"""

from __future__ import annotations

import importlib

_HOMES = {  # name -> the module it lives in
    "scaled_dot_product_attention": "core.attention",
    "causal_mask": "core.masks",
    "padding_mask": "core.masks",
    "attention_entropy": "core.metrics",
    "mean_attention_distance": "core.metrics",
    "MultiHeadAttention": "core.multihead",
    "to_torch_multihead": "core.multihead",
    "AdditiveScore": "core.scores",
    "MultiplicativeScore": "core.scores",
    "dot_scores": "core.scores",
    "scaled_dot_scores": "core.scores",
    "data_path": "models.data_files",
    "load_token_features": "models.data_files",
    "get_device": "models.repro",
    "seed_everything": "models.repro",
    "plot_attention": "helpers.plotting",
    "plot_attention_grid": "helpers.plotting",
}
_LAYERS = ("core", "models", "helpers", "tooling")

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    """Load ``course_utils.<name>`` on first use (PEP 562): a name of ``__all__`` or one of the four folders."""
    if name in _HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    elif name in _LAYERS:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # found once, then an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_LAYERS))
