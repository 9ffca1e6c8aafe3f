"""Checker for lesson 17 (rotary position embeddings): ``rope(x, offset)``, every adjacent feature
pair of row t rotated by (offset + t) * 10000 ** (-2i / d), compared with a float64 computation of the
checker's own, on one pair, heads, an offset, float64 at position 1000 and a hidden random case."""

from __future__ import annotations

import torch

from ...core.positions import sinusoidal_positional_encoding
from .compare import Answers, call_unchanged, close, largest_difference
from .registry import register
from .report import Hint, expect_tensor, failing_case, generator

NOTEBOOK = "17_rotary_position_embeddings"
TWINS = {"apply_rope": "course_utils.core.rope.apply_rope",
         "rope_rotation_matrix": "course_utils.core.rope.rope_rotation_matrix",
         "RotaryMultiHeadAttention": "course_utils.core.rope.RotaryMultiHeadAttention"}


def _rotate(x: torch.Tensor, angles: torch.Tensor, pairs: str = "adjacent", sign: float = 1.0) -> torch.Tensor:
    """Rotate pairs of ``x (..., T, d)`` by ``angles (T, d/2)`` in float64: adjacent (2i, 2i+1) or half (i, i + d/2)."""
    x, d = x.double(), x.shape[-1]
    a, b = (x[..., 0::2], x[..., 1::2]) if pairs == "adjacent" else (x[..., : d // 2], x[..., d // 2:])
    cos, sin = torch.cos(angles.double()), sign * torch.sin(angles.double())
    first, second = a * cos - b * sin, a * sin + b * cos
    return torch.stack([first, second], -1).flatten(-2) if pairs == "adjacent" else torch.cat([first, second], -1)


def _positions(T: int, d: int, offset: int):
    pos = torch.arange(offset, offset + T, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)
    return pos, i, 10000.0 ** (-2 * i / d)


def _reference(x: torch.Tensor, offset: int) -> torch.Tensor:
    pos, _, freq = _positions(x.shape[-2], x.shape[-1], offset)
    return _rotate(x, pos * freq)


def _mistakes(x: torch.Tensor, offset: int) -> list[tuple]:
    T, d = x.shape[-2], x.shape[-1]
    pos, i, freq = _positions(T, d, offset)
    return [
        ("rotation in the other direction: pair (a, b) becomes (a cos - b sin, a sin + b cos). The relative "
         "property survives either way, but this course (and RoFormer) rotates counter-clockwise.",
         lambda: _rotate(x, pos * freq, sign=-1.0)),
        ("pairs (i, i + d/2) (the 'rotate half' layout of GPT-NeoX and Llama): here the pairs are adjacent, "
         "(x[..., 0::2], x[..., 1::2]).", lambda: _rotate(x, pos * freq, pairs="half")),
        ("frequencies base ** (-i / d): the exponent is -2i / d, i = 0 .. d/2 - 1 (the sinusoidal frequencies).",
         lambda: _rotate(x, pos * 10000.0 ** (-i / d))),
        ("offset ignored: row t sits at position offset + t.", lambda: _rotate(x, (pos - offset) * freq)),
        ("positions start at offset + 1: row 0 sits at position offset (position 0 is not rotated at all).",
         lambda: _rotate(x, (pos + 1) * freq)),
        ("one frequency for every pair: pair i turns at w_i = 10000 ** (-2i / d).",
         lambda: _rotate(x, pos * torch.ones(d // 2, dtype=torch.float64))),
        ("nothing was rotated: the output equals the input.", lambda: x.double()),
        ("the sinusoidal encoding was ADDED: RoPE multiplies, rotating each pair by its angle.",
         lambda: x.double() + sinusoidal_positional_encoding(T + offset, d, dtype=torch.float64)[offset:]),
    ]


def _same(a: torch.Tensor, b) -> bool:
    tight = a.dtype == torch.float64
    return close(a, b, atol=1e-6 if tight else 1e-4, rtol=1e-6 if tight else 1e-4)


def _otherwise(case) -> str:
    got, x = case.got, case.info["x"]
    tol = 1e-6 if got.dtype == torch.float64 else 1e-4
    if not torch.allclose(got.double().norm(dim=-1), x.double().norm(dim=-1), atol=tol, rtol=tol):
        return "the length of each row changed: a rotation keeps lengths; check cos and sin."
    return ("the output differs from the rotation of each pair (2i, 2i+1) by (offset + t) * 10000 ** (-2i / d) "
            f"(largest difference {largest_difference(got, case.expected):.3g}).")


@register("rope", twins=TWINS)
def check_rope(fn, seed: int) -> None:
    """Check ``fn(x, offset) -> rotated x``: RoPE on ``x (..., T, d)``, row t at position offset + t."""
    g, hidden = torch.Generator().manual_seed(1717), generator(seed)
    cases = [((2, 3, 5, 8), 0, torch.float32), ((1, 2), 0, torch.float32), ((1, 7, 16), 11, torch.float32),
             ((4, 64), 1000, torch.float64), ((2, 2, 50, 32), 3, torch.float32)]
    T, half = (int(v) for v in torch.randint(1, 20, (2,), generator=hidden))
    cases.append(((3, T, 2 * half), int(torch.randint(0, 500, (1,), generator=hidden)), torch.float32))
    answers = Answers(_same, _otherwise)
    for k, (shape, offset, dtype) in enumerate(cases):
        x = torch.randn(*shape, generator=g if k < 5 else hidden, dtype=dtype)
        where = f"x of shape {shape} ({str(dtype).replace('torch.', '')}), offset={offset}"
        with failing_case(where):
            out = expect_tensor(call_unchanged(fn, x, offset, names=("x",), case=where,
                                               tip="build a new tensor (torch.stack or torch.cat)"), "the rotated x")
            if tuple(out.shape) != shape:
                raise Hint(f"the output should have x's shape {shape}, got {tuple(out.shape)}.")
            if out.dtype != dtype:
                raise Hint(f"the output is {out.dtype}: create every tensor in x's dtype (dtype=x.dtype).")
        answers.add(where, out, _reference(x, offset), lambda a=(x, offset): _mistakes(*a), x=x)
    answers.verdict()
