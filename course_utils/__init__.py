"""course_utils: the code the Attention Mechanisms notebooks share.

Each notebook first builds its idea in plain sight, then checks it against the
version here; later notebooks import it from here. Four folders, imports running
one way (core <- models <- helpers; tooling apart):

- ``core``: the attention a student reads (PyTorch only);
- ``models``: the course's models and tasks, built from the core;
- ``helpers``: plotting, explorers, quizzes, timing and the exercise checkers;
- ``tooling``: maintainers' commands (``python -m course_utils.tooling.nbtools``).

The names below are the ones every notebook uses, importable from ``course_utils`` itself.
"""

from .core.attention import scaled_dot_product_attention
from .core.masks import causal_mask, padding_mask
from .core.metrics import attention_entropy, mean_attention_distance
from .core.multihead import MultiHeadAttention, to_torch_multihead
from .core.scores import AdditiveScore, MultiplicativeScore, dot_scores, scaled_dot_scores
from .helpers.plotting import plot_attention, plot_attention_grid
from .models.data_files import data_path, load_token_features
from .models.repro import get_device, seed_everything
from .helpers import tasks as _tasks

_tasks.enable()  # in a notebook: cells of unfinished tasks print one line instead of a traceback

__all__ = [
    "AdditiveScore",
    "MultiHeadAttention",
    "MultiplicativeScore",
    "attention_entropy",
    "causal_mask",
    "data_path",
    "dot_scores",
    "get_device",
    "load_token_features",
    "mean_attention_distance",
    "padding_mask",
    "plot_attention",
    "plot_attention_grid",
    "scaled_dot_product_attention",
    "scaled_dot_scores",
    "seed_everything",
    "to_torch_multihead",
]
