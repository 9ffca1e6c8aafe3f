"""Which drawings the course has, in order: ``NAMES`` fixes the names (notebook owners place
``<!-- drawing: NAME -->`` markers with them) and ``drawings()`` collects each one from the module that
draws it (a ``Drawing`` made by ``@drawing(...)``, see ``drawing``). Imports run one way: this module
imports the drawing modules, they import ``drawing`` and ``svg``, never this one."""

from __future__ import annotations

from types import ModuleType

from . import architectures, attention, circuits, inference, masks, patterns, positions, worked
from .drawing import Drawing

MODULES: tuple[ModuleType, ...] = (attention, worked, masks, patterns, architectures, positions, inference, circuits)

NAMES = (  # in the order of the lessons
    "softmax_numbers",
    "qkv_projection",
    "scaling_numbers",
    "padding_causal_mask",
    "heatmap_reading",
    "two_heads_vs_one",
    "heads_split_merge",
    "mha_mask_conventions",
    "decoder_step",
    "causal_mask_sentence",
    "masked_scores_numbers",
    "cross_attention_who_reads",
    "decoder_layer",
    "head_patterns",
    "seq2seq_bottleneck",
    "order_blindness",
    "positional_clock_hands",
    "transformer_block",
    "next_token_shift",
    "lm_stack",
    "kv_cache",
    "tiled_attention",
    "rope_rotation",
    "grouped_query_attention",
    "induction_circuit",
)


def drawings() -> dict[str, Drawing]:
    """Every drawing, in the order of ``NAMES``; RuntimeError for a name drawn nowhere, drawn twice or not listed."""
    found: dict[str, Drawing] = {}
    for module in MODULES:
        for d in vars(module).values():
            if isinstance(d, Drawing):
                if d.name in found and found[d.name] is not d:
                    raise RuntimeError(f"drawing {d.name!r} is drawn twice")
                found[d.name] = d
    missing = [n for n in NAMES if n not in found]
    unlisted = [n for n in found if n not in NAMES]
    if missing or unlisted:
        raise RuntimeError(f"drawings without a source: {missing}; drawings missing from NAMES: {unlisted}")
    return {n: found[n] for n in NAMES}
