"""Small tools to measure what attention costs: a timer, a log-log slope fit, memory sizes.

- ``time_calls`` / ``time_call``: wall-clock time per call with warm-up, repeats and
  the median (``time.perf_counter``). GPU work runs asynchronously: the timer waits for
  CUDA (and Apple's MPS) to finish before every clock reading, so it measures the work,
  not only the kernel launches. Several functions are timed *round-robin*
  (a, b, c, a, b, c, ...), so that a burst of load from other programs slows all of
  them alike instead of spoiling one.
- ``loglog_slope``: fit ``y = c * x**k`` to measurements; ``k`` is the empirical
  exponent (2 for a cost that grows like ``T**2``).
- ``tensor_bytes`` / ``score_matrix_bytes``: memory of a tensor of a given shape and
  dtype, computed without allocating it; ``format_bytes`` prints it in kB/MB/GB.
- ``call_peak_bytes``: the extra memory a call needs at its worst moment, read from
  the operating system's peak-resident-memory mark after resetting it (Linux).

Timings change from run to run and from machine to machine: report them, compare
ratios and exponents, and never assert on an absolute time in a test.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral

import torch

from ..core.validation import require_nonnegative_int, require_positive_float, require_positive_int


@dataclass(frozen=True)
class Timing:
    """The result of timing one function.

    Attributes:
        times: seconds per call, one entry per repeat (each repeat runs ``number`` calls).
        number: calls per repeat.
    """

    times: tuple[float, ...]
    number: int

    @property
    def median(self) -> float:
        """Median seconds per call: the typical value, robust to a few disturbed repeats."""
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        """Fastest repeat, seconds per call: the value least inflated by other programs."""
        return min(self.times)


def time_calls(
    fns: Mapping[Hashable, Callable[[], object]],
    repeats: int = 5,
    warmup: int = 1,
    min_time: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[Hashable, Timing]:
    """Time several functions (no arguments) round-robin; one ``Timing`` per key.

    Args:
        fns: key -> function to time, e.g. ``{"fused": lambda: F.scaled_dot_product_attention(Q, K, V)}``;
            any hashable key works, e.g. ``("fused", T)`` to time several sizes round-robin too.
        repeats: number of timed repeats of each function.
        warmup: untimed calls of each function first (memory allocation, lazy set-up).
        min_time: each repeat runs a function ``number`` times, with ``number`` chosen
            (from the last warm-up call) so that one repeat lasts at least ``min_time``
            seconds; fast calls are then not lost in the clock's resolution. 0 (or
            ``warmup=0``) = one call per repeat.
        clock: the clock to read (seconds); tests pass a fake one.
    """
    if not isinstance(fns, Mapping) or not all(callable(fn) for fn in fns.values()):
        raise TypeError(f"fns must map keys to functions with no arguments, got {type(fns).__name__}")
    if not fns:
        raise ValueError("fns is empty: give at least one function to time")
    require_positive_int(repeats=repeats)
    require_nonnegative_int(warmup=warmup)
    require_positive_float(allow_zero=True, min_time=min_time)
    clock = _synchronized(clock)

    number = {}
    for name, fn in fns.items():
        one_call = 0.0
        for _ in range(warmup):
            start = clock()
            fn()
            one_call = clock() - start
        number[name] = 1 if one_call <= 0 else max(1, math.ceil(min_time / one_call))

    times: dict[Hashable, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():  # round-robin: every function once per repeat
            start = clock()
            for _ in range(number[name]):
                fn()
            times[name].append((clock() - start) / number[name])
    return {name: Timing(tuple(times[name]), number[name]) for name in fns}


def synchronize() -> None:
    """Wait until the GPU (CUDA or Apple's MPS) has finished the work queued so far; nothing on a CPU.

    Never starts CUDA: only a process that already uses it waits for it.
    """
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    mps = getattr(torch, "mps", None)
    if mps is not None and getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        mps.synchronize()


def _synchronized(clock: Callable[[], float]) -> Callable[[], float]:
    """``clock`` that first waits for the GPU: a reading after queued GPU work counts that work."""

    def read() -> float:
        synchronize()
        return clock()

    return read


def time_call(
    fn: Callable[[], object],
    repeats: int = 5,
    warmup: int = 1,
    min_time: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time one function (no arguments): ``time_calls`` with a single entry."""
    return time_calls({"fn": fn}, repeats=repeats, warmup=warmup, min_time=min_time, clock=clock)["fn"]


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Fit ``y = c * x**k`` by least squares on ``log y = log c + k log x``.

    Args:
        x: positive sizes, e.g. sequence lengths ``T``; at least two different values.
        y: positive measurements of the same length, e.g. seconds per call.

    Returns:
        ``(k, c)``: the exponent (the slope of the straight line on a log-log plot)
        and the prefactor.
    """
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    if any(v <= 0 for v in list(x) + list(y)):
        raise ValueError("x and y must be positive: a log-log fit takes their logarithms")
    lx = [math.log(v) for v in x]
    ly = [math.log(v) for v in y]
    mean_x, mean_y = statistics.fmean(lx), statistics.fmean(ly)
    sxx = sum((a - mean_x) ** 2 for a in lx)
    if len(x) < 2 or sxx == 0:
        raise ValueError(f"need at least two different x values to fit a slope, got x={list(x)}")
    k = sum((a - mean_x) * (b - mean_y) for a, b in zip(lx, ly)) / sxx
    return k, math.exp(mean_y - k * mean_x)


def tensor_bytes(shape: Sequence[int], dtype: torch.dtype = torch.float32) -> int:
    """Bytes of a tensor of ``shape`` and ``dtype`` (numel * element size), without allocating it."""
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}")
    if not isinstance(shape, Sequence) or any(not isinstance(s, Integral) or isinstance(s, bool) or s < 0 for s in shape):
        raise ValueError(f"shape must be a sequence of non-negative integers, got {tuple(shape)}")
    element_size = torch.empty(0, dtype=dtype).element_size()  # 0 elements: nothing allocated
    return math.prod(int(s) for s in shape) * element_size


def score_matrix_bytes(
    batch: int, heads: int, n: int, m: int | None = None, dtype: torch.dtype = torch.float32
) -> int:
    """Bytes of the attention scores ``(batch, heads, n, m)``: ``batch * heads * n * m * element size``.

    ``m`` (number of keys) defaults to ``n`` (self-attention). The softmax weights
    have the same shape, so they take the same number of bytes again.
    """
    m = n if m is None else m
    require_positive_int(batch=batch, heads=heads, n=n, m=m)
    return tensor_bytes((batch, heads, n, m), dtype)


def format_bytes(num_bytes: float) -> str:
    """``num_bytes`` in decimal units (1 kB = 1000 bytes), 4 significant digits: '268.4 MB'."""
    require_positive_float(allow_zero=True, num_bytes=num_bytes)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if num_bytes >= size:
            return f"{num_bytes / size:.4g} {unit}"
    return f"{num_bytes:.0f} B"


def call_peak_bytes(fn: Callable[[], object]) -> int | None:
    """Extra memory ``fn()`` needed at its worst moment, in bytes (Linux; ``None`` elsewhere).

    Linux lets a process reset its peak-resident-memory mark (``VmHWM``): write 5 to
    ``/proc/self/clear_refs``. The extra peak is then the mark after the call minus
    the memory resident just before it, whatever the process held earlier.
    """
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        before = _proc_status_bytes("VmRSS")
    except OSError:  # not Linux, or not allowed
        return None
    fn()
    # The kernel updates the mark lazily, so right after the reset it can read a few pages below
    # VmRSS; a call that needed nothing extra then came out as a small negative number.
    return max(0, _proc_status_bytes("VmHWM") - before)


def _proc_status_bytes(key: str) -> int:
    """A memory line of /proc/self/status (given in kB) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{key} not in /proc/self/status")
