"""Every kind of bad input a student could plausibly pass gets a clear TypeError / ValueError.

Issue 11: of 179 plausible calls, about 50 reached a raw error from deep inside PyTorch or
NumPy, or a silently wrong result. Each entry below is one such kind: the call, the error
type and words the message must contain (what was expected, and what came). The rule
(core/validation.py): not a tensor -> TypeError; everything else -> ValueError.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.core.attention import scaled_dot_product_attention
from course_utils.core.masks import causal_mask, padding_mask
from course_utils.core.metrics import attention_entropy, mean_attention_distance
from course_utils.core.multihead import MultiHeadAttention, to_torch_multihead
from course_utils.core.positions import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)
from course_utils.core.rope import RotaryMultiHeadAttention, apply_rope
from course_utils.core.scores import AdditiveScore, MultiplicativeScore, dot_scores
from course_utils.core.sparse import sparsemax, topk_softmax
from course_utils.core.tiled_attention import tiled_attention
from course_utils.core.transformer import PositionwiseFeedForward, TransformerBlock, to_torch_encoder_layer
from course_utils.helpers.plotting import plot_attention
from course_utils.helpers.timing import tensor_bytes, time_calls
from course_utils.models.data_files import data_path
from course_utils.models.dates import alignment_accuracy, full_year, random_examples
from course_utils.models.dates import decode as decode_date
from course_utils.models.head_task import HeadsModel, NeighbourCountTask, ablate_heads, evaluate, task_loss
from course_utils.models.kv_cache import KVCache, forward_with_cache, generate_cached
from course_utils.models.language_model import (
    CausalLM,
    CharVocab,
    RepeatPatternTask,
    generate,
    lm_loss,
    sample_windows,
    train_lm,
)
from course_utils.models.recall_task import RecallAttention, recall_batch
from course_utils.models.repro import get_device, seed_everything
from course_utils.models.seq2seq import Seq2SeqNoAttention, Seq2SeqWithAttention, masked_softmax
from course_utils.models.seq2seq_data import (
    decoder_inputs,
    iterate_batches,
    make_reversal_data,
    make_vocab,
    pad_batch,
    to_tokens,
)
from course_utils.models.seq2seq_training import accuracy_by_length, predict, token_accuracy, train_seq2seq
from course_utils.models.training import train_steps

g = torch.Generator().manual_seed(0)
Q, K, V = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 6, generator=g)
x8 = torch.randn(2, 5, 8, generator=g)
VOCAB = len(make_vocab())
DATA = make_reversal_data(6, 2, 4, seed=0)
SRC, LEN, TGT = DATA.src, DATA.lengths, DATA.tgt
S2S = Seq2SeqWithAttention(VOCAB, 8, 8, 8)
LM = CausalLM(5, 8, d_model=8, num_heads=2, num_layers=1)
TASK = NeighbourCountTask(length=6, num_symbols=3, max_markers=2)
HEADS = HeadsModel(TASK, d_model=8, num_heads=2, d_hidden=8)
META_MASK = torch.ones(3, 5, dtype=torch.bool, device="meta")
MODEL = torch.nn.Linear(2, 2)


OTHER_CACHE = forward_with_cache(CausalLM(5, 8, d_model=8, num_heads=2, num_layers=1), torch.tensor([[1, 2]]))[1]
WIDE_CACHE = forward_with_cache(CausalLM(5, 8, d_model=16, num_heads=2, num_layers=1), torch.tensor([[1, 2]]))[1]


def _hand_filled(cache: KVCache) -> KVCache:
    """The same keys and values with no owner: a cache put together by hand."""
    return KVCache(cache.keys, cache.values)


def _loss(gen):
    return MODEL(torch.randn(1, 2, generator=gen)).sum()


T, VE = TypeError, ValueError
KINDS = {
    # --- NumPy arrays or lists where a tensor is needed -----------------------------------
    "attention: NumPy Q": (lambda: scaled_dot_product_attention(Q.numpy(), K, V), T, r"Q must be a torch\.Tensor.*numpy.*torch\.as_tensor"),
    "attention: list V": (lambda: scaled_dot_product_attention(Q, K, V.tolist()), T, r"V must be a torch\.Tensor.*list"),
    "attention: NumPy mask": (lambda: scaled_dot_product_attention(Q, K, V, np.ones((3, 5), bool)), T, "mask must be a torch.Tensor"),
    "dot_scores: NumPy": (lambda: dot_scores(Q.numpy(), K.numpy()), T, "Q must be a torch.Tensor"),
    "AdditiveScore: NumPy": (lambda: AdditiveScore(4, 4, 8)(Q.numpy(), K), T, "Q must be a torch.Tensor"),
    "MultiplicativeScore: list": (lambda: MultiplicativeScore(4, 4)(Q, K.tolist()), T, "K must be a torch.Tensor"),
    "MultiHeadAttention: NumPy": (lambda: MultiHeadAttention(8, 2)(x8.numpy(), x8, x8), T, "query must be a torch.Tensor"),
    "TransformerBlock: NumPy": (lambda: TransformerBlock(8, 2, 16)(x8.numpy()), T, "x must be a torch.Tensor"),
    "positions: NumPy": (lambda: SinusoidalPositionalEncoding(8)(x8.numpy()), T, "x must be a torch.Tensor"),
    "padding_mask: list": (lambda: padding_mask([[1, 2, 0]], 0), T, "tokens must be a torch.Tensor"),
    "sparsemax: NumPy": (lambda: sparsemax(np.zeros(3)), T, "scores must be a torch.Tensor"),
    "topk_softmax: list": (lambda: topk_softmax([1.0, 2.0], 1), T, "scores must be a torch.Tensor"),
    "attention_entropy: NumPy": (lambda: attention_entropy(np.full(4, 0.25)), T, "weights must be a torch.Tensor"),
    "mean_attention_distance: list": (lambda: mean_attention_distance([[1.0]]), T, "weights must be a torch.Tensor"),
    "token_accuracy: NumPy": (lambda: token_accuracy(TGT.numpy(), TGT), T, "pred must be a torch.Tensor"),
    "seq2seq: NumPy src": (lambda: S2S(SRC.numpy(), LEN, TGT), T, "src must be a torch.Tensor"),
    "generate: list prompt": (lambda: generate(LM, [1, 2], 2), T, "prompt must be a torch.Tensor"),
    "lm_loss: NumPy": (lambda: lm_loss(np.zeros((1, 2, 5)), torch.zeros(1, 2, dtype=torch.long)), T, "logits must be a torch.Tensor"),
    "sample_windows: list": (lambda: sample_windows(list(range(20)), 4, 2), T, "ids must be a torch.Tensor"),
    # --- mixed or wrong dtypes ----------------------------------------------------------------
    "attention: float64 Q, float32 K": (lambda: scaled_dot_product_attention(Q.double(), K, V), VE, r"Q, K, V must share one device and dtype.*float64.*float32"),
    "attention: integer tensors": (lambda: scaled_dot_product_attention(Q.long(), K.long(), V.long()), VE, "floating-point"),
    "AdditiveScore: float64 input": (lambda: AdditiveScore(4, 4, 8)(Q.double(), K.double()), VE, r"dtype and device of the AdditiveScore's weights \(torch\.float32"),
    "MultiHeadAttention: float64 input": (lambda: MultiHeadAttention(8, 2)(x8.double(), x8.double(), x8.double()), VE, "float64"),
    "LearnedPositionalEmbedding: float64": (lambda: LearnedPositionalEmbedding(8, 8)(x8.double()), VE, "dtype and device"),
    "TransformerBlock: float64": (lambda: TransformerBlock(8, 2, 16)(x8.double()), VE, "float64"),
    "sinusoidal: integer dtype": (lambda: sinusoidal_positional_encoding(4, 8, dtype=torch.long), VE, "floating-point torch.dtype"),
    "attention_entropy: integer weights": (lambda: attention_entropy(torch.ones(3, dtype=torch.long)), VE, "floating-point"),
    "seq2seq: float src": (lambda: S2S(SRC.float(), LEN, TGT), VE, "src must hold integer ids"),
    "CausalLM: float tokens": (lambda: LM(torch.zeros(1, 3)), VE, "integer ids"),
    "tensor_bytes: not a dtype": (lambda: tensor_bytes((2, 3), "float32"), VE, "torch.dtype"),
    # --- a mask (or other tensor) on another device ---------------------------------------------
    "attention: mask on another device": (lambda: scaled_dot_product_attention(Q, K, V, META_MASK), VE, r"mask is on device meta but the attention scores are on cpu"),
    "multihead: mask on another device": (lambda: MultiHeadAttention(8, 2)(x8, x8, x8, causal_mask(5, device="meta")), VE, "device meta"),
    "sparsemax: mask on another device": (lambda: sparsemax(torch.zeros(3, 5), META_MASK), VE, "device meta"),
    "topk_softmax: mask on another device": (lambda: topk_softmax(torch.zeros(3, 5), 2, META_MASK), VE, "device meta"),
    "masked_softmax: mask on another device": (lambda: masked_softmax(torch.zeros(3, 5), META_MASK), VE, "device meta"),
    "attention: Q and K on two devices": (lambda: scaled_dot_product_attention(Q, K.to("meta"), V), VE, r"device meta"),
    "accuracy_by_length: lengths elsewhere": (lambda: accuracy_by_length(TGT, TGT, LEN.to("meta")), VE, r"pred, lengths must share one device"),
    "seq2seq: src elsewhere": (lambda: S2S(SRC.to("meta"), LEN.to("meta"), TGT), VE, "model's device cpu"),
    # --- batch dimensions that do not broadcast -------------------------------------------------
    "AdditiveScore: batch dims": (lambda: AdditiveScore(4, 4, 8)(torch.randn(2, 3, 4), torch.randn(3, 5, 4)), VE, r"Q \(2, 3, 4\) and K \(3, 5, 4\) do not broadcast"),
    "MultiplicativeScore: batch dims": (lambda: MultiplicativeScore(4, 4)(torch.randn(2, 3, 4), torch.randn(3, 5, 4)), VE, "do not broadcast"),
    "FFN: wrong feature size": (lambda: PositionwiseFeedForward(8, 16)(torch.randn(2, 6)), VE, r"\(\.\.\., 8\).*\(2, 6\)"),
    # --- seq2seq sizes and inputs ---------------------------------------------------------------
    "Seq2Seq: vocab_size 0": (lambda: Seq2SeqNoAttention(0), VE, "vocab_size must be a positive integer"),
    "Seq2Seq: vocab_size 2": (lambda: Seq2SeqNoAttention(2), VE, "at least 3"),
    "Seq2Seq: emb_dim 2.5": (lambda: Seq2SeqNoAttention(VOCAB, emb_dim=2.5), VE, "emb_dim must be a positive integer"),
    "Seq2Seq: hidden_dim -1": (lambda: Seq2SeqWithAttention(VOCAB, hidden_dim=-1), VE, "hidden_dim"),
    "Seq2Seq: attn_dim 0": (lambda: Seq2SeqWithAttention(VOCAB, attn_dim=0), VE, "attn_dim"),
    "Seq2Seq: pad_id outside": (lambda: Seq2SeqWithAttention(VOCAB, pad_id=VOCAB), VE, "pad_id must be a token id"),
    "Seq2Seq: bidirectional 'yes'": (lambda: Seq2SeqNoAttention(VOCAB, bidirectional="yes"), VE, "bidirectional"),
    "seq2seq: a length of 0": (lambda: S2S(SRC, torch.zeros_like(LEN), TGT), VE, r"lengths must lie in 1\.\.4 .*got values from 0"),
    "seq2seq: a length longer than the source": (lambda: S2S(SRC, LEN + 5, TGT), VE, r"lengths must lie in 1\.\.4"),
    "seq2seq: src ids outside the vocabulary": (lambda: S2S(SRC + VOCAB, LEN, TGT), VE, r"src must lie in 0\.\.11"),
    "seq2seq: negative src id": (lambda: S2S(SRC - 5, LEN, TGT), VE, r"src must lie in 0\.\.11"),
    "seq2seq: tgt ids outside the vocabulary": (lambda: S2S(SRC, LEN, TGT + VOCAB), VE, r"tgt must lie in 0\.\.11"),
    "seq2seq: 1-D target": (lambda: S2S(SRC, LEN, TGT[0]), VE, r"tgt must have shape \(B=6, T_out\)"),
    "seq2seq: 2-D lengths": (lambda: S2S(SRC, LEN[:, None], TGT), VE, r"lengths \(B,\)"),
    "greedy_decode: max_len 0": (lambda: S2S.greedy_decode(SRC, LEN, 0), VE, "max_len must be a positive integer"),
    "decoder_inputs: 1-D": (lambda: decoder_inputs(TGT[0]), VE, r"\(B, T_out\)"),
    "to_tokens: id outside": (lambda: to_tokens([3, 40], make_vocab()), VE, "outside the vocabulary"),
    "pad_batch: 1.5 as a token id": (lambda: pad_batch([[3, 1.5]]), VE, "integer token ids, got 1.5"),
    "make_vocab: 2.5": (lambda: make_vocab(2.5), VE, "positive integer"),
    "make_reversal_data: 10.5 sequences": (lambda: make_reversal_data(10.5, 2, 4), VE, "num_sequences must be a positive integer"),
    "iterate_batches: batch_size 2.5": (lambda: next(iterate_batches(DATA, 2.5)), VE, "batch_size must be a positive integer"),
    "iterate_batches: not data": (lambda: next(iterate_batches(SRC, 2)), T, "ReversalData"),
    # --- training settings -------------------------------------------------------------------------
    "train_seq2seq: 0 epochs": (lambda: train_seq2seq(S2S, DATA, epochs=0), VE, "epochs must be a positive integer, got 0"),
    "train_seq2seq: negative epochs": (lambda: train_seq2seq(S2S, DATA, epochs=-2), VE, "epochs must be a positive integer, got -2"),
    "train_seq2seq: 1.5 epochs": (lambda: train_seq2seq(S2S, DATA, epochs=1.5), VE, "epochs"),
    "train_seq2seq: batch size 0": (lambda: train_seq2seq(S2S, DATA, batch_size=0), VE, "batch_size"),
    "train_seq2seq: lr 0": (lambda: train_seq2seq(S2S, DATA, lr=0), VE, r"lr must be a finite number > 0, got 0"),
    "train_seq2seq: negative lr": (lambda: train_seq2seq(S2S, DATA, lr=-1e-3), VE, "lr must be"),
    "train_seq2seq: clip 0": (lambda: train_seq2seq(S2S, DATA, clip=0.0), VE, "clip"),
    "train_seq2seq: not data": (lambda: train_seq2seq(S2S, (SRC, TGT)), T, "ReversalData"),
    "predict: batch size 0": (lambda: predict(S2S, DATA, batch_size=0), VE, "batch_size"),
    "train_steps: lr nan": (lambda: train_steps(MODEL, _loss, steps=1, lr=float("nan")), VE, "lr must be"),
    "train_steps: 2.5 steps": (lambda: train_steps(MODEL, _loss, steps=2.5, lr=1e-3), VE, "steps must be a positive integer"),
    "train_steps: log_every -1": (lambda: train_steps(MODEL, _loss, steps=1, lr=1e-3, log_every=-1), VE, "log_every"),
    "train_lm: lr 0": (lambda: train_lm(LM, lambda gen: None, steps=1, lr=0.0), VE, "lr"),
    # --- metrics ------------------------------------------------------------------------------------
    "token_accuracy: all-padding target": (lambda: token_accuracy(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long)), VE, "only padding"),
    "token_accuracy: float target": (lambda: token_accuracy(TGT, TGT.float()), VE, "integer"),
    # --- positions ----------------------------------------------------------------------------------
    "sinusoidal: base 0": (lambda: sinusoidal_positional_encoding(4, 8, base=0.0), VE, "base must be a finite number > 0, got 0.0"),
    "sinusoidal: base -10": (lambda: sinusoidal_positional_encoding(4, 8, base=-10.0), VE, "base"),
    "sinusoidal: base nan": (lambda: sinusoidal_positional_encoding(4, 8, base=float("nan")), VE, "base"),
    "SinusoidalPositionalEncoding: base 0": (lambda: SinusoidalPositionalEncoding(8, base=0), VE, "base"),
    "sinusoidal: 2.5 positions": (lambda: sinusoidal_positional_encoding(2.5, 8), VE, "num_positions must be a positive integer"),
    # --- language model, head task, recall task -----------------------------------------------------
    "generate: negative count": (lambda: generate(LM, torch.tensor([1, 2]), -1), VE, "num_new must be a non-negative integer, got -1"),
    "generate: 2.5 tokens": (lambda: generate(LM, torch.tensor([1, 2]), 2.5), VE, "num_new"),
    "generate: negative temperature": (lambda: generate(LM, torch.tensor([1, 2]), 1, temperature=-1.0), VE, "temperature"),
    "generate: prompt outside the vocabulary": (lambda: generate(LM, torch.tensor([1, 9]), 1), VE, r"prompt must lie in 0\.\.4"),
    "CausalLM: tokens outside the vocabulary": (lambda: LM(torch.tensor([[0, 5]])), VE, r"tokens must lie in 0\.\.4 \(vocab_size=5\), got values from 0 to 5"),
    "CausalLM: num_heads 0": (lambda: CausalLM(5, 8, num_heads=0), VE, "num_heads"),
    "CausalLM: d_ff 0": (lambda: CausalLM(5, 8, d_ff=0), VE, "d_ff"),
    "CausalLM: causal 'no'": (lambda: CausalLM(5, 8, causal="no"), VE, "causal"),
    "CharVocab: not text": (lambda: CharVocab(123), VE, "non-empty str"),
    "CharVocab.encode: not text": (lambda: CharVocab("ab").encode(12), T, "text must be a str"),
    "CharVocab.decode: id outside": (lambda: CharVocab("ab").decode(torch.tensor([0, 2])), VE, r"ids must lie in 0\.\.1"),
    "RepeatPatternTask: period 2.5": (lambda: RepeatPatternTask(period=2.5), VE, "period must be a positive integer"),
    "RepeatPatternTask.to_text: id outside": (lambda: RepeatPatternTask().to_text(torch.tensor([0, 8])), VE, r"ids must lie in 0\.\.7"),
    "NeighbourCountTask: length 5.5": (lambda: NeighbourCountTask(length=5.5), VE, "length must be a positive integer"),
    "HeadsModel: not a task": (lambda: HeadsModel("task"), T, "NeighbourCountTask"),
    "HeadsModel: tokens outside": (lambda: HEADS(torch.tensor([[0, 4]])), VE, r"tokens must lie in 0\.\.3"),
    "head_task.evaluate: not a batch": (lambda: evaluate(HEADS, (1, 2)), T, "ToyBatch"),
    "ablate_heads: one int": (lambda: ablate_heads(HEADS, 1).__enter__(), T, r"iterable of head indices"),
    "ablate_heads: 1.5": (lambda: ablate_heads(HEADS, [1.5]).__enter__(), VE, r"heads must be in 0\.\.1"),
    "RecallAttention: keys outside": (lambda: RecallAttention(4, 3, 8, 4)(torch.tensor([[0, 4]]), torch.tensor([[0, 1]]), torch.tensor([0])), VE, r"keys must lie in 0\.\.3"),
    "RecallAttention: values outside": (lambda: RecallAttention(4, 3, 8, 4)(torch.tensor([[0, 1]]), torch.tensor([[0, 3]]), torch.tensor([0])), VE, r"values must lie in 0\.\.2"),
    "recall_batch: 2.5 pairs": (lambda: recall_batch(4, 2.5, 8, 3), VE, "num_pairs"),
    # --- dropout ------------------------------------------------------------------------------------------
    "MultiHeadAttention: dropout 1": (lambda: MultiHeadAttention(8, 2, dropout=1.0), VE, r"0 <= dropout < 1, got 1\.0"),
    "MultiHeadAttention: dropout -0.1": (lambda: MultiHeadAttention(8, 2, dropout=-0.1), VE, "dropout"),
    "MultiHeadAttention: dropout True": (lambda: MultiHeadAttention(8, 2, dropout=True), VE, "dropout"),
    "attention: dropout_p 1.5": (lambda: scaled_dot_product_attention(Q, K, V, dropout_p=1.5), VE, "dropout_p"),
    "TransformerBlock: norm_first 'yes'": (lambda: TransformerBlock(8, 2, 16, norm_first="yes"), VE, "norm_first"),
    # --- reproducibility, files, timing, plots -----------------------------------------------------------
    "seed_everything: negative seed": (lambda: seed_everything(-1), VE, "seed"),
    "seed_everything: 0 threads": (lambda: seed_everything(0, threads=0), VE, "threads"),
    "time_calls: 2.5 repeats": (lambda: time_calls({"f": lambda: None}, repeats=2.5), VE, "repeats must be a positive integer"),
    "time_calls: a list of functions": (lambda: time_calls([lambda: None]), T, "fns must map"),
    "data_path: not a name": (lambda: data_path(3), T, "file name"),
    "plot_attention: text": (lambda: plot_attention("abc"), VE, "numbers"),
    # --- issue 24: calls that got a raw error or a silent result ---------------------------------------------
    "tiled_attention: causal='no' (ran as causal)": (lambda: tiled_attention(Q, K, V, causal="no"), VE, r"causal must be True or False, got 'no'"),
    "tiled_attention: causal=1": (lambda: tiled_attention(Q, K, V, causal=1), VE, "causal must be True or False"),
    "tiled_attention: query_block_size=0 (taken as None)": (lambda: tiled_attention(Q, K, V, query_block_size=0), VE, "query_block_size must be a positive integer, got 0"),
    "apply_rope: base 0 (NaN tensors)": (lambda: apply_rope(x8, base=0.0), VE, "base must be a finite number > 0, got 0.0"),
    "apply_rope: base nan": (lambda: apply_rope(x8, base=float("nan")), VE, "base must be a finite number > 0, got nan"),
    "apply_rope: base -2": (lambda: apply_rope(x8, base=-2.0), VE, "base"),
    "RotaryMultiHeadAttention: base 0": (lambda: RotaryMultiHeadAttention(8, 2, base=0), VE, "base"),
    "forward_with_cache: token id = vocab_size": (lambda: forward_with_cache(LM, torch.tensor([[1, 5]])), VE, r"tokens must lie in 0\.\.4 \(vocab_size=5\), got values from 1 to 5"),
    "forward_with_cache: negative token id": (lambda: forward_with_cache(LM, torch.tensor([[-1]])), VE, r"tokens must lie in 0\.\.4"),
    "forward_with_cache: cache from another model": (lambda: forward_with_cache(LM, torch.tensor([[1]]), OTHER_CACHE), VE, "cache was filled by another model"),
    "forward_with_cache: cache from a wider model": (lambda: forward_with_cache(LM, torch.tensor([[1]]), _hand_filled(WIDE_CACHE)), VE, r"cache does not fit this model"),
    "forward_with_cache: not a cache": (lambda: forward_with_cache(LM, torch.tensor([[1]]), {"keys": []}), T, "cache must be a KVCache"),
    "generate_cached: token id outside": (lambda: generate_cached(LM, torch.tensor([1, 7]), 2), VE, r"prompt must lie in 0\.\.4"),
    "generate_cached: NaN temperature": (lambda: generate_cached(LM, torch.tensor([1, 2]), 2, temperature=float("nan")), VE, "temperature must be a finite number >= 0, got nan"),
    "generate_cached: negative temperature": (lambda: generate_cached(LM, torch.tensor([1, 2]), 2, temperature=-0.5), VE, "temperature"),
    "generate: NaN temperature": (lambda: generate(LM, torch.tensor([1, 2]), 2, temperature=float("nan")), VE, "temperature"),
    "full_year(True) (returned 2001)": (lambda: full_year(True), VE, r"two_digits must be a whole number between 0 and 99 .*got True"),
    "full_year(2.5)": (lambda: full_year(2.5), VE, "two_digits"),
    "dates.decode([-1]) (dropped the id)": (lambda: decode_date([-1]), VE, r"ids must hold integer token ids in 0\.\.39, got -1: outside the vocabulary"),
    "dates.decode([40])": (lambda: decode_date([40]), VE, "outside the vocabulary"),
    "dates.decode([2.5])": (lambda: decode_date([5, 2.5]), VE, "got 2.5: not an integer"),
    "random_examples(2.5) (returned 3)": (lambda: random_examples(2.5, seed=0), VE, "num must be a positive integer, got 2.5"),
    "alignment_accuracy: no spans (divided by zero)": (lambda: alignment_accuracy(torch.rand(2, 11, 5), torch.full((2, 11, 2), -1)), VE, "spans mark no output position with a span"),
    "alignment_accuracy: no examples": (lambda: alignment_accuracy(torch.rand(0, 11, 5), torch.zeros(0, 11, 2, dtype=torch.long)), VE, "spans"),
    "to_torch_multihead: a TransformerBlock (AttributeError)": (lambda: to_torch_multihead(TransformerBlock(8, 2, 16)), T, "mha must be a MultiHeadAttention, got course_utils.core.transformer.TransformerBlock"),
    "to_torch_multihead: torch's own": (lambda: to_torch_multihead(torch.nn.MultiheadAttention(8, 2)), T, "mha must be a MultiHeadAttention"),
    "to_torch_encoder_layer: a MultiHeadAttention (AttributeError)": (lambda: to_torch_encoder_layer(MultiHeadAttention(8, 2)), T, "block must be a TransformerBlock"),
    "task_loss: logits of another batch size (inside F.cross_entropy)": (lambda: task_loss(HEADS(TASK.sample(3).tokens)[0], TASK.sample(4)), VE, r"logits\[prev\] \(3, 6, 5\).*batch's prev \(4, 6\)"),
    "task_loss: not a batch": (lambda: task_loss(HEADS(TASK.sample(3).tokens)[0], TASK.sample(3).tokens), T, "batch must be a ToyBatch"),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_bad_input_gets_a_clear_error(kind):
    call, error, message = KINDS[kind]
    with pytest.raises(error, match=message) as info:
        call()
    assert type(info.value) is error, f"{kind}: {type(info.value).__name__}: {info.value}"


ACCEPTED = {
    "topk_softmax: k as np.int64": lambda: topk_softmax(torch.zeros(2, 3), k=np.int64(2)),
    "causal_mask: n as np.int64": lambda: causal_mask(np.int64(3)),
    "MultiHeadAttention: sizes as np.int32": lambda: MultiHeadAttention(np.int32(8), np.int32(2)),
    "recall_batch: sizes as np.int64": lambda: recall_batch(np.int64(4), np.int64(2), 8, 3),
    "train_steps: steps as np.int64": lambda: train_steps(MODEL, _loss, steps=np.int64(1), lr=np.float32(1e-3)),
    "generate: zero new tokens": lambda: generate(LM, torch.tensor([1, 2]), 0),
    "sparsemax: integer mask of 0 and 1": lambda: sparsemax(torch.zeros(3, 5), torch.ones(3, 5, dtype=torch.int64)),
    "time_calls: repeats as np.int64": lambda: time_calls({"f": lambda: None}, repeats=np.int64(2)),
}


@pytest.mark.parametrize("kind", list(ACCEPTED))
def test_numpy_integers_and_edge_values_are_accepted(kind):
    ACCEPTED[kind]()


def test_topk_softmax_with_numpy_k_equals_int_k():
    scores = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    assert torch.equal(topk_softmax(scores, np.int64(2)), topk_softmax(scores, 2))


def test_get_device_refuses_an_unknown_value(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "gpu")
    with pytest.raises(ValueError, match=r"COURSE_DEVICE='gpu' is not one of auto, cpu, cuda, mps"):
        get_device()
