"""Input checks shared by the whole package: clear ValueErrors that name the shapes they got."""

from __future__ import annotations

from numbers import Integral

from torch import Tensor


def shape_of(t: Tensor) -> str:
    return str(tuple(t.shape))


def require_positive(**sizes: int) -> None:
    """Raise ValueError for any size that is not a positive integer (Python or NumPy)."""
    for name, value in sizes.items():
        if not isinstance(value, Integral) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_sequence(x: Tensor, d_model: int) -> None:
    """Raise ValueError unless ``x`` has shape ``(B, T, d_model)``."""
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"x must have shape (B, T, {d_model}), got shape {shape_of(x)}")
