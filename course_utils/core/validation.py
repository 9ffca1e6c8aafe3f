"""Input checks shared by the whole package: clear errors that name what was expected and what came.

One rule: something that is not a tensor where a tensor is needed (a NumPy array, a list)
raises TypeError; every other bad input (shape, dtype, device, size, value) raises ValueError.
Counts accept Python and NumPy integers, never bools or floats (2.5 is not silently truncated).
Checks that must read a tensor's values (token ids in range) are skipped on the ``meta`` device.
Every message names the argument. No notebook builds these: they serve the ones that do.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import torch
from torch import Tensor


def shape_of(t: Tensor) -> str:
    return str(tuple(t.shape))


def describe(t: Tensor) -> str:
    """``shape (2, 3), dtype torch.float32, device cpu``."""
    return f"shape {shape_of(t)}, dtype {t.dtype}, device {t.device}"


def require_tensor(name: str, x, *, ndim: int | None = None, min_ndim: int | None = None, floating: bool = False,
                   integer: bool = False, shape: str = "") -> Tensor:
    """Return ``x`` after checking it is a tensor with ``ndim`` (or at least ``min_ndim``) dimensions.

    ``floating=True`` demands a floating-point dtype, ``integer=True`` an integer dtype (no bool);
    ``shape`` (e.g. ``"(B, m)"``) names the expected shape in the message.
    """
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__module__}.{type(x).__qualname__}; "
            f"convert it with torch.as_tensor({name})"
        )
    if (ndim is not None and x.dim() != ndim) or (min_ndim is not None and x.dim() < min_ndim):
        want = f"{ndim}" if ndim is not None else f"at least {min_ndim}"
        raise ValueError(f"{name} must have {want} dimension(s){' ' + shape if shape else ''}, got shape {shape_of(x)}")
    if floating and not x.dtype.is_floating_point:
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype} (shape {shape_of(x)}); try {name}.float()")
    if integer and (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool):
        raise ValueError(f"{name} must hold integer ids (e.g. torch.long), got dtype {x.dtype} (shape {shape_of(x)})")
    return x


def broadcast_shape(*shapes) -> torch.Size:
    """The shape that ``shapes`` broadcast to (NumPy's rules); RuntimeError if they do not.

    ``torch.broadcast_shapes`` does the same, but its first call imports SymPy (a quarter of a
    second in every kernel); these checks run on every attention call."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size != 1 and out[i] not in (1, size):
                raise RuntimeError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
            out[i] = size if size != 1 else out[i]
    return torch.Size(out)


def require_same_device_and_dtype(same_dtype: bool = True, **tensors: Tensor) -> None:
    """Raise ValueError unless all ``tensors`` sit on one device (and, with ``same_dtype``, share one dtype)."""
    devices, dtypes = {t.device for t in tensors.values()}, {t.dtype for t in tensors.values()}
    if len(devices) > 1 or (same_dtype and len(dtypes) > 1):
        what = "device and dtype" if same_dtype else "device"
        raise ValueError(f"{', '.join(tensors)} must share one {what}, got "
                         + "; ".join(f"{k}: {describe(t)}" for k, t in tensors.items()) + " (move them with .to(...))")


def require_module_input(module: torch.nn.Module, **tensors: Tensor) -> None:
    """Raise ValueError unless ``tensors`` are floating-point with the dtype and device of ``module``'s weights."""
    weight = next(module.parameters())
    for name, t in tensors.items():
        require_tensor(name, t, floating=True)
        if t.dtype != weight.dtype or t.device != weight.device:
            raise ValueError(f"{name} must have the dtype and device of the {type(module).__name__}'s weights "
                             f"({weight.dtype}, {weight.device}), got {describe(t)}; use {name}.to(...) or module.to(...)")


def is_int(value) -> bool:
    """True for a Python or NumPy integer, False for a bool, a float or anything else."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def _require_ints(low: int | None, what: str, values: dict) -> None:
    for name, value in values.items():
        if not is_int(value) or (low is not None and value < low):
            raise ValueError(f"{name} must be {what}, got {value!r}")


def require_positive_int(**values) -> None:
    """Raise ValueError for any value that is not a positive integer (Python or NumPy; no bool, no float)."""
    _require_ints(1, "a positive integer", values)


require_positive = require_positive_int  # the older name, used across the package


def require_int(**values) -> None:
    """Raise ValueError for any value that is not a whole number (Python or NumPy integer, any sign; no bool)."""
    _require_ints(None, "an integer", values)


def require_nonnegative_int(**values) -> None:
    """Raise ValueError for any value that is not an integer >= 0 (Python or NumPy; no bool, no float)."""
    _require_ints(0, "a non-negative integer", values)


def require_positive_float(allow_zero: bool = False, **values) -> None:
    """Raise ValueError for any value that is not a finite real number > 0 (>= 0 with ``allow_zero``)."""
    for name, value in values.items():
        ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or value < 0 or (value == 0 and not allow_zero):
            raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")


def require_bool(**values) -> None:
    """Raise ValueError for any value that is not True or False (no 0/1, no 'no', no None)."""
    for name, value in values.items():
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")


def require_instance(name: str, value, cls: type) -> None:
    """Raise TypeError unless ``value`` is an instance of ``cls``."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(value).__module__}.{type(value).__qualname__}")


