"""The contract with the grader (``course_utils/helpers/checkers/__init__.py``): every checker judges a
remote stand-in of the student's code exactly as it judges the code itself, so that a grader can run the
student's functions in another process.

``Remote`` below is a test double of the grader's proxies, written from the contract: every argument
and result crosses a plain-data wire (JSON plus ``.npy`` arrays loaded with ``allow_pickle=False``; a
fixture as its ``to_spec()``), in-place changes of tensor and array arguments are copied back,
fixtures absorb the record of their copy, an exception comes back as one of the same class name and
message, an unknown result comes back as an ``Opaque`` stand-in, and an instance of a student's class
shows only ``state_dict()``, plain attributes and callable sub-modules. Anything else a checker tries
(a non-plain argument, introspection such as ``__code__`` or ``__wrapped__``, a method of an instance)
raises ``ContractBreach``, which no checker catches: the test fails.
"""

import builtins
import io
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from checker_testing import stub as _stub
from test_checkers_report import (  # the reference answers of 05-08, written independently of the checkers
    CrossAttention,
    accuracy_by_length,
    causal_mask,
    classify_heads,
    exact_match,
    head_entropy,
    head_mean_distance,
    leaks_future,
    masked_attention,
    strongest_source,
    token_accuracy,
)
from test_checkers_report import shapes as cross_attention_shapes
from torch import nn

from course_utils.helpers import checkers
from course_utils.helpers.checkers import fixtures


class ContractBreach(BaseException):
    """A checker passed or read something Contract A does not allow (BaseException: no checker catches it)."""


class Opaque:
    """A result that is not plain data: only its type's name and a short repr come back."""


def _opaque(value) -> Opaque:
    text = repr(value)[:60]
    return type(type(value).__name__, (Opaque,), {"__repr__": lambda self: text})()


def _encode(x, arrays: list, strict: bool):
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu()
        arrays.append((t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy())
        return {"$tensor": len(arrays) - 1, "dtype": str(t.dtype).replace("torch.", ""), "grad": x.requires_grad}
    if isinstance(x, np.ndarray) and x.dtype.kind != "O":
        arrays.append(x)
        return {"$array": len(arrays) - 1}
    if isinstance(x, np.generic):
        arrays.append(np.asarray(x))
        return {"$scalar": len(arrays) - 1}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, torch.Size):
        return {"$size": list(x)}
    if isinstance(x, torch.dtype):
        return {"$dtype": str(x).replace("torch.", "")}
    if isinstance(x, (tuple, list)):
        return {"$tuple" if isinstance(x, tuple) else "$list": [_encode(v, arrays, strict) for v in x]}
    if isinstance(x, dict) and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in x):
        return {"$dict": [[k, _encode(v, arrays, strict)] for k, v in x.items()]}
    if isinstance(x, fixtures.Fixture):
        return {"$fixture": x.fixture_name, "spec": _encode(x.to_spec(), arrays, strict)}
    if strict:
        raise ContractBreach(f"a {type(x).__name__} is not plain data")
    return {"$opaque": type(x).__name__, "repr": repr(x)[:60]}


def _decode(x, arrays: list, made: list):
    if isinstance(x, dict):
        if "$tensor" in x:
            t = torch.from_numpy(arrays[x["$tensor"]].copy())
            t = t.view(torch.bfloat16) if x["dtype"] == "bfloat16" else t
            return t.requires_grad_() if x.get("grad") else t  # requires_grad crosses (rule 2)
        if "$array" in x:
            return arrays[x["$array"]].copy()
        if "$scalar" in x:
            return arrays[x["$scalar"]][()]
        if "$size" in x:
            return torch.Size(x["$size"])
        if "$dtype" in x:
            return getattr(torch, x["$dtype"])
        if "$tuple" in x or "$list" in x:
            items = [_decode(v, arrays, made) for v in x.get("$tuple", x.get("$list"))]
            return tuple(items) if "$tuple" in x else items
        if "$dict" in x:
            return {k: _decode(v, arrays, made) for k, v in x["$dict"]}
        if "$fixture" in x:
            fixture = fixtures.build(x["$fixture"], _decode(x["spec"], arrays, made))
            made.append(fixture)
            return fixture
        if "$opaque" in x:
            return type(x["$opaque"], (Opaque,), {"__repr__": lambda self, r=x["repr"]: r})()
    return x


