"""Checker for notebook 17 (rotary position embeddings): rotate adjacent feature pairs by position * frequency."""

from __future__ import annotations

import torch

from ...core.positions import sinusoidal_positional_encoding
from ...core.rope import apply_rope
from .report import Hint, expect_tensor, report


def _rotate(x: torch.Tensor, angles: torch.Tensor, pairs: str = "adjacent", sign: float = 1.0) -> torch.Tensor:
    """Rotate pairs of ``x (..., T, d)`` by ``angles (T, d/2)``: adjacent (2i, 2i+1) or half (i, i + d/2) pairs."""
    d = x.shape[-1]
    a, b = (x[..., 0::2], x[..., 1::2]) if pairs == "adjacent" else (x[..., : d // 2], x[..., d // 2 :])
    cos, sin = torch.cos(angles), sign * torch.sin(angles)
    first, second = a * cos - b * sin, a * sin + b * cos
    if pairs == "adjacent":
        return torch.stack([first, second], -1).flatten(-2)
    return torch.cat([first, second], -1)


def _mistakes(x: torch.Tensor, offset: int) -> list[tuple[str, torch.Tensor]]:
    T, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(T, dtype=x.dtype)[:, None]
    i = torch.arange(d // 2, dtype=x.dtype)
    freq = 10000.0 ** (-2 * i / d)
    return [
        ("rotation in the other direction: pair (a, b) becomes (a cos - b sin, a sin + b cos). The relative "
         "property survives either way, but this course (and RoFormer) rotates counter-clockwise.",
         _rotate(x, (pos + offset) * freq, sign=-1.0)),
        ("pairs (i, i + d/2) (the 'rotate half' layout of GPT-NeoX and Llama): here the pairs are adjacent, "
         "(x[..., 0::2], x[..., 1::2]).", _rotate(x, (pos + offset) * freq, pairs="half")),
        ("frequencies base ** (-i / d): the exponent is -2i / d, i = 0 .. d/2 - 1 (the sinusoidal frequencies).",
         _rotate(x, (pos + offset) * 10000.0 ** (-i / d))),
        ("offset ignored: row t sits at position offset + t.", _rotate(x, pos * freq)),
        ("positions start at offset + 1: row 0 sits at position offset (position 0 is not rotated at all).",
         _rotate(x, (pos + offset + 1) * freq)),
        ("one frequency for every pair: pair i turns at w_i = 10000 ** (-2i / d).", _rotate(x, (pos + offset) * torch.ones(d // 2))),
        ("nothing was rotated: the output equals the input.", x),
        ("the sinusoidal encoding was ADDED: RoPE multiplies, rotating each pair by its angle.",
         x + sinusoidal_positional_encoding(T + offset, d, dtype=x.dtype)[offset:]),
    ]


def _check_rope(fn) -> None:
    g = torch.Generator().manual_seed(1717)
    cases = [((1, 2), 0, torch.float32), ((2, 3, 5, 8), 0, torch.float32), ((1, 7, 16), 11, torch.float32),
             ((4, 64), 1000, torch.float64), ((2, 2, 50, 32), 3, torch.float32)]
    for shape, offset, dtype in cases:
        x = torch.randn(*shape, generator=g, dtype=dtype)
        given = x.clone()
        where = f"x of shape {shape} ({str(dtype).replace('torch.', '')}), offset={offset}"
        try:
            out = fn(given, offset)
        except NotImplementedError:
            raise
        except Exception as err:
            raise Hint(f"with {where} your code raised {type(err).__name__}: {err}") from None
        out = expect_tensor(out, "the rotated x")
        if not torch.equal(given, x):
            raise Hint("your function changed x in place: build a new tensor (torch.stack or torch.cat).")
        if tuple(out.shape) != shape:
            raise Hint(f"with {where} the output should have x's shape {shape}, got {tuple(out.shape)}.")
        if out.dtype != dtype:
            raise Hint(f"with {where} the output is {out.dtype}: create every tensor in x's dtype (dtype=x.dtype).")
        want = apply_rope(x, offset)
        tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-6, rtol=1e-6)
        if torch.allclose(out, want, **tol):
            continue
        for hint, candidate in _mistakes(x, offset):
            if torch.allclose(out, candidate, **tol):
                raise Hint(f"with {where}: {hint}")
        if not torch.allclose(out.norm(dim=-1), x.norm(dim=-1), **tol):
            raise Hint(f"with {where} the length of each row changed: a rotation keeps lengths; check cos and sin.")
        diff = (out - want).abs().max().item()
        raise Hint(f"with {where} the output differs from the rotation of each pair (2i, 2i+1) by "
                   f"(offset + t) * 10000 ** (-2i / d) (largest difference {diff:.3g}).")


def check_rope(fn) -> bool:
    """Check ``fn(x, offset) -> rotated x``: RoPE on ``x (..., T, d)``, row t at position offset + t."""
    return report("rope", lambda: _check_rope(fn))
