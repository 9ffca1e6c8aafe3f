"""Every public function of core/ and of the models' non-training modules refuses bad arguments by name.

Issue 24: "Every public function of core/ and models/ validates what it is given, by the rules of
core/validation.py". The table below lists, per function, one good call and, per argument, bad
values of every kind that argument can get wrong: the wrong type, a bool where an integer is
meant, NaN or infinity for a float, zero or negative sizes, a NumPy array or list for a tensor, a
wrong dtype, shape or device. Each bad call must raise ValueError or TypeError (nothing else: no
IndexError or RuntimeError from deep inside PyTorch) whose message names the argument, and the
good call must succeed, so a case fails because of its bad value, not of the rest of the call.
The rule: not a tensor where a tensor is needed -> TypeError; every other bad value -> ValueError;
NumPy integers count as integers, bools do not.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

from course_utils.core import attention, masks, metrics, multihead, positions, rope, scores, sparse, tiled_attention, transformer
from course_utils.models import dates, head_task, inference_caches, kv_cache, language_model, recall_task, rotary, seq2seq, seq2seq_data
from course_utils.models.data_files import data_path, load_token_features

NAN, INF = float("nan"), float("inf")
COUNT = [0, -2, 2.5, True, "4", None]  # a positive integer: none of these
COUNT0 = [-1, 2.5, True, "4", None]  # an integer >= 0
INT = [2.5, True, "4", None]  # any integer
POS_FLOAT = [0, -1.0, NAN, INF, True, "1.0", None]  # a finite number > 0
NONNEG_FLOAT = [-0.5, NAN, INF, True, "1.0", None]  # a finite number >= 0
PROB = [1.0, -0.1, NAN, True, "0.1", None]  # 0 <= p < 1
BOOL = ["no", 1, 0, None]  # True or False only
DEVICE = ["gpu", 3.5, "cpu:x"]
FLOAT_DTYPE = [torch.long, torch.bool, "float32", np.float32]
GENERATOR = [0, "seed", np.random.default_rng(0)]

g = torch.Generator().manual_seed(24)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g, dtype=dtype)


def tensor_kinds(good: torch.Tensor, dtype: bool = True) -> list:
    """A list, a NumPy array, a 0-d tensor and (with ``dtype``) an integer tensor for a floating one or the reverse."""
    other = good.long() if good.is_floating_point() else good.float()
    return [good.tolist(), good.numpy(), good.flatten()[0]] + ([other] if dtype else [])


Q, K, V = randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 6)
MASK35 = torch.rand(3, 5, generator=g) > 0.3
META_MASK = torch.ones(3, 5, dtype=torch.bool, device="meta")
FLOAT_MASK = MASK35.float()
X8 = randn(2, 5, 8)
Q4, KV4 = randn(1, 6, 3, 4), randn(1, 2, 5, 4)
MHA = multihead.MultiHeadAttention(8, 2)
BLOCK = transformer.TransformerBlock(8, 2, 16)
TOKENS = torch.tensor([[1, 2, 0, 3, 1]])
VOCAB = seq2seq_data.make_vocab()
S2S = seq2seq.Seq2SeqWithAttention(len(VOCAB), 8, 8, 8)
DATA = seq2seq_data.make_reversal_data(6, 2, 4, seed=0)
with torch.no_grad():
    MEMORY, S0 = S2S.start(DATA.src, DATA.lengths)
    Y_EMB = S2S.tgt_embedding(DATA.tgt[:, 0])
ENC_OUT, KEYS, SRC_MASK = MEMORY
DATE = dt.date(2026, 11, 24)
EXAMPLES = [dates.example(DATE, form) for form in dates.FORM_NAMES[:3]]
DATE_DATA = dates.to_data(EXAMPLES)
DATE_MODEL = seq2seq.Seq2SeqWithAttention(len(dates.VOCAB), 8, 8, 8)
PRED, WEIGHTS = dates.decode_with_weights(DATE_MODEL, DATE_DATA)
LM = language_model.CausalLM(11, 12, d_model=8, num_heads=2, num_layers=1).eval()
ROPE_LM = rotary.rotary_lm(11, 12, d_model=8, num_heads=2, num_layers=1).eval()
STEP = dict(q_new=torch.zeros(1, 2, 3, 4), k_new=torch.zeros(1, 2, 3, 4), v_new=torch.zeros(1, 2, 3, 5))  # (B, h, s, d)
STEP_BAD = {name: [torch.zeros(2, 3, 4), torch.zeros(1, 2, 3, 4, dtype=torch.long), [[0.0]], torch.zeros(1, 2, 0, 4),
                   torch.zeros(1, 3, 3, 4)] for name in STEP}  # wrong ndim, integers, a list, no positions, other h
OTHER_LM = language_model.CausalLM(11, 12, d_model=8, num_heads=2, num_layers=1).eval()
_, OTHER_CACHE = kv_cache.forward_with_cache(OTHER_LM, torch.zeros(1, 2, dtype=torch.long))
_, CACHE2 = kv_cache.forward_with_cache(LM, torch.zeros(2, 2, dtype=torch.long))
TASK = head_task.NeighbourCountTask(length=6, num_symbols=3, max_markers=2)
HEADS = head_task.HeadsModel(TASK, d_model=8, num_heads=2, d_hidden=8)
BATCH = TASK.sample(4, torch.Generator().manual_seed(0))
with torch.no_grad():
    HEADS_LOGITS, _ = HEADS(BATCH.tokens)
    OTHER_LOGITS, _ = HEADS(TASK.sample(3, torch.Generator().manual_seed(1)).tokens)  # another batch size
PATTERN = language_model.RepeatPatternTask(period=3, num_symbols=4, length=8)
CHARS = language_model.CharVocab("hello world")
RECALL = recall_task.RecallAttention(6, 4, 8, 4)
R_KEYS, R_VALUES, R_QUERY = torch.tensor([[0, 3, 5]]), torch.tensor([[1, 0, 3]]), torch.tensor([3])

# (function, good keyword arguments, {argument: bad values})
TABLE: dict[str, tuple[Callable, dict, dict[str, list]]] = {
    # --- core/attention.py -----------------------------------------------------------------------------------
    "check_qkv": (attention.check_qkv, dict(Q=Q, K=K, V=V), {
        "Q": tensor_kinds(Q) + [randn(2, 3, 5), Q.double(), Q.to("meta")], "K": tensor_kinds(K),
        "V": tensor_kinds(V) + [randn(2, 4, 6)]}),
    "scaled_dot_product_attention": (attention.scaled_dot_product_attention, dict(Q=Q, K=K, V=V, mask=MASK35), {
        "Q": tensor_kinds(Q), "K": tensor_kinds(K) + [randn(3, 5, 4)], "V": tensor_kinds(V),
        "mask": [MASK35.tolist(), MASK35.numpy(), FLOAT_MASK, META_MASK, torch.ones(4, 5, dtype=torch.bool),
                 torch.full((3, 5), 2)],
        "dropout_p": PROB}),
    "grouped_query_attention": (attention.grouped_query_attention, dict(Q=Q4, K=KV4, V=KV4), {
        "Q": tensor_kinds(Q4) + [randn(1, 5, 3, 4)], "K": tensor_kinds(KV4) + [randn(1, 4, 5, 4)],
        "V": tensor_kinds(KV4) + [randn(1, 3, 5, 4)], "mask": [FLOAT_MASK, torch.ones(2, 2, dtype=torch.bool)]}),
    # --- core/masks.py ---------------------------------------------------------------------------------------
    "check_mask": (masks.check_mask, dict(mask=MASK35, scores_shape=torch.Size((2, 3, 5)), device="cpu"), {
        "mask": [MASK35.numpy(), FLOAT_MASK, torch.ones(2, 5, dtype=torch.bool)],
        "scores_shape": ["(2, 3, 5)", (2, 3, 2.5), (2, -3, 5), 15], "device": DEVICE}),
    "causal_mask": (masks.causal_mask, dict(n=4, device="cpu"), {"n": COUNT, "device": DEVICE}),
    "padding_mask": (masks.padding_mask, dict(tokens=TOKENS, pad_id=0), {
        "tokens": tensor_kinds(TOKENS), "pad_id": INT}),
    # --- core/metrics.py -------------------------------------------------------------------------------------
    "attention_entropy": (metrics.attention_entropy, dict(weights=torch.full((3, 5), 0.2)), {
        "weights": [[0.5, 0.5], np.full(4, 0.25), torch.ones(3, dtype=torch.long), torch.tensor(0.5)]}),
    "mean_attention_distance": (metrics.mean_attention_distance, dict(weights=torch.full((3, 3), 1 / 3)), {
        "weights": tensor_kinds(torch.full((3, 3), 1 / 3))}),
    "offset_share": (metrics.offset_share, dict(weights=torch.full((3, 4), 0.25), offset=-1), {
        "weights": tensor_kinds(torch.full((3, 4), 0.25)), "offset": INT + [-3, 4]}),
    "strongest_source": (metrics.strongest_source, dict(weights=torch.full((2, 2, 3, 4), 0.25)), {
        "weights": tensor_kinds(torch.full((2, 2, 3, 4), 0.25)) + [torch.full((3, 4), 0.25)]}),
    "classify_heads": (metrics.classify_heads, dict(distance=torch.tensor([0.5, 2.0]), n=8, local_below=0.5,
                                                  global_above=0.75), {
        "distance": tensor_kinds(torch.tensor([0.5, 2.0])) + [torch.ones(2, 2)], "n": COUNT + [1],
        "local_below": NONNEG_FLOAT + [0.9], "global_above": NONNEG_FLOAT}),
    # --- core/multihead.py -----------------------------------------------------------------------------------
    "MultiHeadAttention": (multihead.MultiHeadAttention, dict(d_model=8, num_heads=2, dropout=0.1), {
        "d_model": COUNT, "num_heads": COUNT + [3], "dropout": PROB}),
    "MultiHeadAttention.forward": (MHA, dict(query=X8, key=X8, value=X8, mask=None), {
        "query": tensor_kinds(X8) + [X8.double(), randn(2, 5, 6)], "key": tensor_kinds(X8) + [randn(3, 5, 8)],
        "value": tensor_kinds(X8) + [randn(2, 4, 8)], "mask": [X8, torch.ones(5, 4, dtype=torch.bool)]}),
    "split_heads": (multihead.split_heads, dict(x=X8, num_heads=2), {
        "x": tensor_kinds(X8, dtype=False) + [randn(5, 8)], "num_heads": COUNT + [3]}),
    "MultiHeadAttention.split_heads": (MHA.split_heads, dict(x=X8), {  # a reshape: any dtype
        "x": tensor_kinds(X8, dtype=False) + [randn(2, 5, 6), randn(5, 8)]}),
    "MultiHeadAttention.merge_heads": (MHA.merge_heads, dict(x=randn(2, 2, 5, 4)), {
        "x": tensor_kinds(randn(2, 2, 5, 4), dtype=False) + [randn(2, 4, 5, 2), randn(2, 5, 8)]}),
    "to_torch_multihead": (multihead.to_torch_multihead, dict(mha=MHA), {
        "mha": [BLOCK, nn.MultiheadAttention(8, 2), None, "mha"]}),
    # --- core/positions.py -----------------------------------------------------------------------------------
    "sinusoidal_positional_encoding": (positions.sinusoidal_positional_encoding, dict(num_positions=4, d_model=8), {
        "num_positions": COUNT, "d_model": COUNT + [7], "base": POS_FLOAT, "dtype": FLOAT_DTYPE, "device": DEVICE}),
    "SinusoidalPositionalEncoding": (positions.SinusoidalPositionalEncoding, dict(d_model=8), {
        "d_model": COUNT + [7], "base": POS_FLOAT}),
    "SinusoidalPositionalEncoding.forward": (positions.SinusoidalPositionalEncoding(8), dict(x=X8), {
        "x": tensor_kinds(X8) + [randn(2, 5, 6)]}),
    "LearnedPositionalEmbedding": (positions.LearnedPositionalEmbedding, dict(max_len=6, d_model=8), {
        "max_len": COUNT, "d_model": COUNT}),
    "LearnedPositionalEmbedding.forward": (positions.LearnedPositionalEmbedding(6, 8), dict(x=X8), {
        "x": tensor_kinds(X8) + [X8.double(), randn(2, 5, 6)]}),  # (T > max_len: notebook 09 prints that message)
    # --- core/rope.py ----------------------------------------------------------------------------------------
    "rope_angles": (rope.rope_angles, dict(positions=torch.arange(3.0), d=4), {
        "positions": tensor_kinds(torch.arange(3.0)) + [torch.zeros(2, 3)], "d": COUNT + [5], "base": POS_FLOAT}),
    "apply_rope": (rope.apply_rope, dict(x=X8, offset=2), {
        "x": tensor_kinds(X8) + [randn(2, 5, 7)], "offset": COUNT0, "base": POS_FLOAT}),
    "rope_rotation_matrix": (rope.rope_rotation_matrix, dict(position=3, d=4), {
        "position": INT, "d": COUNT + [3], "base": POS_FLOAT, "dtype": FLOAT_DTYPE, "device": DEVICE}),
    "RotaryMultiHeadAttention": (rope.RotaryMultiHeadAttention, dict(d_model=8, num_heads=2), {
        "d_model": COUNT + [6], "num_heads": COUNT, "base": POS_FLOAT}),
    "RotaryMultiHeadAttention.forward": (rope.RotaryMultiHeadAttention(8, 2), dict(query=X8, key=X8, value=X8), {
        "query": tensor_kinds(X8) + [X8.double()], "key": tensor_kinds(X8), "value": tensor_kinds(X8),
        "mask": [X8, torch.ones(5, 4, dtype=torch.bool)]}),
    # --- core/scores.py --------------------------------------------------------------------------------------
    "dot_scores": (scores.dot_scores, dict(Q=Q, K=K), {"Q": tensor_kinds(Q), "K": tensor_kinds(K) + [randn(2, 5, 3)]}),
    "scaled_dot_scores": (scores.scaled_dot_scores, dict(Q=Q, K=K), {"Q": tensor_kinds(Q), "K": tensor_kinds(K)}),
    "AdditiveScore": (scores.AdditiveScore, dict(d_query=4, d_key=4, d_hidden=8), {
        "d_query": COUNT, "d_key": COUNT, "d_hidden": COUNT}),
    "AdditiveScore.forward": (scores.AdditiveScore(4, 4, 8), dict(Q=Q, K=K), {
        "Q": tensor_kinds(Q) + [Q.double(), randn(2, 3, 5)], "K": tensor_kinds(K) + [randn(3, 5, 4)]}),
    "MultiplicativeScore": (scores.MultiplicativeScore, dict(d_query=4, d_key=4), {"d_query": COUNT, "d_key": COUNT}),
    "MultiplicativeScore.forward": (scores.MultiplicativeScore(4, 4), dict(Q=Q, K=K), {
        "Q": tensor_kinds(Q), "K": tensor_kinds(K) + [randn(2, 5, 3)]}),
    # --- core/sparse.py --------------------------------------------------------------------------------------
    "sparsemax": (sparse.sparsemax, dict(scores=randn(3, 5), mask=MASK35), {
        "scores": tensor_kinds(randn(3, 5)) + [torch.zeros(3, 0)], "mask": [FLOAT_MASK, META_MASK, MASK35[:2]]}),
    "topk_softmax": (sparse.topk_softmax, dict(scores=randn(3, 5), k=2, mask=MASK35), {
        "scores": tensor_kinds(randn(3, 5)), "k": COUNT + [6], "mask": [FLOAT_MASK, META_MASK]}),
    # --- core/tiled_attention.py -----------------------------------------------------------------------------
    "online_softmax": (tiled_attention.online_softmax, dict(x=randn(3, 7), block_size=2), {
        "x": [randn(3).tolist(), randn(3).numpy(), torch.arange(3), torch.tensor(1.0)], "block_size": COUNT}),
    "tiled_attention": (tiled_attention.tiled_attention, dict(Q=Q, K=K, V=V, block_size=2, query_block_size=2), {
        "Q": tensor_kinds(Q), "K": tensor_kinds(K), "V": tensor_kinds(V) + [V.double()],
        "mask": [FLOAT_MASK, META_MASK, MASK35.numpy()], "causal": BOOL + ["yes"], "block_size": COUNT,
        "query_block_size": [0, -1, 2.5, True, "2"]}),
    # --- core/transformer.py ---------------------------------------------------------------------------------
    "PositionwiseFeedForward": (transformer.PositionwiseFeedForward, dict(d_model=8, d_ff=16), {
        "d_model": COUNT, "d_ff": COUNT}),
    "PositionwiseFeedForward.forward": (transformer.PositionwiseFeedForward(8, 16), dict(x=X8), {
        "x": [X8.tolist(), X8.numpy(), X8.long(), X8.double(), randn(2, 5, 6)]}),
    "TransformerBlock": (transformer.TransformerBlock, dict(d_model=8, num_heads=2, d_ff=16), {
        "d_model": COUNT, "num_heads": COUNT, "d_ff": COUNT, "norm_first": BOOL, "dropout": PROB}),
    "TransformerBlock.forward (pre-norm)": (transformer.TransformerBlock(8, 2, 16, norm_first=True), dict(x=X8), {
        "x": tensor_kinds(X8) + [X8.double(), randn(2, 5, 6)], "mask": [X8, torch.ones(4, 5, dtype=torch.bool)]}),
    "to_torch_encoder_layer": (transformer.to_torch_encoder_layer, dict(block=BLOCK), {
        "block": [MHA, nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), None]}),
    # --- models/dates.py -------------------------------------------------------------------------------------
    "full_year": (dates.full_year, dict(two_digits=89), {"two_digits": [True, False, 100, -1, 2.5, "89", None]}),
    "render": (dates.render, dict(date=DATE, form="d.m.yy"), {
        "date": [dt.datetime(2026, 11, 24), "2026-11-24", dt.date(1949, 12, 31), None], "form": ["iso", 3, None]}),
    "output_spans": (dates.output_spans, dict(fields=EXAMPLES[0].fields), {"fields": [None, {"day": (0, 1)}, "day"]}),
    "example": (dates.example, dict(date=DATE, form="d.m.yy"), {"date": ["2026-11-24", dt.date(2050, 1, 1)],
                                                               "form": ["dd.mm.yyyy", None]}),
    "dates.encode": (dates.encode, dict(text="3.7.89"), {"text": [37, None, b"3.7.89", "Nov 3"]}),
    "dates.decode": (dates.decode, dict(ids=[5, 6]), {
        "ids": [[-1], [2.5], [True], ["a"], [len(dates.VOCAB)], torch.tensor([[5]]), torch.tensor([5.0]), "56", 5]}),
    "DateData.subset": (DATE_DATA.subset, dict(index=torch.tensor([0, 2])), {
        "index": [[0, 2], torch.tensor([0.0]), torch.tensor([7]), torch.tensor([], dtype=torch.long)]}),
    "DateData.to": (DATE_DATA.to, dict(device="cpu"), {"device": DEVICE}),
    "span_tensor": (dates.span_tensor, dict(examples=EXAMPLES), {"examples": [[], ["3.7.89"], None, EXAMPLES[0]]}),
    "to_data": (dates.to_data, dict(examples=EXAMPLES), {"examples": [[], [DATE], None]}),
    "random_examples": (dates.random_examples, dict(num=3, seed=0), {
        "num": COUNT, "seed": INT, "exclude": [[DATE], {"x"}, None]}),
    "heldout_examples": (dates.heldout_examples, dict(num=3), {"num": COUNT + [dates.NUM_DAYS + 1]}),
    "make_date_data": (dates.make_date_data, dict(num_train=4, num_heldout=3), {
        "num_train": COUNT, "num_heldout": COUNT, "seed": INT}),
    "decode_with_weights": (dates.decode_with_weights, dict(model=DATE_MODEL, data=DATE_DATA), {
        "model": [nn.Linear(2, 2), None], "data": [(DATE_DATA.src, DATE_DATA.lengths), None], "batch_size": COUNT}),
    "alignment_hits": (dates.alignment_hits, dict(weights=WEIGHTS, spans=DATE_DATA.spans), {
        "weights": tensor_kinds(WEIGHTS), "spans": [DATE_DATA.spans.float(), DATE_DATA.spans[:, :5], DATE_DATA.spans.tolist()]}),
    "alignment_accuracy": (dates.alignment_accuracy, dict(weights=WEIGHTS, spans=DATE_DATA.spans), {
        "weights": tensor_kinds(WEIGHTS), "spans": [torch.full_like(DATE_DATA.spans, -1), DATE_DATA.spans.float()]}),
    "by_form": (dates.by_form, dict(data=DATE_DATA, pred=PRED, weights=WEIGHTS), {
        "data": [DATA, None], "pred": [PRED.float(), PRED[:, :4], PRED.tolist()], "weights": [WEIGHTS[:, :4]]}),
    # --- models/kv_cache.py ----------------------------------------------------------------------------------
    "kv_cache_bytes": (kv_cache.kv_cache_bytes, dict(num_layers=2, batch=1, kv_heads=2, length=8, d_k=4), {
        "num_layers": COUNT, "batch": COUNT, "kv_heads": COUNT, "length": COUNT, "d_k": COUNT, "dtype": FLOAT_DTYPE}),
    "forward_with_cache": (kv_cache.forward_with_cache, dict(model=LM, tokens=torch.tensor([[1, 2]]), cache=None), {
        "model": [nn.Linear(2, 2), None], "tokens": [[[1, 2]], torch.tensor([[1.0, 2.0]]), torch.tensor([1, 2]),
                                                    torch.tensor([[1, 11]]), torch.tensor([[-1, 2]])],
        "cache": [OTHER_CACHE, CACHE2, "cache", (CACHE2.keys, CACHE2.values)]}),
    "generate_cached": (kv_cache.generate_cached, dict(model=LM, prompt=torch.tensor([1, 2]), num_new=2), {
        "model": [nn.Linear(2, 2)], "prompt": [[1, 2], torch.tensor([1.0, 2.0]), torch.tensor([1, 11]), torch.tensor([-1])],
        "num_new": COUNT, "temperature": NONNEG_FLOAT, "generator": GENERATOR, "return_logits": BOOL}),
    "count_positions": (lambda model: kv_cache.count_positions(model).__enter__(), dict(model=LM), {
        "model": [nn.Linear(2, 2), None]}),
    # --- models/inference_caches.py --------------------------------------------------------------------------
    "sliding_window_mask": (inference_caches.sliding_window_mask, dict(n=4, window=2), {"n": COUNT, "window": COUNT}),
    "PreallocatedKVCache": (inference_caches.PreallocatedKVCache, dict(max_len=4), {"max_len": COUNT}),
    "SlidingWindowKVCache": (inference_caches.SlidingWindowKVCache, dict(window=2), {"window": COUNT}),
    "PreallocatedKVCache.attend": (lambda **kw: inference_caches.PreallocatedKVCache(4).attend(**kw), STEP, STEP_BAD),
    "SlidingWindowKVCache.attend": (lambda **kw: inference_caches.SlidingWindowKVCache(2).attend(**kw), STEP, STEP_BAD),
    # --- models/rotary.py ------------------------------------------------------------------------------------
    "rotary_lm": (rotary.rotary_lm, dict(vocab_size=5, max_len=8, d_model=8, num_heads=2, num_layers=1), {
        "vocab_size": COUNT, "max_len": COUNT, "positions": ["learned", "sinusoidal"]}),
    "apply_rope_halves": (rotary.apply_rope_halves, dict(x=torch.zeros(3, 4), offset=0), {
        "x": [torch.zeros(3, 5), torch.zeros(4), torch.zeros(3, 4, dtype=torch.long), [[0.0] * 4] * 3],
        "offset": [-1, 1.5, "0", None], "base": [0.0, -1.0, float("nan"), "1e4"]}),
    "halves_permutation": (rotary.halves_permutation, dict(d=4), {"d": [0, -2, 3, 2.0, "4", None]}),
    "run_with_layout": (rotary.run_with_layout, dict(model=ROPE_LM, layout="halves"), {
        "model": [nn.Linear(2, 2), LM], "layout": ["half", "", None, 1]}),
    "to_layout": (rotary.to_layout, dict(model=ROPE_LM, layout="halves"), {
        "model": [nn.Linear(2, 2), LM], "layout": ["interleaved", None]}),
    "HalvesRotaryMultiHeadAttention": (rotary.HalvesRotaryMultiHeadAttention, dict(d_model=8, num_heads=2), {
        "d_model": COUNT + [6], "num_heads": COUNT, "base": POS_FLOAT}),
    "HalvesRotaryMultiHeadAttention.rotate": (rotary.HalvesRotaryMultiHeadAttention(8, 2).rotate, dict(x=torch.zeros(1, 2, 3, 4)), {
        "x": [torch.zeros(1, 2, 3, 5), torch.zeros(3, dtype=torch.long), [[0.0]]], "offset": COUNT0}),
    "layout_of": (rotary.layout_of, dict(model=ROPE_LM), {"model": [nn.Linear(2, 2), LM]}),
    # --- models/seq2seq_data.py ------------------------------------------------------------------------------
    "argmax_offset_share": (seq2seq_data.argmax_offset_share, dict(weights=torch.full((2, 4, 5), 0.2),
                                                                  lengths=torch.tensor([3, 4]), offset=0), {
        "weights": tensor_kinds(torch.full((2, 4, 5), 0.2)) + [torch.full((4, 5), 0.2)],
        "lengths": tensor_kinds(torch.tensor([3, 4])) + [torch.tensor([3, 4, 4])], "offset": INT}),
    "make_vocab": (seq2seq_data.make_vocab, dict(num_symbols=4), {"num_symbols": COUNT + [27]}),
    "reversal_target": (seq2seq_data.reversal_target, dict(tokens=[3, 4]), {"tokens": ["34", [1.5], [-1], 5]}),
    "ReversalData.subset": (DATA.subset, dict(index=torch.tensor([1])), {
        "index": [[1], torch.tensor([1.0]), torch.tensor([6]), torch.tensor([[1]])]}),
    "ReversalData.to": (DATA.to, dict(device="cpu"), {"device": DEVICE}),
    "pad_batch": (seq2seq_data.pad_batch, dict(sequences=[[3, 4], [5]]), {
        "sequences": [[[3, 1.5]], [], 5, "ab", [[3, -1]], [[True]]], "pad_id": INT}),
    "make_reversal_data": (seq2seq_data.make_reversal_data, dict(num_sequences=4, min_len=1, max_len=3), {
        "num_sequences": COUNT, "min_len": COUNT + [4], "max_len": COUNT, "num_symbols": COUNT, "seed": INT,
        "exclude": [DATA.src, "held-out"]}),
    "heldout_reversal_data": (seq2seq_data.heldout_reversal_data, dict(min_len=1, max_len=2, num_sequences=3), {
        "min_len": COUNT, "max_len": COUNT, "num_sequences": COUNT, "num_symbols": COUNT}),
    "iterate_batches": (lambda **kw: next(seq2seq_data.iterate_batches(**kw)), dict(data=DATA, batch_size=2), {
        "data": [DATA.src, None], "batch_size": COUNT, "shuffle": BOOL, "by_length": BOOL, "generator": GENERATOR}),
    "decoder_inputs": (seq2seq_data.decoder_inputs, dict(tgt=DATA.tgt), {
        "tgt": tensor_kinds(DATA.tgt), "sos_id": INT}),
    "to_tokens": (seq2seq_data.to_tokens, dict(ids=[3, 4, 2], vocab=VOCAB), {
        "ids": [[-1], [2.5], [len(VOCAB)], torch.tensor([[3]]), torch.tensor([3.0]), 7],
        "vocab": ["abc", [], [1, 2], None], "stop_at_eos": BOOL}),
    "truncate_after_eos": (seq2seq_data.truncate_after_eos, dict(tokens=DATA.tgt), {
        "tokens": tensor_kinds(DATA.tgt), "eos_id": INT, "pad_id": INT}),
    # --- models/seq2seq.py -----------------------------------------------------------------------------------
    "masked_softmax": (seq2seq.masked_softmax, dict(scores=randn(3, 5), mask=MASK35), {
        "scores": tensor_kinds(randn(3, 5)), "mask": [FLOAT_MASK, META_MASK, MASK35[:2], MASK35.numpy()]}),
    "Seq2SeqNoAttention": (seq2seq.Seq2SeqNoAttention, dict(vocab_size=12), {
        "vocab_size": COUNT + [2], "emb_dim": COUNT, "hidden_dim": COUNT, "bidirectional": BOOL,
        "pad_id": COUNT0 + [12]}),
    "Seq2SeqWithAttention": (seq2seq.Seq2SeqWithAttention, dict(vocab_size=12), {
        "vocab_size": COUNT, "attn_dim": COUNT, "bidirectional": BOOL}),
    "Seq2SeqWithAttention.forward": (S2S, dict(src=DATA.src, lengths=DATA.lengths, tgt=DATA.tgt), {
        "src": tensor_kinds(DATA.src) + [DATA.src + 20, DATA.src.to("meta")],
        "lengths": tensor_kinds(DATA.lengths) + [DATA.lengths * 0, DATA.lengths + 9],
        "tgt": tensor_kinds(DATA.tgt) + [DATA.tgt[:3], DATA.tgt - 5]}),
    "Seq2SeqWithAttention.greedy_decode": (S2S.greedy_decode, dict(src=DATA.src, lengths=DATA.lengths, max_len=3), {
        "src": tensor_kinds(DATA.src), "lengths": tensor_kinds(DATA.lengths), "max_len": COUNT}),
    "Seq2SeqWithAttention.attend": (S2S.attend, dict(s=S0, enc_out=ENC_OUT, keys=KEYS, mask=SRC_MASK), {
        "s": tensor_kinds(S0) + [S0.double(), S0[:, :4]], "enc_out": tensor_kinds(ENC_OUT) + [ENC_OUT[:, :, :3]],
        "keys": tensor_kinds(KEYS) + [KEYS[:, :2]], "mask": [SRC_MASK.float(), SRC_MASK.numpy(), SRC_MASK[:2]]}),
    "Seq2SeqWithAttention.step": (S2S.step, dict(y_emb=Y_EMB, s_prev=S0, memory=MEMORY), {
        "y_emb": tensor_kinds(Y_EMB) + [Y_EMB[:, :3], Y_EMB.double()], "s_prev": tensor_kinds(S0) + [S0[:2]]}),
    # --- models/data_files.py --------------------------------------------------------------------------------
    "data_path": (data_path, dict(name="tiny_corpus.txt"), {
        "name": [3, None, "", "../README.md", "/etc/hostname", "no_such_file.txt"]}),
    "load_token_features": (load_token_features, dict(name="sentence_features.csv"), {
        "name": [3, "no_such_file.csv", "../conftest.py"]}),
    # --- models/head_task.py (not the training function) ------------------------------------------------------
    "marker_beside": (head_task.marker_beside, dict(tokens=torch.tensor([[1, 2, 3, 2]]), marker_id=2), {
        "tokens": tensor_kinds(torch.tensor([[1, 2, 3, 2]])) + [torch.tensor([1, 2, 3])], "marker_id": INT}),
    "ToyBatch.to": (BATCH.to, dict(device="cpu"), {"device": DEVICE}),
    "NeighbourCountTask": (head_task.NeighbourCountTask, dict(length=6, num_symbols=3), {
        "length": COUNT + [1], "num_symbols": COUNT + [27], "max_markers": COUNT0 + [7]}),
    "NeighbourCountTask.to_text": (TASK.to_text, dict(ids=torch.tensor([0, 3, 4])), {
        "ids": [[0, 1], torch.tensor([0.0]), torch.tensor([[0]]), torch.tensor([5]), torch.tensor([-1])]}),
    "NeighbourCountTask.sample": (TASK.sample, dict(batch_size=2), {"batch_size": COUNT, "generator": GENERATOR}),
    "HeadsModel": (head_task.HeadsModel, dict(task=TASK, d_model=8, num_heads=2, d_hidden=8), {
        "task": [PATTERN, None, "task"], "d_model": COUNT, "num_heads": COUNT + [3], "d_hidden": COUNT}),
    "HeadsModel.forward": (HEADS, dict(tokens=BATCH.tokens), {
        "tokens": tensor_kinds(BATCH.tokens) + [torch.full((2, 7), 1), BATCH.tokens + 4, BATCH.tokens.to("meta")]}),
    "task_loss": (head_task.task_loss, dict(logits=HEADS_LOGITS, batch=BATCH), {
        "logits": [OTHER_LOGITS, HEADS_LOGITS[:2], HEADS_LOGITS[0], None,
                   (HEADS_LOGITS[0], HEADS_LOGITS[1], HEADS_LOGITS[2][..., :1])],
        "batch": [tuple(BATCH), None]}),
    "head_task.evaluate": (head_task.evaluate, dict(model=HEADS, batch=BATCH), {
        "model": [nn.Linear(2, 2), LM], "batch": [tuple(BATCH), BATCH.tokens]}),
    "ablate_heads": (lambda **kw: head_task.ablate_heads(**kw).__enter__(), dict(model=HEADS, heads=[1]), {
        "model": [MHA, None], "heads": [1, [1.5], [2], [-1], [True], ["0"], None]}),
    # --- models/language_model.py (not the training function) -------------------------------------------------
    "next_token_probs": (language_model.next_token_probs, dict(logits=randn(2, 5), temperature=0.5), {
        "logits": tensor_kinds(randn(2, 5)), "temperature": NONNEG_FLOAT}),
    "shift_by_one": (language_model.shift_by_one, dict(sequences=TOKENS), {
        "sequences": [TOKENS.tolist(), TOKENS.numpy(), torch.tensor([3])]}),
    "RepeatPatternTask": (language_model.RepeatPatternTask, dict(period=3, num_symbols=4, length=8), {
        "period": COUNT, "num_symbols": COUNT + [27], "length": COUNT + [3]}),
    "RepeatPatternTask.to_text": (PATTERN.to_text, dict(ids=torch.tensor([0, 3])), {
        "ids": [[0, 3], torch.tensor([0.0]), torch.tensor([[0]]), torch.tensor([4])]}),
    "RepeatPatternTask.sample": (PATTERN.sample, dict(batch_size=2), {"batch_size": COUNT, "generator": GENERATOR}),
    "RepeatPatternTask.batch": (PATTERN.batch, dict(batch_size=2), {"batch_size": COUNT, "generator": GENERATOR}),
    "CharVocab": (language_model.CharVocab, dict(text="abc"), {"text": ["", 123, None, ["a", "b"]]}),
    "CharVocab.encode": (CHARS.encode, dict(text="hello"), {"text": [12, None, "HELLO"]}),
    "CharVocab.decode": (CHARS.decode, dict(ids=torch.tensor([0, 1])), {
        "ids": [[0, 1], torch.tensor([0.0]), torch.tensor([[0]]), torch.tensor([len(CHARS)]), torch.tensor([-1])]}),
    "load_corpus": (language_model.load_corpus, dict(name="tiny_corpus.txt"), {"name": [3, "nope.txt", "../README.md"]}),
    "sample_windows": (language_model.sample_windows, dict(ids=torch.arange(20), block_size=4, batch_size=2), {
        "ids": [list(range(20)), torch.arange(20.0), torch.arange(4), torch.arange(20).view(4, 5)],
        "block_size": COUNT, "batch_size": COUNT, "generator": GENERATOR}),
    "CausalLM": (language_model.CausalLM, dict(vocab_size=5, max_len=8, d_model=8, num_heads=2, num_layers=1), {
        "vocab_size": COUNT, "max_len": COUNT, "d_model": COUNT, "num_heads": COUNT + [3], "num_layers": COUNT,
        "d_ff": [0, -1, 2.5, True, "16"], "positions": ["rope", None, 1], "causal": BOOL}),
    "CausalLM.forward": (LM, dict(tokens=TOKENS), {
        "tokens": tensor_kinds(TOKENS) + [torch.full((1, 13), 1), TOKENS + 10, TOKENS - 2, TOKENS.to("meta")]}),
    "lm_loss": (language_model.lm_loss, dict(logits=randn(2, 3, 5), targets=torch.zeros(2, 3, dtype=torch.long)), {
        "logits": tensor_kinds(randn(2, 3, 5)), "targets": [torch.zeros(2, 3), torch.zeros(3, 3, dtype=torch.long),
                                                            torch.full((2, 3), 5), torch.full((2, 3), -1)]}),
    "check_prompt": (language_model.check_prompt, dict(model=LM, prompt=torch.tensor([1, 2])), {
        "prompt": tensor_kinds(torch.tensor([1, 2]), dtype=False) + [torch.tensor([1.0, 2.0]), torch.zeros(1, 0).long(),
                                                                      torch.tensor([-1, 2])]}),
    "generate": (language_model.generate, dict(model=LM, prompt=torch.tensor([1, 2]), num_new=2), {
        "model": [nn.Linear(2, 2), None], "prompt": [[1, 2], torch.tensor([1.0]), torch.tensor([1, 11])],
        "num_new": COUNT0, "temperature": NONNEG_FLOAT, "generator": GENERATOR}),
    "generation_accuracy": (language_model.generation_accuracy, dict(model=LM, sequences=TOKENS, prompt_len=2), {
        "model": [nn.Linear(2, 2)], "sequences": [TOKENS.tolist(), TOKENS.float(), TOKENS[0]],
        "prompt_len": COUNT + [5]}),
    "stepwise_logits": (language_model.stepwise_logits, dict(model=LM, tokens=TOKENS), {
        "model": [nn.Linear(2, 2)], "tokens": tensor_kinds(TOKENS)}),
    # --- models/recall_task.py (not the training function) ----------------------------------------------------
    "recall_batch": (recall_task.recall_batch, dict(batch_size=2, num_pairs=2, num_keys=4, num_values=3), {
        "batch_size": COUNT, "num_pairs": COUNT + [5], "num_keys": COUNT, "num_values": COUNT, "generator": GENERATOR}),
    "RecallAttention": (recall_task.RecallAttention, dict(num_keys=6, num_values=4, d_model=8, d_k=4), {
        "num_keys": COUNT, "num_values": COUNT, "d_model": COUNT, "d_k": COUNT, "scale": BOOL}),
    "RecallAttention.scores": (RECALL.scores, dict(keys=R_KEYS, query=R_QUERY), {
        "keys": tensor_kinds(R_KEYS) + [R_KEYS + 6, R_KEYS.to("meta")], "query": [[3], R_QUERY.float(), torch.tensor([6])]}),
    "RecallAttention.forward": (RECALL, dict(keys=R_KEYS, values=R_VALUES, query=R_QUERY), {
        "keys": tensor_kinds(R_KEYS), "values": tensor_kinds(R_VALUES) + [R_VALUES + 4, R_VALUES[:, :2]],
        "query": [[3], R_QUERY.float(), torch.tensor([-1])]}),
}

# --- issue 33: the classes of bad values the first table missed: empty inputs (a 0-size dimension), weights
# that are no distribution (a negative weight, a row summing to 2, NaN), NaN where a number is read, and wrong
# types (a float where an integer id is meant, a string seed); and the training and induction modules' functions.
from course_utils.models import induction, seq2seq_training, training  # noqa: E402

UNIFORM = torch.full((2, 2, 3, 4), 0.25)
NEGATIVE_ROW = torch.tensor([[0.5, 0.7, -0.2]])
NOT_A_DISTRIBUTION = [NEGATIVE_ROW, torch.tensor([[1.0, 1.0]]), torch.tensor([[NAN, 1.0]])]
COPY = induction.repeat_batch(2, 8, 3, vocab_size=10, generator=torch.Generator().manual_seed(0))
NO_COPY = induction.CopyBatch(COPY.tokens, torch.full_like(COPY.source, -1))
AOT = induction.AttentionOnlyTransformer(10, 8, d_model=8, num_layers=1)
with torch.no_grad():
    AOT_LOGITS = AOT(COPY.tokens)[0]
PAIR = (torch.tensor([[1, 2, 3], [3, 0, 0]]), torch.tensor([[1, 2, 3], [3, 0, 0]]))
LINEAR = nn.Linear(2, 1)


def _loss(output):
    return lambda generator: output(LINEAR.weight)


CLASSES: dict[str, tuple[Callable, dict, dict[str, list]]] = {
    "grouped_query_attention (no key/value heads)": (attention.grouped_query_attention, dict(Q=Q4, K=KV4, V=KV4), {
        "K": [randn(1, 0, 5, 4)], "V": [randn(1, 0, 5, 4)]}),
    "attention_entropy (no distribution)": (metrics.attention_entropy, dict(weights=torch.full((3, 5), 0.2)), {
        "weights": NOT_A_DISTRIBUTION}),
    "strongest_source (no keys, NaN)": (metrics.strongest_source, dict(weights=UNIFORM), {
        "weights": [torch.zeros(2, 2, 3, 0), UNIFORM.masked_fill(UNIFORM > 0, NAN), -UNIFORM]}),
    "classify_heads (NaN)": (metrics.classify_heads, dict(distance=torch.tensor([0.5, 2.0]), n=8), {
        "distance": [torch.tensor([NAN, 2.0])]}),
    "alignment_accuracy (no distribution)": (dates.alignment_accuracy, dict(weights=WEIGHTS, spans=DATE_DATA.spans), {
        "weights": [torch.full_like(WEIGHTS, NAN), -WEIGHTS]}),
    "stepwise_logits (no tokens)": (language_model.stepwise_logits, dict(model=LM, tokens=TOKENS), {
        "tokens": [torch.zeros(1, 0, dtype=torch.long)]}),
    "RecallAttention.forward (no pairs)": (RECALL, dict(keys=R_KEYS, values=R_VALUES, query=R_QUERY), {
        "keys": [R_KEYS[:, :0]]}),
    "sequence_loss": (seq2seq_training.sequence_loss, dict(logits=randn(2, 3, 5), tgt=torch.ones(2, 3, dtype=torch.long)), {
        "logits": tensor_kinds(randn(2, 3, 5)), "tgt": [torch.ones(2, 3), torch.ones(2, 4, dtype=torch.long),
                                                        torch.zeros(2, 3, dtype=torch.long)],  # every target padding
        "pad_id": INT}),
    "token_accuracy": (seq2seq_training.token_accuracy, dict(pred=PAIR[0], target=PAIR[1]), {
        "pred": [PAIR[0].tolist(), PAIR[0][:1]], "target": [PAIR[1][:, :0], torch.zeros(2, 3, dtype=torch.long)],
        "pad_id": INT}),
    "exact_match_accuracy (no sequences)": (seq2seq_training.exact_match_accuracy, dict(pred=PAIR[0], target=PAIR[1]), {
        "pred": [PAIR[0][:0]], "target": [PAIR[1][:0]], "pad_id": INT}),
    "held_out": (induction.held_out, dict(period=3, count=2), {
        "period": COUNT, "count": COUNT, "vocab_size": COUNT, "seed": INT + ["x"]}),
    "AttentionOnlyTransformer.forward": (AOT, dict(tokens=COPY.tokens), {
        "tokens": tensor_kinds(COPY.tokens) + [COPY.tokens[:, :0], COPY.tokens + 10]}),
    "copy_losses": (induction.copy_losses, dict(logits=AOT_LOGITS, batch=COPY), {
        "logits": tensor_kinds(AOT_LOGITS) + [AOT_LOGITS[:, :-1]], "batch": [COPY.tokens, None]}),
    "copy_accuracy": (induction.copy_accuracy, dict(model=AOT, batch=COPY), {
        "model": [nn.Linear(2, 2), nn.Embedding(3, 2), None], "batch": [NO_COPY, COPY.tokens]}),
    "train_steps (the loss)": (training.train_steps, dict(model=LINEAR, batch_loss=_loss(lambda w: w.sum()), steps=1,
                                                           lr=0.1), {
        "batch_loss": [_loss(lambda w: w.sum(0)), _loss(lambda w: w.sum().item()), _loss(lambda w: w.sum().detach())],
        "steps": COUNT, "lr": POS_FLOAT}),
    "Adam": (training.Adam, dict(params=[LINEAR.weight], lr=0.1), {
        "params": [LINEAR.weight, [], ["w"]], "lr": POS_FLOAT, "eps": POS_FLOAT,
        "betas": [(1.0, 0.999), (0.9,), (0.9, 1.0), (-0.1, 0.9), (0.9, NAN), "ab", None]}),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_bad_values_of_the_new_classes_get_a_clear_error_that_names_them(name):
    TABLE_CHECK(*CLASSES[name])


def test_what_the_new_classes_must_still_accept():
    """The limits, not the bad values: a fully masked row (all zero) has entropy 0, a tiny temperature is
    greedy decoding (no NaN), an empty cache still extends."""
    assert metrics.attention_entropy(torch.tensor([[0.0, 0.0], [0.5, 0.5]]))[0] == 0
    probs = language_model.next_token_probs(torch.tensor([1.0, 3.0, 2.0]), 1e-300)
    assert probs.tolist() == [0.0, 1.0, 0.0]
    assert metrics.strongest_source(UNIFORM[:, :, :0]).shape == (2, 0)  # no queries: an empty answer


@pytest.mark.parametrize("name", list(TABLE))
def test_bad_arguments_get_a_clear_error_that_names_them(name):
    """One test per function (not per case: some 1,300 cases, cheap to run, costly as separate tests)."""
    TABLE_CHECK(*TABLE[name])


def TABLE_CHECK(fn, good: dict, bad: dict) -> None:  # noqa: N802 - shared by both tables
    fn(**good)  # the good call works, so each bad call fails because of its one bad value
    problems = []
    for arg, values in bad.items():
        for value in values:
            try:
                fn(**{**good, arg: value})
            except (ValueError, TypeError) as err:
                if type(err) not in (ValueError, TypeError):
                    problems.append(f"{arg}={value!r:.40}: {type(err).__name__} (a subclass) {err}")
                elif not re.search(rf"(?<![\w.]){re.escape(arg)}(?!\w)", str(err)):
                    problems.append(f"{arg}={value!r:.40}: the message does not name {arg!r}: {err}")
            except Exception as err:  # noqa: BLE001 - the point: anything else is a raw error
                problems.append(f"{arg}={value!r:.40}: raw {type(err).__name__}: {err}")
            else:
                problems.append(f"{arg}={value!r:.40}: accepted")
    assert not problems, "\n".join(problems)


def test_numpy_integers_count_as_integers_and_bools_do_not():
    assert dates.full_year(np.int64(89)) == 1989
    assert len(dates.random_examples(np.int32(3), np.int64(0))) == 3
    assert dates.decode(np.array([5, 6])) == dates.decode([5, 6])
    assert seq2seq_data.to_tokens(np.array([3, 2]), VOCAB) == ["a", "<eos>"]
    assert rope.apply_rope(X8, np.int64(3)).shape == X8.shape
    assert tiled_attention.tiled_attention(Q, K, V, query_block_size=np.int64(2)).shape == (2, 3, 6)
    assert kv_cache.kv_cache_bytes(np.int64(1), 1, 1, 1, 1) == 8
    for bad in (True, False):
        with pytest.raises(ValueError, match="two_digits"):
            dates.full_year(bad)  # True == 1 would be 2001


def test_every_public_function_is_in_the_table():
    """A new public function or class of these modules must come with its bad-input cases."""
    import inspect

    modules = [attention, masks, metrics, multihead, positions, rope, scores, sparse, tiled_attention, transformer,
               dates, kv_cache, inference_caches, rotary, seq2seq, seq2seq_data, head_task, language_model, recall_task]
    skipped = {"train_heads_model", "train_lm", "train_recall",  # the training functions: helper "lean"'s
               "DateExample", "KVCache", "ReversalData", "DateData", "ToyBatch",  # plain records: their methods are in
               "token_ids"}  # the shared check behind decode / to_tokens / pad_batch / reversal_target
    listed = {name.split(".")[0].split(" ")[0] for name in TABLE} | {name.split(".")[-1] for name in TABLE}
    missing = []
    for module in modules:
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__ or name in skipped:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                if name not in listed:
                    missing.append(f"{module.__name__}.{name}")
    assert not missing, missing