def wire(value, strict: bool, made: list | None = None):
    """``value`` after a trip through JSON and .npy files (no pickle anywhere)."""
    arrays = []
    text = json.dumps(_encode(value, arrays, strict))
    loaded = []
    for array in arrays:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        buffer.seek(0)
        loaded.append(np.load(buffer, allow_pickle=False))
    return _decode(json.loads(text), loaded, made if made is not None else [])


def _stand_in(err: BaseException) -> BaseException:
    kind = getattr(builtins, type(err).__name__, None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = type(type(err).__name__, (Exception,), {})
    return kind(str(err))


def _copy_back(sent, received, fixtures_sent: list, fixtures_made: list) -> None:
    """Tensors and arrays the student changed in place change the same way here; fixtures absorb records."""
    if isinstance(sent, torch.Tensor) and isinstance(received, torch.Tensor):
        if sent.shape == received.shape and not torch.equal(sent.nan_to_num(), received.nan_to_num()):
            with torch.no_grad():
                sent.copy_(received)
    elif isinstance(sent, np.ndarray) and isinstance(received, np.ndarray) and sent.shape == received.shape:
        sent[...] = received
    elif isinstance(sent, (tuple, list)) and isinstance(received, (tuple, list)):
        for a, b in zip(sent, received):
            _copy_back(a, b, fixtures_sent, fixtures_made)
    elif isinstance(sent, dict) and isinstance(received, dict):
        for key in sent:
            _copy_back(sent[key], received.get(key), fixtures_sent, fixtures_made)
    elif isinstance(sent, fixtures.Fixture):
        fixtures_sent.append(sent)


def _remote_call(target, args, kwargs, make_instance: bool = False):
    made = []
    w_args, w_kwargs = wire([list(args), kwargs], strict=True, made=made)
    try:
        result, error = target(*w_args, **w_kwargs), None
    except Exception as err:  # noqa: BLE001 - the student's exception comes back as a stand-in
        result, error = None, err
    sent = []
    _copy_back([list(args), kwargs], [w_args, w_kwargs], sent, made)
    for original, copy in zip(sent, made):
        original.absorb(wire(copy.record(), strict=True))
    if error is not None:
        raise _stand_in(error)
    return RemoteInstance(result) if make_instance else wire(result, strict=False)


class Remote:
    """A stand-in for a student's function or class: calls go over the wire; nothing else is there."""

    def __init__(self, target, kind: str = "function") -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "__name__", target.__name__)

    def __call__(self, *args, **kwargs):
        return _remote_call(self._target, args, kwargs, make_instance=self._kind == "class")

    def __getattr__(self, name):
        raise ContractBreach(f"a checker read {name!r} of the student's {self._kind}")


class RemoteInstance:
    """An instance of the student's class: calls, ``state_dict()``, plain attributes, callable sub-modules."""

    def __init__(self, obj) -> None:
        object.__setattr__(self, "_obj", obj)

    def __call__(self, *args, **kwargs):
        return _remote_call(self._obj, args, kwargs)

    def state_dict(self):
        return wire(dict(self._obj.state_dict()), strict=False)

    def __getattr__(self, name):
        value = getattr(self._obj, name)
        if isinstance(value, nn.Module):
            return RemoteInstance(value)
        if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
            return wire(value, strict=False)
        raise ContractBreach(f"a checker read {name!r} ({type(value).__name__}) of an instance of the student's class")


def test_the_wire_keeps_plain_data_and_refuses_the_rest():
    value = {"t": torch.arange(3.0).to(torch.bfloat16), 1: (np.float32(2.5), [True, None, "x"]), "s": torch.Size([2]),
             "d": torch.float16, "a": np.array(["ab", "c"]), "h": torch.tensor([1.0], dtype=torch.float16)}
    back = wire(value, strict=True)
    assert back["t"].dtype == torch.bfloat16 and torch.equal(back["t"].float(), torch.arange(3.0))
    assert back[1] == (np.float32(2.5), [True, None, "x"]) and isinstance(back[1][0], np.float32)
    assert back["s"] == torch.Size([2]) and back["d"] is torch.float16 and back["a"].tolist() == ["ab", "c"]
    with pytest.raises(ContractBreach):
        wire({"f": lambda: 1}, strict=True)
    assert type(wire(object(), strict=False)).__name__ == "object"
    with pytest.raises(ContractBreach):
        Remote(lambda x: x).__code__  # noqa: B018 - introspection of the student's function is a breach


