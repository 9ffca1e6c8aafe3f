"""course_utils: the code the Attention Mechanisms notebooks share.

Each notebook first builds its idea in plain sight, then checks it against the
version here; later notebooks import it from here. Imports run one way: core <- models <-
helpers for what students use; the maintainers' rooms sit above them (studies <- authoring;
grading apart) and no notebook imports them:

- ``core``: the attention a student reads (PyTorch only);
- ``models``: the course's models and tasks, built from the core;
- ``helpers``: plotting, explorers, quizzes, timing and the exercise checkers;
- ``studies``: the stored experiments and the attention-speed study;
- ``authoring``: stored outputs, student versions, site, release, guide, drawings, benchmark
  (``python -m course_utils.authoring.nbtools``);
- ``grading``: the grader (``course-grade``).

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
_LAYERS = ("core", "models", "helpers", "studies", "authoring", "grading")

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    """Load ``course_utils.<name>`` on first use (PEP 562): a name of ``__all__`` or one of the folders."""
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
