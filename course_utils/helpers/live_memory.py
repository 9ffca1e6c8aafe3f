"""Count the memory of the tensors a computation creates, exactly and on any machine.

``peak_tensor_bytes(fn)`` runs ``fn()`` while watching every PyTorch operation (a
``TorchDispatchMode``): each tensor an operation returns is counted from its creation until
Python frees it, views of a tensor already counted are not counted again, and the largest total
alive at any moment is the peak. Unlike the operating system's peak-resident-memory mark
(``timing.call_peak_bytes``) it does not depend on the memory allocator, the platform or what
the process did before; it does not see buffers an operation uses only internally.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class _LiveTensors(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.storages: dict[int, int] = {}  # storage address -> bytes, for every storage alive
        self.live = self.peak = 0

    def _freed(self, key: int) -> None:
        self.live -= self.storages.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in self.storages:
                key, size = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
                if size:
                    self.storages[key] = size
                    self.live += size
                    weakref.finalize(t.untyped_storage(), self._freed, key)
        self.peak = max(self.peak, self.live)
        return out


def peak_tensor_bytes(fn: Callable[[], object]) -> int:
    """Largest number of bytes held at once by tensors that ``fn()`` creates (its result included)."""
    if not callable(fn):
        raise TypeError(f"fn must be a function without arguments, got {type(fn).__name__}")
    with _LiveTensors() as mode:
        result = fn()
    del result
    return mode.peak
