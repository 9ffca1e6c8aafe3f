"""Devices and dtypes, tested without a GPU (issue 10).

Every tensor a function creates must follow its inputs' device and dtype. Three checks stand in
for a GPU: (1) a TorchFunctionMode records every factory call (torch.zeros, arange, full, ...)
made without ``device=``, which on a GPU would land on the CPU; (2) every public function and
model runs on PyTorch's ``meta`` device (tensors with shapes but no data: mixing them with CPU
tensors fails like mixing CUDA and CPU) and returns meta tensors; (3) in float64 (and bfloat16)
they return that dtype. Plus: the timer waits for the GPU, and ``get_device`` honours COURSE_DEVICE.
"""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from course_utils.core.attention import grouped_query_attention, scaled_dot_product_attention
from course_utils.core.masks import causal_mask, padding_mask
from course_utils.core.metrics import attention_entropy, mean_attention_distance
from course_utils.core.multihead import MultiHeadAttention
from course_utils.core.positions import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    sinusoidal_positional_encoding,
)
from course_utils.core.rope import RotaryMultiHeadAttention, apply_rope, rope_rotation_matrix
from course_utils.core.scores import AdditiveScore, MultiplicativeScore, dot_scores, scaled_dot_scores
from course_utils.core.sparse import sparsemax, topk_softmax
from course_utils.core.tiled_attention import online_softmax, tiled_attention
from course_utils.core.transformer import PositionwiseFeedForward, TransformerBlock
from course_utils.helpers import timing
from course_utils.models import repro
from course_utils.models.head_task import HeadsModel, NeighbourCountTask, ablate_heads, evaluate
from course_utils.models.kv_cache import forward_with_cache, generate_cached
from course_utils.models.language_model import CausalLM, generate
from course_utils.models.recall_task import RecallAttention
from course_utils.models.seq2seq import Seq2SeqNoAttention, Seq2SeqWithAttention, masked_softmax
from course_utils.models.seq2seq_data import ReversalData, iterate_batches, make_reversal_data, make_vocab
from course_utils.models.seq2seq_training import evaluate as evaluate_seq2seq

FACTORIES = {
    torch.zeros, torch.ones, torch.full, torch.empty, torch.arange, torch.tensor, torch.eye,
    torch.rand, torch.randn, torch.randint, torch.randperm, torch.linspace,
}


