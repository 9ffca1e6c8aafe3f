"""Checker for lesson 09 (positional encoding): ``decode_position``, a position read back off its
sinusoidal encoding, on hidden rows (several d_model, the largest positions, a batch with two leading
axes, float64). A hint names a mistake only if it explains every case the answer gets wrong."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch

from ...core.positions import sinusoidal_positional_encoding
from .compare import call_unchanged
from .registry import register
from .report import Hint, expect_tensor, failing_case, generator

NOTEBOOK = "09_positional_encoding"
TOP = 5000  # positions 0 .. TOP - 1


@functools.lru_cache(maxsize=16)
def _table(d: int, dtype: torch.dtype) -> torch.Tensor:
    return sinusoidal_positional_encoding(TOP, d, dtype=dtype)


def _pair_mistakes(pe: torch.Tensor) -> list[tuple[str, str, torch.Tensor]]:
    """(key, hint, positions) of the ways to read the slowest pair wrongly."""
    pe, d = pe.double(), pe.shape[-1]
    s, c, w = pe[..., -2], pe[..., -1], 10000.0 ** (-2 * (d // 2 - 1) / d)
    atan2 = "torch.atan2(sine, cosine)"
    return [
        ("swap", f"sin and cos swapped: dimension 2i holds the sine, 2i+1 the cosine; the angle is {atan2}.",
         torch.atan2(c, s) / w),
        ("atan", "atan(sine / cosine) only returns angles between -pi/2 and pi/2, so every position past a quarter "
         f"turn comes back wrong: use {atan2}, which reads the quadrant from the signs of both.", torch.atan(s / c) / w),
        ("asin", "asin only returns angles up to pi/2, and the slowest pair turns further for the largest positions: use "
         f"{atan2}, which reads the quadrant from the cosine's sign.", torch.asin(s) / w),
        ("acos", "acos of the cosine loses small angles (the cosine of a small angle rounds to 1 in float32): use "
         f"{atan2}, exact near 0 as well.", torch.acos(c.float()).double() / w),
    ]


def _diagnose(pe: torch.Tensor, got: torch.Tensor, want: torch.Tensor) -> tuple[str, str] | None:
    """(key, hint) of the known mistake that turns rows ``pe`` of positions ``want`` into ``got``, if one does."""
    wrong = got != want
    for key, hint, candidate in _pair_mistakes(pe):  # it must explain the wrong positions, and be wrong there itself
        agree = (got == candidate.round()) | ((got - candidate).abs() < 1e-3)
        if agree[wrong].all() and (candidate.round()[wrong] != want[wrong]).double().mean() > 0.5:
            return key, hint
    if (got - want).abs().max() < 0.5:
        return "round", "almost: round to the nearest whole position (torch.round) before you return."
    if ((got == want - 1) | (got == want)).all():
        return "floor", "int(), floor or .long() cut 41.9997 down to 41: round to the nearest whole position."
    d = pe.shape[-1]
    for i in range(d // 2):  # reading a pair whose circle is shorter than the positions: got = want modulo its length
        length = 2 * math.pi * 10000.0 ** (2 * i / d)
        turns = (got - want) / length
        inside = bool((got >= -length / 2 - 1).all() and (got <= length + 1).all())  # one turn of that pair
        if length < want.max() and inside and ((turns - turns.round()).abs() * length <= 1).all():
            return "wrap", (f"pair {i} (dimensions {2 * i}, {2 * i + 1}) turns a full circle every {length:.1f} "
                            "positions, so positions further out wrap around. Read the slowest pair, the last two "
                            "dimensions.")
    ratio = (got * want).sum() / (want * want).sum().clamp(min=1)
    if abs(ratio - 1) > 1e-3 and ((got - ratio * want).abs() <= 1 + 1e-3 * got.abs()).all():
        return "frequency", (f"your positions are {ratio:.4g} times the right ones: check the frequency. The last pair "
                             "is i = d_model/2 - 1, with w_i = 10000 ** (-2i / d_model).")
    return None


def _cases(g: torch.Generator):
    def random(*shape):
        return torch.randint(0, TOP, shape, generator=g)

    return [(64, torch.arange(10), "positions 0..9"), (64, random(300), f"300 random positions below {TOP}"),
            (16, torch.arange(4968, TOP), "positions 4968..4999 (the last pair past a quarter turn)"),
            (128, random(3, 7), "a (3, 7) batch of random positions, float64"),
            (20, torch.cat([torch.tensor([0, TOP - 1]), random(40)]), f"positions 0, {TOP - 1} and random ones"),
            (512, random(1000), "1000 random positions")]


def _answer(fn: Callable, pe: torch.Tensor, want: torch.Tensor, name: str) -> torch.Tensor:
    got = call_unchanged(fn, pe, names=("pe",), case=name)
    if isinstance(got, (list, tuple, np.ndarray, np.generic, int, float)) and not isinstance(got, bool):
        try:
            got = torch.as_tensor(np.asarray(got))
        except (TypeError, ValueError, RuntimeError):
            raise Hint(f"return the positions as a tensor of numbers, got {type(got).__name__}.", name) from None
    if expect_tensor(got, "the positions").shape != want.shape:
        keep = " (drop the last axis: one position per row, not keepdim)" if got.shape == (*want.shape, 1) else ""
        raise Hint(f"the result should have shape {tuple(want.shape)}, one position per row of pe, got "
                   f"{tuple(got.shape)}{keep}.", name)
    if got.dtype == torch.bool or got.is_complex():
        raise Hint(f"the positions should be whole numbers, got a {got.dtype} tensor.", name)
    return got.double()


@register("decode_position")
def check_decode_position(fn: Callable[[torch.Tensor], torch.Tensor], seed: int) -> None:
    """``fn(pe (..., d_model)) -> positions (...)``: whole p of each row PE(p) (d_model >= 16, 0 <= p < 5000)."""
    wrong = []
    for d, want, what in _cases(generator(seed)):
        name = f"d_model = {d}, {what}"
        pe = _table(d, torch.float64 if "float64" in what else torch.float32)[want]
        with failing_case(name):
            got = _answer(fn, pe, want, name)
        if not torch.equal(got, want.double()):
            wrong.append((name, pe, got, want.double()))
    if not wrong:
        return
    found = [_diagnose(pe, got, want) for _, pe, got, want in wrong]
    if found[0] is not None and all(f is not None and f[0] == found[0][0] for f in found):
        raise Hint(found[0][1], wrong[0][0])
    name, _, got, want = wrong[0]
    i = int((got != want).flatten().nonzero()[0])
    raise Hint(f"position {int(want.flatten()[i])} came back as {got.flatten()[i].item():g}.", name)
