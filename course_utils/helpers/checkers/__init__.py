"""Instant feedback for the exercises: one module per exercise (05 causal_mask + leaks, 06 cross_attention +
cross_layer, 07 head_patterns + head_classes, 08 attention_vs_none), on one shared reporting core (``report``,
whose docstring documents the ``CheckResult`` record every checker returns)."""

from .attention_vs_none import check_accuracy_by_length, check_exact_match, check_token_accuracy
from .causal_mask import check_causal_mask, check_masked_attention
from .cross_attention import check_cross_attention, check_cross_attention_shapes, check_strongest_source
from .head_classes import check_classify_heads
from .head_patterns import check_head_entropy, check_head_mean_distance
from .leaks import check_leaks_future
from .report import CheckResult, summarize

__all__ = [
    "CheckResult",
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
    "summarize",
]