class FactoryRecorder(TorchFunctionMode):
    """Records factory calls made without ``device=``: on a GPU they would create CPU tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            self.calls.append(f"{func.__name__}{args}")
        return func(*args, **kwargs)


TASK = NeighbourCountTask(length=6, num_symbols=3, max_markers=2)
VOCAB = len(make_vocab())


def _calls(device: str, dtype: torch.dtype) -> dict:
    """Every public function and model of core/ and models/, on inputs of ``device`` and ``dtype``.

    Each entry is ``(function, args)``, built beforehand, so only the call itself is recorded.
    """
    g = torch.Generator().manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype).to(device)

    def model(m):
        return m.to(device=device, dtype=dtype)

    Q, K, V, x, s35 = rnd(2, 3, 4), rnd(2, 5, 4), rnd(2, 5, 6), rnd(2, 5, 8), rnd(3, 5)
    leaf = rnd(3, 5).requires_grad_()
    keys = torch.tensor([[1, 0, 3, 2]], device=device)
    tokens = torch.tensor([[1, 2, 0, 3, 1]], device=device)
    mask = causal_mask(5, device=device)
    src, lengths = torch.tensor([[3, 4, 5], [6, 7, 0]], device=device), torch.tensor([3, 2], device=device)
    allowed = torch.tensor([1, 1, 0, 1, 1], device=device).bool()
    lm = model(CausalLM(4, 8, d_model=8, num_heads=2, num_layers=1)).eval()
    return {
        "scaled_dot_product_attention": (scaled_dot_product_attention, (Q, K, V, mask[:3])),
        "attention with dropout": (scaled_dot_product_attention, (Q, K, V, None, 0.5)),
        "causal_mask": (causal_mask, (4, device)),
        "padding_mask": (padding_mask, (tokens, 0)),
        "dot_scores": (dot_scores, (Q, K)),
        "scaled_dot_scores": (scaled_dot_scores, (Q, K)),
        "AdditiveScore": (model(AdditiveScore(4, 4, 8)), (Q, K)),
        "MultiplicativeScore": (model(MultiplicativeScore(4, 4)), (Q, K)),
        "MultiHeadAttention": (model(MultiHeadAttention(8, 2, dropout=0.1)), (x, x, x, mask)),
        "sinusoidal_positional_encoding": (lambda: sinusoidal_positional_encoding(6, 8, dtype=dtype, device=device), ()),
        "SinusoidalPositionalEncoding": (SinusoidalPositionalEncoding(8), (x,)),
        "LearnedPositionalEmbedding": (model(LearnedPositionalEmbedding(6, 8)), (x,)),
        "PositionwiseFeedForward": (model(PositionwiseFeedForward(8, 16)), (x,)),
        "TransformerBlock": (model(TransformerBlock(8, 2, 16, dropout=0.1)), (x, mask)),
        "sparsemax": (sparsemax, (s35, allowed)),
        "sparsemax backward": (lambda: torch.autograd.grad(sparsemax(leaf, allowed).sum(), leaf), ()),
        "topk_softmax": (topk_softmax, (s35, 2, mask[:3])),
        "attention_entropy": (attention_entropy, (s35.softmax(-1),)),
        "mean_attention_distance": (mean_attention_distance, (s35[:, :3].softmax(-1),)),
        "masked_softmax": (masked_softmax, (s35, allowed)),
        "CausalLM": (model(CausalLM(4, 8, d_model=8, num_heads=2, num_layers=1)), (tokens,)),
        "HeadsModel": (model(HeadsModel(TASK, d_model=8, num_heads=2, d_hidden=8)), (tokens,)),
        "RecallAttention": (model(RecallAttention(4, 3, 8, 4)), (keys, keys % 3, keys[:, 0])),
        "Seq2SeqWithAttention": (model(Seq2SeqWithAttention(VOCAB, 8, 8, 8)), (src, lengths, src)),
        "Seq2SeqNoAttention": (model(Seq2SeqNoAttention(VOCAB, 8, 8)), (src, lengths, src)),
        "grouped_query_attention": (grouped_query_attention, (rnd(1, 4, 3, 4), rnd(1, 2, 5, 4), rnd(1, 2, 5, 6), mask[:3])),
        "tiled_attention": (lambda: tiled_attention(Q, K, V, mask[:3], block_size=2, query_block_size=2), ()),
        "tiled_attention causal": (lambda: tiled_attention(Q, K, V, causal=True, block_size=2), ()),
        "online_softmax": (online_softmax, (s35, 2)),
        "apply_rope": (apply_rope, (x, 3)),
        "rope_rotation_matrix": (lambda: rope_rotation_matrix(5, 4, dtype=dtype, device=device), ()),
        "RotaryMultiHeadAttention": (model(RotaryMultiHeadAttention(8, 2)), (x, x, x, mask)),
        "forward_with_cache": (forward_with_cache, (lm, tokens)),
        "generate_cached": (generate_cached, (lm, tokens[:, :2], 3)),
    }


def _run(name: str, device: str, dtype: torch.dtype):
    fn, args = _calls(device, dtype)[name]
    return fn(*args)


def _outputs(result) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _outputs(r)]
    return []


# packed GRUs need data; cached generation picks tokens (argmax) and compares lengths with max_len
ON_META = [name for name in _calls("cpu", torch.float32) if not name.startswith("Seq2Seq") and name != "generate_cached"]


@pytest.mark.parametrize("name", list(_calls("cpu", torch.float32)))
def test_no_tensor_is_created_without_a_device(name):
    fn, args = _calls("cpu", torch.float64)[name]
    with FactoryRecorder() as recorder:
        fn(*args)
    assert not recorder.calls, f"{name} creates tensors on the default device: {recorder.calls}"


@pytest.mark.parametrize("name", ON_META)
def test_runs_on_the_meta_device_and_returns_meta_tensors(name):
    outputs = _outputs(_run(name, "meta", torch.float32))
    assert outputs and all(t.device.type == "meta" for t in outputs), name


@pytest.mark.parametrize("name", list(_calls("cpu", torch.float32)))
def test_float64_in_float64_out(name):
    outputs = [t for t in _outputs(_run(name, "cpu", torch.float64)) if t.is_floating_point()]
    assert all(t.dtype == torch.float64 for t in outputs), [(name, t.dtype) for t in outputs]


def test_ablate_heads_builds_its_mask_in_the_model_dtype():
    model = HeadsModel(TASK, d_model=8, num_heads=2, d_hidden=8).to(torch.bfloat16)
    batch = TASK.sample(4, torch.Generator().manual_seed(0))
    with ablate_heads(model, [0]):
        logits, _ = model(batch.tokens)
        evaluate(model, batch)
    assert all(t.dtype == torch.bfloat16 for t in logits)
    model = HeadsModel(TASK, d_model=8, num_heads=2, d_hidden=8).to("meta")
    with ablate_heads(model, [1]):
        logits, _ = model(batch.tokens.to("meta"))
    assert all(t.device.type == "meta" for t in logits)


def test_iterate_batches_by_length_indexes_on_the_data_device(monkeypatch):
    data = make_reversal_data(20, 1, 5, seed=0)
    meta = ReversalData(data.src.to("meta"), data.tgt.to("meta"), data.lengths.to("meta"))
    seen = []
    monkeypatch.setattr(ReversalData, "subset", lambda self, index: seen.append(index.device) or index)
    for shuffle in (False, True):
        list(iterate_batches(meta, 6, shuffle=shuffle, by_length=True, generator=torch.Generator().manual_seed(0)))
    assert seen and all(d.type == "meta" for d in seen)


def test_seq2seq_predictions_stay_with_the_data():
    data, model = make_reversal_data(12, 1, 4, seed=0), Seq2SeqWithAttention(VOCAB, 8, 8, 8)
    with FactoryRecorder() as recorder:
        result = evaluate_seq2seq(model, data, batch_size=5)
    assert not recorder.calls, recorder.calls
    assert result["pred"].device == data.tgt.device and result["pred"].shape == data.tgt.shape


def test_generate_keeps_the_model_device():
    model, prompt = CausalLM(4, 8, d_model=8, num_heads=2, num_layers=1).double(), torch.tensor([1, 2])
    with FactoryRecorder() as recorder:
        out = generate(model, prompt, 3, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert out.shape == (5,) and not recorder.calls


# --- the timer waits for the GPU ------------------------------------------------------------------------


def test_time_calls_synchronizes_before_every_clock_reading(monkeypatch):
    events = []
    monkeypatch.setattr(timing, "synchronize", lambda: events.append("sync"))

    def clock():
        events.append("clock")
        return float(len(events))

    timing.time_calls({"a": lambda: events.append("work")}, repeats=2, warmup=1, clock=clock)
    readings = [i for i, e in enumerate(events) if e == "clock"]
    assert len(readings) == 6 and all(events[i - 1] == "sync" for i in readings), events


def test_synchronize_waits_for_cuda_only_once_it_is_in_use(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append("cuda"))
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    timing.synchronize()
    assert calls == []  # never starts CUDA just to time CPU work
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    timing.synchronize()
    assert calls == ["cuda"]
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append("mps"))
    timing.synchronize()
    assert calls == ["cuda", "cuda", "mps"]


# --- one switch for the device: COURSE_DEVICE ------------------------------------------------------------


@pytest.mark.parametrize(
    "value, cuda, mps, expected",
    [
        (None, False, False, "cpu"), ("", True, True, "cuda"), ("auto", True, True, "cuda"), ("auto", False, True, "mps"),
        ("cpu", True, True, "cpu"), (" CUDA ", True, False, "cuda"), ("mps", False, True, "mps"),
    ],
)
def test_get_device_honours_course_device(monkeypatch, value, cuda, mps, expected):
    if value is None:
        monkeypatch.delenv("COURSE_DEVICE", raising=False)
    else:
        monkeypatch.setenv("COURSE_DEVICE", value)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(repro, "_mps_available", lambda: mps)
    assert repro.get_device() == torch.device(expected)


@pytest.mark.parametrize("value", ["cuda", "mps"])
def test_get_device_refuses_a_device_that_is_not_here(monkeypatch, value):
    monkeypatch.setenv("COURSE_DEVICE", value)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(repro, "_mps_available", lambda: False)
    with pytest.raises(ValueError, match=f"COURSE_DEVICE={value} but no {value.upper()} device is available"):
        repro.get_device()
