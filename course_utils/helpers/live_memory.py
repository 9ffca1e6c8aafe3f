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


# torch.tensor(list), torch.as_tensor(list): the data are put in a tensor before the one operation the mode sees,
# which returns that very storage
_FRESH = {torch.ops.aten.lift_fresh.default, torch.ops.aten.lift.default}


def _parts(t: torch.Tensor) -> list[torch.Tensor]:
    """The strided tensors that hold ``t``'s data: ``t`` itself, or a sparse tensor's indices and values."""
    if t.layout == torch.strided:
        return [t]
    if t.layout == torch.sparse_coo:
        return [t._indices(), t._values()]
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [t.crow_indices(), t.col_indices(), t.values()]
    if t.layout in (torch.sparse_csc, torch.sparse_bsc):
        return [t.ccol_indices(), t.row_indices(), t.values()]
    return []  # another layout (nested, mkldnn): not counted


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


class _LiveTensors(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here runs under torch.compile. Left at True, PyTorch wraps __torch_dispatch__ in
        # torch._dynamo.disable, whose first call imports torch._dynamo: about a second of CPU per process.
        return False

    def __init__(self) -> None:
        super().__init__()
        self.storages: dict[int, int] = {}  # storage address -> bytes, for every storage fn allocated, alive
        self.live = self.peak = 0

    def _freed(self, key: int) -> None:
        self.live -= self.storages.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        given = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if func in _FRESH and all(t.layout == torch.strided and t.untyped_storage().resizable() for t in given):
            given = []  # memory torch allocated for Python data just now (NumPy's memory, from_numpy, is not resizable)
        inputs = {_storage_key(part) for t in given for part in _parts(t)}
        out = func(*args, **kwargs)
        for t in (part for leaf in tree_leaves(out) if isinstance(leaf, torch.Tensor) for part in _parts(leaf)):
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
    a copy (``x.clone()``, ``x.contiguous()`` of a transposed ``x``) counts its bytes, and so does a tensor made
    from Python data (``torch.tensor(list)``, ``torch.as_tensor(list)``); a sparse tensor counts its indices
    and values. Used in notebook 16.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function without arguments, got {type(fn).__name__}")
    with _LiveTensors() as mode:
        result = fn()
    del result
    return mode.peak