def test_the_double_copies_in_place_changes_back_and_re_raises_by_name():
    x = torch.zeros(3)
    Remote(lambda t: t.add_(1))(x)
    assert torch.equal(x, torch.ones(3))

    class Odd(Exception):
        pass

    def raises():
        raise Odd("strange")

    with pytest.raises(Exception) as info:
        Remote(raises)()
    assert type(info.value).__name__ == "Odd" and str(info.value) == "strange" and type(info.value) is not Odd
    with pytest.raises(NotImplementedError):
        Remote(lambda: (_ for _ in ()).throw(NotImplementedError("Your turn")))()


# --- right answers and named wrong answers of every task, written from the tasks' statements --------------


def qkv_head(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    w = torch.softmax(Q @ K.mT / math.sqrt(Q.shape[-1]), -1)
    return w @ V, w


def masked_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), -1) * mask


def offset_share(weights, offset):
    return weights.diagonal(offset).mean()


def split_heads(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)


def peak_offsets(weights, lengths):
    return [int(weights[b, t, :n].argmax()) - (n - 1 - t) for b, n in enumerate(lengths.tolist()) for t in range(n)]


def full_year(yy):
    return 1900 + yy if yy >= 50 else 2000 + yy


def output_spans(fields):
    names = ["year"] * 4 + [None] + ["month"] * 2 + [None] + ["day"] * 2 + [None]
    return [None if n is None else fields[n] for n in names]


def alignment_accuracy(weights, spans):
    top, has = weights.argmax(-1), spans[..., 0] >= 0
    return ((top >= spans[..., 0]) & (top < spans[..., 1]) & has).sum().item() / has.sum().item()


class CrossAttentionNoScale(CrossAttention):
    def scores(self, Q, K):
        return Q @ K.mT


class CrossAttentionStub(CrossAttention):
    def forward(self, dec, enc, mask=None):
        raise NotImplementedError("Your turn: replace this line with your code.")


def decode_position(pe):
    d = pe.shape[-1]
    return torch.round(torch.atan2(pe[..., -2], pe[..., -1]) * 10000.0 ** ((d - 2) / d)).long()


def pre_norm_block(block, x, mask=None):
    h = block.norm1(x)
    attended, weights = block.attn(h, h, h, mask)
    y = x + attended
    return y + block.ffn(block.norm2(y)), weights


