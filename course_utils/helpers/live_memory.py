"""Count the memory of the tensors a computation creates, exactly and on any machine.

``peak_tensor_bytes(fn)`` runs ``fn()`` while watching every PyTorch operation (a
``TorchDispatchMode``): each tensor an operation returns in new storage is counted from its
creation until Python frees it, and the largest total alive at any moment is the peak. An output
that shares the storage of one of the operation's inputs (a view such as ``x.view(...)``,
``x[:10]``, ``x.t()``, an in-place or ``out=`` result) allocates nothing and is not counted: so the
tensors that ``fn`` only reads, views or slices never count, whether they were made before the
call or inside it. Unlike the operating system's peak-resident-memory mark
(``timing.call_peak_bytes``) it does not depend on the memory allocator, the platform or what
the process did before; it does not see buffers an operation uses only internally.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


class _LiveTensors(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.storages: dict[int, int] = {}  # storage address -> bytes, for every storage fn allocated, alive
        self.live = self.peak = 0

    def _freed(self, key: int) -> None:
        self.live -= self.storages.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = {_storage_key(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        out = func(*args, **kwargs)
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            key, size = _storage_key(t), t.untyped_storage().nbytes()
            if key in inputs or key in self.storages or not size:
                continue  # a view of (or a write into) a tensor that exists already: nothing new
            self.storages[key] = size
            self.live += size
            weakref.finalize(t.untyped_storage(), self._freed, key)
        self.peak = max(self.peak, self.live)
        return out


def peak_tensor_bytes(fn: Callable[[], object]) -> int:
    """Largest number of bytes held at once by the tensors that ``fn()`` allocates (its result included).

    Tensors ``fn`` only reads, views or slices (``x.view``, ``x[:10]``, ``x.t()``) count nothing;
    a copy (``x.clone()``, ``x.contiguous()`` of a transposed ``x``) counts its bytes. Used in notebook 16.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function without arguments, got {type(fn).__name__}")
    with _LiveTensors() as mode:
        result = fn()
    del result
    return mode.peak
