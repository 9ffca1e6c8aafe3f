"""Checkers for the tasks of lessons 09 (read a position back off its sinusoidal encoding) and
09b (the forward pass of a pre-norm Transformer block)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch

from ...core.positions import sinusoidal_positional_encoding
from ...core.transformer import TransformerBlock, to_torch_encoder_layer
from .report import Hint, call, expect_tensor, generator, report


# --- 09: a position read back off its sinusoidal encoding ------------------------------------------


def _decode_mistake(pe: torch.Tensor, got: torch.Tensor, want: torch.Tensor) -> str | None:
    """The known mistake that turns the rows ``pe (..., d)`` of positions ``want`` into ``got``, if one does."""
    pe, d = pe.double(), pe.shape[-1]
    for i in range(d // 2):  # a pair whose circle is shorter than the positions: got = want modulo its length
        length = 2 * math.pi * 10000.0 ** (2 * i / d)
        turns = (got - want) / length
        if length < want.max() and ((turns - turns.round()).abs() * length <= 1).all():
            return (f"pair {i} (dimensions {2 * i}, {2 * i + 1}) turns a full circle every {length:.1f} positions, so "
                    "positions further out wrap around. Read the slowest pair, the last two dimensions.")
    s, c, w = pe[..., -2], pe[..., -1], 10000.0 ** (-2 * (d // 2 - 1) / d)
    atan2 = "torch.atan2(sine, cosine)"
    for hint, candidate in [
        (f"sin and cos swapped: dimension 2i holds the sine, 2i+1 the cosine; the angle is {atan2}.", torch.atan2(c, s)),
        ("asin only returns angles up to pi/2, and the slowest pair turns further for the largest positions: use "
         f"{atan2}, which reads the quadrant from the cosine's sign.", torch.asin(s)),
        ("acos of the cosine loses small angles (the cosine of a small angle rounds to 1 in float32): use "
         f"{atan2}, exact near 0 as well.", torch.acos(c.float()).double())]:
        if (got == (candidate / w).round()).double().mean() > 0.9 or torch.allclose(got, candidate / w, atol=1e-3):
            return hint
    ratio = (got * want).sum() / (want * want).sum().clamp(min=1)
    if abs(ratio - 1) > 1e-3 and ((got - ratio * want).abs() <= 1 + 1e-3 * got.abs()).all():
        return (f"your positions are {ratio:.4g} times the right ones: check the frequency. The last pair is "
                "i = d_model/2 - 1, with w_i = 10000 ** (-2i / d_model).")
    return None


def _check_decode_position(fn: Callable, seed: int) -> None:
    g, top = generator(seed), 5000
    random = lambda *shape: torch.randint(0, top, shape, generator=g)  # noqa: E731
    cases = [(64, torch.arange(10), "positions 0..9"), (64, random(300), f"300 random positions below {top}"),
             (16, torch.arange(4968, top), "positions 4968..4999 (the last pair past a quarter turn)"),
             (128, random(3, 7), "a (3, 7) batch of random positions, float64"),
             (20, torch.cat([torch.tensor([0, top - 1]), random(40)]), f"positions 0, {top - 1} and random ones"),
             (512, random(1000), "1000 random positions")]
    for d, want, what in cases:
        name = f"d_model = {d}, {what}"
        pe = sinusoidal_positional_encoding(top, d, dtype=torch.float64 if "float64" in what else torch.float32)[want]
        got = call(fn, given := pe.clone(), case=name)
        if not torch.equal(given, pe):
            raise Hint("your function changed its input in place: compute new tensors instead.", name)
        if isinstance(got, (list, tuple, np.ndarray, np.generic, int, float)):
            got = torch.as_tensor(np.asarray(got))
        if expect_tensor(got, "the positions").shape != want.shape:
            keep = " (drop the last axis: one position per row, not keepdim)" if got.shape == (*want.shape, 1) else ""
            raise Hint(f"the result should have shape {tuple(want.shape)}, one position per row of pe, "
                       f"got {tuple(got.shape)}{keep}.", name)
        if got.dtype == torch.bool or got.is_complex():
            raise Hint(f"the positions should be whole numbers, got a {got.dtype} tensor.", name)
        got, want = got.double(), want.double()
        if torch.equal(got, want):
            continue
        if (got - want).abs().max() < 0.5:
            raise Hint("almost: round to the nearest whole position (torch.round) before you return.", name)
        if ((got == want - 1) | (got == want)).all():
            raise Hint("int(), floor or .long() cut 41.9997 down to 41: round to the nearest whole position.", name)
        i = int((got != want).flatten().nonzero()[0])
        raise Hint(_decode_mistake(pe, got, want) or f"position {int(want.flatten()[i])} came back as "
                   f"{got.flatten()[i].item():g}.", name)


def check_decode_position(fn: Callable[[torch.Tensor], torch.Tensor], seed: int | None = None):
    """``fn(pe (..., d_model)) -> positions (...)``: whole p of each row PE(p) (d_model >= 16, 0 <= p < 5000)."""
    return report("decode_position", lambda s: _check_decode_position(fn, s), seed)


# --- 09b: the pre-norm Transformer block ------------------------------------------------------------


def _block_mistakes(block: TransformerBlock, x: torch.Tensor, mask) -> list[tuple[str, torch.Tensor]]:
    def pre(first, second, *, normed_residual=False, ffn_reads_y=False, last=None, mask=mask, residual=True):
        h = first(x)
        y = block.attn(h, h, h, mask)[0] + ((h if normed_residual else x) if residual else 0)
        h2 = second(y)
        out = block.ffn(y if ffn_reads_y else h2) + ((h2 if normed_residual else y) if residual else 0)
        return last(out) if last is not None else out

    n1, n2, rule = block.norm1, block.norm2, "y = x + attn(norm1(x)), out = y + ffn(norm2(y))"
    out = [(f"that is the post-norm block (a LayerNorm after each residual sum). Pre-norm normalises each "
            f"sub-layer's INPUT: {rule}.", block(x, mask)[0]),
           ("norm1 and norm2 swapped: norm1 goes before the attention, norm2 before the FFN.", pre(n2, n1)),
           (f"the residual path carries the normalised input: add each sub-layer's output to x and y themselves, {rule}.",
            pre(n1, n2, normed_residual=True)),
           ("the FFN reads y itself: its input is norm2(y), out = y + ffn(norm2(y)).", pre(n1, n2, ffn_reads_y=True)),
           ("a LayerNorm after the last sum: a pre-norm block returns y + ffn(norm2(y)) as it is (a pre-norm STACK "
            "adds one final LayerNorm after its last block).", pre(n1, n2, last=n2)),
           (f"no residual connections: add each sub-layer's output to its input, {rule}.", pre(n1, n2, residual=False))]
    if mask is not None:
        out.append(("the mask does not reach the attention: pass it on, block.attn(h, h, h, mask).", pre(n1, n2, mask=None)))
    return out


def _check_pre_norm_block(fn: Callable, seed: int) -> None:
    g = generator(seed)
    twins = [("TransformerBlock", TransformerBlock), ("to_torch_encoder_layer", to_torch_encoder_layer)]
    for d, h, d_ff, (B, T), kind, dtype in [(16, 2, 24, (2, 5), None, torch.float32), (8, 1, 16, (3, 1), None, torch.float32),
                                           (32, 4, 64, (2, 6), "causal", torch.float32),
                                           (12, 3, 20, (3, 7), "padding", torch.float32),
                                           (24, 4, 40, (1, 9), "causal", torch.float64)]:
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
        pre = copy.deepcopy(block)
        pre.norm_first = True  # the course's pre-norm block with the same weights
        with torch.no_grad():
            want, want_w = pre(x, mask)
            got = call(fn, block, given := x.clone(), None if mask is None else mask.clone(), case=name, twins=twins)
            if not torch.equal(given, x):
                raise Hint("your function changed x in place (x += ... or x.add_): compute y = x + ... instead.", name)
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                raise Hint(f"return a pair (out, weights), as the block does; got {type(got).__name__}.", name)
            out = expect_tensor(got[0], "out (the first thing returned)").to(dtype)
            weights = expect_tensor(got[1], "weights (the second thing returned)").to(dtype)
            tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-9, rtol=1e-9)
            if out.shape != want.shape:
                raise Hint(f"out should have x's shape {tuple(want.shape)}, got {tuple(out.shape)}.", name)
            if not torch.allclose(out, want, **tol):
                hint = next((h for h, c in _block_mistakes(block, x, mask) if torch.allclose(out, c, **tol)), None)
                raise Hint(hint or "out differs from y + ffn(norm2(y)) with y = x + attn(norm1(x)) (largest difference "
                           f"{(out - want).abs().max().item():.3g}).", name)
            if weights.shape != want_w.shape or not torch.allclose(weights, want_w, **tol):
                raise Hint(f"out is right but weights are not: return the attention weights {tuple(want_w.shape)} "
                           "(B, h, T, T) of the attention you ran, block.attn(h, h, h, mask)[1].", name)


def check_pre_norm_block(fn: Callable, seed: int | None = None):
    """``fn(block, x (B, T, d_model), mask=None) -> (out, weights)``: y = x + attn(norm1(x)), y + ffn(norm2(y))."""
    return report("pre_norm_block", lambda s: _check_pre_norm_block(fn, s), seed)
