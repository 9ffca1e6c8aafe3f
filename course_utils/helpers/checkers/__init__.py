"""Instant feedback for the exercises: one module per exercise, on one shared reporting core (``report``)."""

from .attention_vs_none import check_accuracy_by_length, check_exact_match, check_token_accuracy
from .causal_mask import check_causal_mask, check_masked_attention
from .leaks import check_leaks_future
from .cross_attention import check_cross_attention, check_cross_attention_shapes, check_strongest_source
from .head_classes import check_classify_heads
from .head_patterns import check_head_entropy, check_head_mean_distance

__all__ = [
    "check_accuracy_by_length",
    "check_causal_mask",
    "check_classify_heads",
    "check_cross_attention",
    "check_cross_attention_shapes",
    "check_exact_match",
    "check_head_entropy",
    "check_head_mean_distance",
    "check_leaks_future",
    "check_masked_attention",
    "check_strongest_source",
    "check_token_accuracy",
]
