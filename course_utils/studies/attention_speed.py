"""How far the course's own attention is from PyTorch's fused kernel: one number for the benchmark.

``fused_ratio()`` times ``course_utils.core.attention.scaled_dot_product_attention`` and
``torch.nn.functional.scaled_dot_product_attention`` on the same ``(B, h, T, d_k)`` float32
inputs, on the CPU and one thread, round-robin (ours, fused, ours, fused, ...) so that a burst of
load from other programs slows both alike, and returns the ratio of the medians. Times are CPU
seconds of this process (``time.process_time``: user and system, page faults included), not wall
time: on a shared machine the wall clock also counts the time other programs held the core.
The course's goal (issue 26): at most 3x at T = 1024.

    python -m course_utils.studies.attention_speed          # T = 1024, B = 1, h = 8, d_k = 64
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..core.attention import scaled_dot_product_attention
from ..core.masks import causal_mask
from ..core.validation import require_bool, require_positive_int


@dataclass(frozen=True)
class FusedRatio:
    """The result of ``fused_ratio``: median CPU seconds per call of each, and their ratio."""

    ours_s: float
    fused_s: float
    T: int
    masked: bool

    @property
    def ratio(self) -> float:
        return self.ours_s / self.fused_s

    def __str__(self) -> str:
        what = "causal mask" if self.masked else "no mask"
        return (f"course attention / fused kernel at T={self.T} ({what}, CPU, 1 thread): {self.ratio:.2f}x "
                f"({self.ours_s * 1e3:.1f} ms vs {self.fused_s * 1e3:.1f} ms CPU time per call, medians)")


def _cpu_seconds(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def fused_ratio(T: int = 1024, *, B: int = 1, heads: int = 8, d_k: int = 64, repeats: int = 7,
                masked: bool = False, seed: int = 0) -> FusedRatio:
    """Time ours against ``F.scaled_dot_product_attention`` on ``(B, heads, T, d_k)`` float32 inputs.

    ``masked=True`` gives both the course's ``causal_mask(T)`` (the fused kernel as ``attn_mask``).
    Runs on one CPU thread (the thread count is restored afterwards); one untimed call of each first.
    """
    require_positive_int(T=T, B=B, heads=heads, d_k=d_k, repeats=repeats)
    require_bool(masked=masked)
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(B, heads, T, d_k, generator=g) for _ in range(3))
    mask = causal_mask(T) if masked else None
    calls = {
        "ours": lambda: scaled_dot_product_attention(Q, K, V, mask),
        "fused": lambda: F.scaled_dot_product_attention(Q, K, V, attn_mask=mask),
    }
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        times: dict[str, list[float]] = {name: [] for name in calls}
        for fn in calls.values():
            fn()  # warm-up: first-call costs
        for _ in range(repeats):
            for name, fn in calls.items():
                times[name].append(_cpu_seconds(fn))
    finally:
        torch.set_num_threads(threads)
    return FusedRatio(statistics.median(times["ours"]), statistics.median(times["fused"]), T, masked)


def main(argv: list[str] | None = None) -> int:
    """Print the ratio without and with a causal mask at ``T`` (default 1024; ``argv[0]`` overrides)."""
    argv = sys.argv[1:] if argv is None else argv
    T = int(argv[0]) if argv else 1024
    for masked in (False, True):
        print(fused_ratio(T, masked=masked))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
