"""Checker for lesson 09b (the Transformer block): ``pre_norm_block(block, x, mask=None)``, the
pre-norm forward pass from a block's four sub-modules, on blocks of the checker's own with random
weights (LayerNorm gains too, so that a swap of norm1 and norm2 shows): one token, a causal mask, a
padding mask, float64. The block handed to the answer is a ``fixtures.CourseModule``: it counts calls
of its own forward, which would hand the work to the course's code."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...core.transformer import TransformerBlock
from .compare import ALLCLOSE, Answers, call_unchanged, close, expect_like, largest_difference
from .fixtures import course_module
from .registry import register
from .report import Hint, failing_case, generator, kind_of

NOTEBOOK = "09b_transformer_block"
TWINS = {"TransformerBlock": "course_utils.core.transformer.TransformerBlock",
         "to_torch_encoder_layer": "course_utils.core.transformer.to_torch_encoder_layer"}
RULE = "y = x + attn(norm1(x)), out = y + ffn(norm2(y))"


def _block_mistakes(block: TransformerBlock, x: torch.Tensor, mask) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    def pre(first, second, *, normed_residual=False, ffn_reads_y=False, last=None, mask=mask, residual=True):
        h = first(x)
        y = block.attn(h, h, h, mask)[0] + ((h if normed_residual else x) if residual else 0)
        h2 = second(y)
        out = block.ffn(y if ffn_reads_y else h2) + ((h2 if normed_residual else y) if residual else 0)
        return last(out) if last is not None else out

    n1, n2 = block.norm1, block.norm2
    return [(f"that is the post-norm block (a LayerNorm after each residual sum). Pre-norm normalises each "
             f"sub-layer's INPUT: {RULE}.", lambda: block(x, mask)[0]),
            ("norm1 and norm2 swapped: norm1 goes before the attention, norm2 before the FFN.", lambda: pre(n2, n1)),
            (f"the residual path carries the normalised input: add each sub-layer's output to x and y themselves, {RULE}.",
             lambda: pre(n1, n2, normed_residual=True)),
            ("the FFN reads y itself: its input is norm2(y), out = y + ffn(norm2(y)).",
             lambda: pre(n1, n2, ffn_reads_y=True)),
            ("a LayerNorm after the last sum: a pre-norm block returns y + ffn(norm2(y)) as it is (a pre-norm STACK adds "
             "one final LayerNorm after its last block).", lambda: pre(n1, n2, last=n2)),
            (f"no residual connections: add each sub-layer's output to its input, {RULE}.",
             lambda: pre(n1, n2, residual=False)),
            ("the mask does not reach the attention: pass it on, block.attn(h, h, h, mask).",
             (lambda: pre(n1, n2, mask=None)) if mask is not None else None)]


def _pre_norm(block: TransformerBlock, x: torch.Tensor, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """The pre-norm forward pass (what ``TransformerBlock(..., norm_first=True)`` computes) with ``block``'s weights."""
    h = block.norm1(x)
    attended, weights = block.attn(h, h, h, mask)
    y = x + attended
    return y + block.ffn(block.norm2(y)), weights


def _same(a: torch.Tensor, b) -> bool:
    tight = isinstance(b, torch.Tensor) and b.dtype == torch.float64
    return close(a, b, atol=1e-9 if tight else 1e-4, rtol=1e-9 if tight else 1e-4)


def _cases(g: torch.Generator):
    sizes = [(16, 2, 24, (2, 5), None, torch.float32), (8, 1, 16, (3, 1), None, torch.float32),
             (32, 4, 64, (2, 6), "causal", torch.float32), (12, 3, 20, (3, 7), "padding", torch.float32),
             (24, 4, 40, (1, 9), "causal", torch.float64)]
    for d, h, d_ff, (B, T), kind, dtype in sizes:
        name = f"d_model {d}, {h} heads, d_ff {d_ff}, x {(B, T, d)}, {kind or 'no'} mask" + (
            ", float64" if dtype == torch.float64 else "")
        with torch.random.fork_rng(devices=[]):  # the student's global random state stays as it was
            block = TransformerBlock(d, h, d_ff).to(dtype).eval()
        with torch.no_grad():  # random weights from the hidden seed; LayerNorm gains away from 1
            for p in block.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=dtype) / p.shape[-1] ** 0.5)
            for norm in (block.norm1, block.norm2):
                norm.weight.copy_(0.5 + torch.rand(d, generator=g, dtype=dtype))
        x = 3 * torch.randn(B, T, d, generator=g, dtype=dtype) + 1
        mask = torch.ones(T, T, dtype=torch.bool).tril() if kind == "causal" else None
        if kind == "padding":  # (B, 1, T): the first length[b] keys of sequence b are real
            lengths = torch.cat([torch.tensor([T - 2]), torch.randint(1, T + 1, (B - 1,), generator=g)])
            mask = (torch.arange(T) < lengths[:, None])[:, None, :]
        yield name, block, x, mask, {"d_model": d, "num_heads": h, "d_ff": d_ff}


@register("pre_norm_block", twins=TWINS)
def check_pre_norm_block(fn: Callable, seed: int) -> None:
    """``fn(block, x (B, T, d_model), mask=None) -> (out, weights)``: y = x + attn(norm1(x)), y + ffn(norm2(y))."""
    outs = Answers(_same, lambda c: f"out differs from y + ffn(norm2(y)) with y = x + attn(norm1(x)) (largest "
                                    f"difference {largest_difference(c.got, c.expected):.3g}).")
    weights = Answers(_same, lambda c: "out is right but weights are not: return the attention weights "
                                       f"{tuple(c.expected.shape)} (B, h, T, T) of the attention you ran, "
                                       "block.attn(h, h, h, mask)[1].")
    for name, block, x, mask, init in _cases(generator(seed)):
        given = course_module("TransformerBlock", init, block.state_dict(), x.dtype)
        with torch.no_grad(), failing_case(name):
            want, want_w = _pre_norm(block, x, mask)
            got = call_unchanged(fn, given, x, mask, names=("block", "x", "mask"), case=name,
                                 tip="compute y = x + ... instead (no x += ... or x.add_)")
            if given.forward_calls:
                raise Hint("calls the block itself (block(x, mask) or block.forward runs the course's own "
                           "TransformerBlock): write the pre-norm forward from block.norm1, block.attn, block.norm2 "
                           "and block.ffn.")
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                raise Hint(f"return a pair (out, weights), as the block does; got {kind_of(got)}.")
            out = expect_like(got[0], x, "out (the first thing returned)", name, why=ALLCLOSE)
            w = expect_like(got[1], x, "weights (the second thing returned)", name, why=ALLCLOSE)
            if out.shape != want.shape:
                raise Hint(f"out should have x's shape {tuple(want.shape)}, got {tuple(out.shape)}.")
            outs.add(name, out, want, lambda a=(block, x, mask): _block_mistakes(*a))
            weights.add(name, w, want_w)
    with torch.no_grad():
        outs.verdict()
    weights.verdict()
