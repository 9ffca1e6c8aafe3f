"""course_utils: the code the Attention Mechanisms notebooks share.

Each notebook first builds its idea in plain sight, then checks it against the
version here; later notebooks import it from here.
"""

from .attention import (
    AdditiveScore,
    MultiplicativeScore,
    causal_mask,
    dot_scores,
    padding_mask,
    scaled_dot_product_attention,
    scaled_dot_scores,
)
from .data import data_path, load_token_features
from .metrics import attention_entropy, mean_attention_distance
from .multihead import MultiHeadAttention, to_torch_multihead
from .plotting import plot_attention, plot_attention_grid
from .repro import get_device, seed_everything

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