def require_device(device) -> torch.device | None:
    """``device`` (None, a ``torch.device`` or a name such as ``'cpu'``) as a ``torch.device``; ValueError otherwise."""
    if device is None or isinstance(device, torch.device):
        return device
    try:
        return torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be a torch.device or a name such as 'cpu' or 'cuda', got {device!r}") from None


def require_generator(generator) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")


def require_float_dtype(name: str, dtype) -> None:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"{name} must be a floating-point torch.dtype such as torch.float32, got {dtype!r}")


def require_probability(name: str, p) -> None:
    """Raise ValueError unless ``0 <= p < 1`` (a dropout probability)."""
    if not isinstance(p, Real) or isinstance(p, bool) or not 0 <= p < 1:
        raise ValueError(f"{name} must be a number with 0 <= {name} < 1, got {p!r}")


def require_index_range(name: str, x: Tensor, low: int, high: int, what: str = "") -> None:
    """Raise ValueError unless every value of the integer tensor ``x`` lies in ``low .. high - 1``."""
    require_tensor(name, x, integer=True)
    if x.numel() == 0 or x.device.type == "meta":
        return
    lo, hi = int(x.min()), int(x.max())
    if lo < low or hi >= high:
        raise ValueError(f"{name} must lie in {low}..{high - 1}{what}, got values from {lo} to {hi} (shape {shape_of(x)})")


def require_nonempty(name: str, x: Tensor, dim: int = -1, what: str = "entries") -> None:
    """Raise ValueError if ``x`` has no entry along ``dim`` (an empty input has no answer: no argmax, no mean)."""
    if x.dim() and x.shape[dim] == 0:
        raise ValueError(f"{name} needs at least one of its {what} (dimension {dim}), got shape {shape_of(x)}")


def require_weights(name: str, w: Tensor, rows: bool = False) -> None:
    """ValueError for a negative or NaN weight (``rows``: or a row summing to neither 1 nor 0); not on meta."""
    sums = w.sum(-1, dtype=torch.float64) if rows and w.dim() else torch.ones(1, dtype=torch.float64)
    if w.device.type != "meta" and bool((w.isnan() | (w < 0)).any() | (((sums - 1).abs() > 1e-2) & (sums != 0)).any()):
        raise ValueError(f"{name} must be attention weights (numbers >= 0{', each row summing to 1' if rows else ''}),"
                         " got a negative or NaN entry" + (" or a row summing to something else" if rows else ""))


def check_sequence(x: Tensor, d_model: int) -> None:
    """Raise unless ``x`` is a floating-point tensor of shape ``(B, T, d_model)``."""
    require_tensor("x", x, floating=True)
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"x must have shape (B, T, {d_model}), got shape {shape_of(x)}")