def sparsemax_threshold(z):
    zs = z.sort(-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cs = zs.cumsum(-1)
    kept = (1 + k * zs > cs).sum(-1, keepdim=True)
    return (cs.gather(-1, kept - 1) - 1) / kept


def next_token_probs(logits, temperature):
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    return torch.softmax(logits / temperature, -1)


def marker_beside(tokens, marker_id):
    m = F.pad((tokens == marker_id).int(), (1, 1))
    return (m[:, :-2] + m[:, 2:]) > 0


def argmax_offset_share(weights, lengths, offset):
    t = torch.arange(weights.shape[1])
    steps = t < lengths[:, None]
    return float(((weights.argmax(-1) == lengths[:, None] - 1 - t + offset) & steps).sum() / steps.sum())


def slopes(lengths, times):
    return [math.log(b / a) / math.log(T1 / T0) for T0, T1, a, b in zip(lengths, lengths[1:], times, times[1:])]


def cached_attention(q, k, v, kc, vc):
    K, V = torch.cat([kc, k], -2), torch.cat([vc, v], -2)
    t, s = kc.shape[-2], q.shape[-2]
    mask = torch.ones(s, t + s, dtype=torch.bool).tril(diagonal=t)
    return torch.softmax((q @ K.mT / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf")), -1) @ V, K, V


def online_update(m, l, acc, s, v):
    m_new = torch.maximum(m, s.amax(-1))
    p, c = torch.exp(s - m_new[..., None]), torch.exp(m - m_new)
    return m_new, l * c + p.sum(-1), acc * c[..., None] + p @ v


def rope(x, offset=0):
    T, d = x.shape[-2], x.shape[-1]
    phi = torch.arange(offset, offset + T, dtype=x.dtype)[:, None] * 10000.0 ** (-2 * torch.arange(d // 2, dtype=x.dtype) / d)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * phi.cos() - b * phi.sin(), a * phi.sin() + b * phi.cos()], -1).flatten(-2)


CASES = {  # check: (right answer, [(named wrong answer, words its verdict must contain[, why the line may differ]), ...])
    "check_qkv_head": (qkv_head, [(lambda X, *W: qkv_head(X, *W)[::-1], "swapped"), (_stub, "not implemented yet")]),
    "check_masked_softmax": (masked_softmax, [(lambda s, m: torch.softmax(s.masked_fill(~m, -1e4), -1) * m, "not low enough"),
                                              (lambda s, m: s.masked_fill_(~m, -1e9).softmax(-1), "in place")]),
    "check_offset_share": (offset_share, [(lambda w, k: w.diagonal(k).sum(), "summed"), (lambda w, k: "0.5", "one number")]),
    "check_torch_attn_mask": (lambda mask, h: (~mask).repeat_interleave(h, 0) if mask.dim() == 3 else ~mask,
                              [(lambda mask, h: mask.repeat_interleave(h, 0) if mask.dim() == 3 else mask.clone(),
                                "not inverted"),
                               (lambda mask, h: (~mask).repeat(h, 1, 1) if mask.dim() == 3 else ~mask, "wrong order")]),
    "check_induction_score": (lambda w, L: w.diagonal(1 - L, dim1=-2, dim2=-1)[..., 1:].mean(-1),
                              [(lambda w, L: w.diagonal(-L, dim1=-2, dim2=-1).mean(-1), "earlier occurrence")]),
    "check_qk_circuit": (lambda xq, xk, wq, wk: (xq @ wq) @ (xk @ wk).T,
                         [(lambda xq, xk, wq, wk: (xq @ wq) @ (xk @ wq).T, "W_Q for both")]),
    "check_ov_circuit": (lambda x, wv, wo, wu: x @ wv @ wo @ wu, [(lambda x, wv, wo, wu: x @ wv @ wu, "through W_O")]),
    "check_copy_accuracies": (lambda lg, tk, L: ((lg[:, :-1].argmax(-1) == tk[:, 1:]).float()[:, : L - 1].mean().item(),
                                                 (lg[:, :-1].argmax(-1) == tk[:, 1:]).float()[:, L:].mean().item()),
                              [(lambda lg, tk, L: ((lg.argmax(-1) == tk).float()[:, 1:L].mean().item(),
                                                   (lg.argmax(-1) == tk).float()[:, L + 1 :].mean().item()), "t + 1")]),
    "check_split_heads": (split_heads, [(lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), "transpose is missing")]),
    "check_peak_offsets": (peak_offsets, [(lambda w, L: [float("nan")] * int(L.sum()), "got nan")]),
    "check_full_year": (full_year, [(lambda yy: str(full_year(yy)), "string"), (lambda yy: 1900 + yy, "pivot")]),
    "check_output_spans": (output_spans, [(lambda f: output_spans(f)[:10], "<eos>")]),
    "check_alignment_accuracy": (alignment_accuracy, [(lambda w, s: float("nan"), "NaN"),
                                                      (lambda w, s: 100 * alignment_accuracy(w, s), "percentage")]),
    "check_causal_mask": (causal_mask, [(lambda n: causal_mask(n).T, "upper triangle"), (lambda n: {n}, "got set"),
                                        (lambda n: causal_mask(n) if n > 1 else _stub(), "not finished for n=1")]),
    "check_masked_attention": (masked_attention, [(lambda Q, K, V, m: masked_attention(Q / 2, K, V, m), "softmax(Q K^T"),
                                                  (lambda Q, K, V, m: masked_attention(Q.mul_(1), K, V, ~m), "mask inverted")]),
    "check_leaks_future": (leaks_future, [(lambda f, x: not leaks_future(f, x), "inverted"),
                                          (lambda f, x: False, "WITHOUT a mask")]),
    "check_cross_attention_shapes": (cross_attention_shapes, [(lambda B, n, m, d, h: ((B, m, d), (B, h, n, m)), "length is n")]),
    "check_cross_attention": (CrossAttention, [(CrossAttentionNoScale, "not scaled"), (CrossAttentionStub, "not implemented yet")]),
    "check_strongest_source": (strongest_source, [(lambda w: w[:, 0].argmax(-1), "one head only")]),
    "check_head_entropy": (head_entropy, [(lambda w: -torch.xlogy(w, w).sum(-2).mean(-1).mean(0), "averaged over the keys"),
                                          (lambda w: w.log_().sum(), "in place")]),
    "check_head_mean_distance": (head_mean_distance, [(lambda w: head_mean_distance(w) * w.shape[-1], "summed over the queries")]),
    "check_classify_heads": (classify_heads, [(lambda d, n, **kw: classify_heads(d, n, **kw)[::-1] if len(d) > 1 else
                                               classify_heads(d, n, **kw), "should be"), (lambda d, n, **kw: 3, "list of strings")]),
    "check_token_accuracy": (token_accuracy, [(lambda p, t: (p == t).float().mean().item(), "padding")]),
    "check_exact_match": (exact_match, [(lambda p, t: token_accuracy(p, t), "token accuracy")]),
    "check_accuracy_by_length": (accuracy_by_length, [(lambda p, t, n: {float(k): v for k, v in accuracy_by_length(p, t, n).items()},
                                                       "as ints", "not plain data: an Opaque 'dict' comes back")]),
    "check_decode_position": (decode_position, [(lambda pe: torch.round(torch.atan(pe[..., -2] / pe[..., -1])
                                                 * 10000.0 ** ((pe.shape[-1] - 2) / pe.shape[-1])), "atan(sine / cosine)")]),
    "check_pre_norm_block": (pre_norm_block, [(lambda b, x, m=None: (b.norm2(x + b.attn(x, x, x, m)[0]), b.attn(x, x, x, m)[1]),
                                               "differs"), (lambda b, x, m=None: b(x, m), "calls the block itself")]),
    "check_sparsemax_threshold": (sparsemax_threshold, [(lambda z: sparsemax_threshold(z) * float("nan"), "NaN")]),
    "check_next_token_probs": (next_token_probs, [(lambda z, t: torch.exp(z / t) / torch.exp(z / t).sum(-1, keepdim=True)
                                                   if t else next_token_probs(z, t), "exp overflowed")]),
    "check_marker_beside": (marker_beside, [(lambda t, m: torch.roll(t == m, 1, 1) | torch.roll(t == m, -1, 1), "wraps")]),
    "check_argmax_offset_share": (argmax_offset_share, [(lambda w, n, k: str(argmax_offset_share(w, n, k)), "str")]),
    "check_slopes": (slopes, [(lambda T, t: [True] * (len(T) - 1), "bool"), (lambda T, t: slopes(T, t)[::-1], "reverse order")]),
    "check_cached_attention": (cached_attention, [(lambda *a: tuple(r.double() for r in cached_attention(*a)), "float64")]),
    "check_online_update": (online_update, [(lambda m, l, acc, s, v: (online_update(m, l, acc, s, v)[0].long(),
                                             *online_update(m, l, acc, s, v)[1:]), "dtype")]),
    "check_rope": (rope, [(lambda x, o=0: rope(x, 0), "offset ignored")]),
}


def test_every_registered_check_has_contract_cases():
    assert set(CASES) == set(checkers.CHECKS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_remote_answer_gets_the_verdict_of_the_answer_itself(name, capsys):
    check, kind = checkers.CHECKS[name].function, checkers.CHECKS[name].kind
    right, wrongs = CASES[name]
    for answer, words, *not_plain in [(right, "[correct]"), *wrongs]:
        direct = check(answer, seed=3)
        remote = check(Remote(answer, kind), seed=3)
        assert remote.status == direct.status and remote.case == direct.case, (remote.message, direct.message)
        assert words in remote.message and words in direct.message, (remote.message, direct.message)
        assert not_plain or remote.message == direct.message
        assert remote.status != "checker error", remote.message
    capsys.readouterr()
