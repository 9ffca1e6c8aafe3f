"""Remember finished trainings between test runs, so that ``pytest`` trains each model once.

Active only where the environment variable ``COURSE_TRAINING_CACHE`` names a folder: the course's
``conftest.py`` sets it for the notebook kernels that ``pytest`` starts. A student's notebook never
has it, so every training a student starts really runs.

A decorated training function first computes a fingerprint of everything its result depends on:
its arguments (the model's class names, hyperparameters and initial weights, the data, every
setting), the global random state, the course's own code (``core/`` and ``models/``), and the
machine's arithmetic (PyTorch's version, thread count, CPU capability and the math switches
``MKL_CBWR`` and ``ATEN_CPU_CAPABILITY``). Training is deterministic on one machine, so an equal
fingerprint means an equal result: a stored one is loaded (final weights, return value, what the
training printed, the random state after it), and a per-epoch callback is replayed on the weights
of each epoch. Code written in a notebook (a model class, a function that draws batches) enters the
fingerprint as its bytecode, defaults, closure and the globals it reads. Anything the fingerprint
cannot describe (a generator, an object of another library) is never cached: the function trains.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import hashlib
import inspect
import io
import os
import platform
import sys
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

ENV = "COURSE_TRAINING_CACHE"
# conftest.py turns the cache off in the pytest process itself: unit tests that train twice to test
# reproducibility must really train twice. The notebook kernels it starts have it on.
enabled_in_this_process = True
PACKAGE = Path(__file__).resolve().parents[1]
FORMAT = 1  # bump when the stored layout changes


class _Unknown(Exception):
    """An argument the fingerprint cannot describe: train instead of caching."""


@functools.cache
def _code_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(PACKAGE.glob("core/*.py")) + sorted(PACKAGE.glob("models/*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _machine() -> str:
    return repr((FORMAT, torch.__version__, np.__version__, torch.get_num_threads(), torch.backends.cpu.get_cpu_capability(),
                 platform.machine(), platform.processor(), sys.version_info[:2],
                 os.environ.get("MKL_CBWR"), os.environ.get("ATEN_CPU_CAPABILITY"), _code_digest()))


_LIBRARIES = {"course_utils", "torch", "numpy", "math", "random", "functools", "itertools", "collections"}
_PLAIN = (bool, int, float, complex, str, bytes, torch.dtype, torch.device)


def _is_library(obj) -> bool:
    """Code whose every change the key already sees (the course's code digest, the versions)."""
    module = getattr(obj, "__module__", None) or ""
    if module == "builtins":  # a real built-in, not code exec'd without a __name__
        return getattr(builtins, getattr(obj, "__qualname__", ""), None) is obj
    return module.split(".")[0] in _LIBRARIES


def _feed(h, obj, seen: set[int] | None = None) -> None:
    """Add ``obj`` to the hash ``h``; raise _Unknown for what cannot be described exactly."""
    seen = set() if seen is None else seen
    if obj is None or isinstance(obj, _PLAIN):
        h.update(repr((type(obj).__name__, obj)).encode())
    elif isinstance(obj, types.ModuleType):
        h.update(f"module {obj.__name__}".encode())
    elif isinstance(obj, Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(repr(("tensor", t.dtype, tuple(t.shape))).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, np.ndarray) and obj.dtype != object:
        h.update(repr(("array", obj.dtype.str, obj.shape)).encode() + np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, nn.Module):
        _feed_model(h, obj, seen)
    elif isinstance(obj, (list, tuple, dict)):
        items = sorted(obj.items(), key=lambda kv: repr(kv[0])) if isinstance(obj, dict) else obj
        h.update(f"{type(obj).__name__}[{len(obj)}]".encode())
        for item in items:
            _feed(h, item, seen)
    elif id(obj) in seen:
        h.update(b"(seen)")  # a function or class met before: a recursion
    elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)) and _is_library(obj):
        h.update(f"{obj.__module__}.{obj.__qualname__}".encode())
    elif isinstance(obj, types.FunctionType):
        seen.add(id(obj))
        _feed_function(h, obj, seen)
    elif isinstance(obj, type):
        seen.add(id(obj))
        _feed_class(h, obj, seen)
    elif _is_library(type(obj)) and hasattr(obj, "__dict__") and not callable(obj):
        h.update(f"{type(obj).__module__}.{type(obj).__qualname__}".encode())  # a task, a data set, a vocabulary
        _feed(h, vars(obj), seen)
    else:
        raise _Unknown(type(obj).__qualname__)


def _feed_model(h, model: nn.Module, seen: set[int]) -> None:
    """The classes (a class defined in a notebook by its code), settings and weights of every submodule."""
    for name, module in model.named_modules():
        h.update(name.encode())
        _feed(h, type(module), seen)
        _feed(h, {k: v for k, v in vars(module).items() if not k.startswith("_") and k != "training"}, seen)
    _feed(h, dict(model.state_dict()), seen)


def _feed_code(h, code: types.CodeType) -> None:
    h.update(code.co_code + repr((code.co_names, code.co_varnames, code.co_freevars)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(h, const)
        else:
            h.update(repr(const).encode())


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _feed_function(h, f: types.FunctionType, seen: set[int]) -> None:
    """A function written in a notebook: its bytecode, defaults, closure and the globals it reads."""
    _feed_code(h, f.__code__)
    _feed(h, (f.__defaults__, f.__kwdefaults__), seen)
    try:
        _feed(h, [cell.cell_contents for cell in f.__closure__ or ()], seen)
    except ValueError:  # an empty closure cell
        raise _Unknown(f.__qualname__) from None
    for name in sorted(_global_names(f.__code__) & f.__globals__.keys()):
        h.update(name.encode())
        _feed(h, f.__globals__[name], seen)


def _feed_class(h, cls: type, seen: set[int]) -> None:
    """A class written in a notebook: its bases and the code of its methods."""
    h.update(f"class {cls.__qualname__}".encode())
    _feed(h, list(cls.__bases__), seen)
    for name, value in sorted(vars(cls).items()):
        if name in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"):
            continue
        h.update(name.encode())
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        _feed(h, [value.fget, value.fset] if isinstance(value, property) else value, seen)


class _Tee(io.TextIOBase):
    """Write to the real stdout and remember the text."""

    def __init__(self, out):
        self.out, self.text = out, io.StringIO()

    def write(self, s: str) -> int:
        self.text.write(s)
        return self.out.write(s)

    def flush(self) -> None:
        self.out.flush()


def remembered(callback: str | None = None) -> Callable:
    """Decorate a training function whose first argument is the model it trains in place.

    ``callback`` names its per-epoch callback parameter, called as ``callback(epoch, model)``; a
    stored training replays it on the stored weights of each epoch.
    """

    def decorate(train: Callable) -> Callable:
        signature = inspect.signature(train)

        @functools.wraps(train)
        def wrapper(*args, **kwargs):
            folder = os.environ.get(ENV)
            if not folder or folder == "off" or not enabled_in_this_process:
                return train(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
            except TypeError:
                return train(*args, **kwargs)  # let the function itself report the bad call
            arguments = dict(bound.arguments)
            hook = arguments.pop(callback, None) if callback else None
            model = next(iter(arguments.values()))
            h = hashlib.sha256(f"{train.__module__}.{train.__qualname__}|{_machine()}".encode())
            try:
                _feed(h, arguments)
                _feed(h, hook is None)
                h.update(torch.get_rng_state().numpy().tobytes())
            except _Unknown:
                return train(*args, **kwargs)
            path = Path(folder) / f"{train.__name__}-{h.hexdigest()[:32]}.pt"
            try:
                stored = torch.load(path, weights_only=False) if path.exists() else None
            except Exception:  # noqa: BLE001 - an unreadable file (another version's): train and store again
                stored = None
            if stored is not None:
                return _replay(stored, model, hook, arguments.get("device"))
            return _record(train, bound, model, callback, hook, path)

        return wrapper

    return decorate


def _record(train, bound, model: nn.Module, callback, hook, path: Path):
    epochs: list[dict[str, Tensor]] = []
    tee = _Tee(sys.stdout)
    if hook is not None:
        def recording(epoch, trained):
            epochs.append({k: v.detach().cpu().clone() for k, v in trained.state_dict().items()})
            with contextlib.redirect_stdout(tee.out):  # what the callback prints is printed again on replay
                hook(epoch, trained)

        bound.arguments[callback] = recording
    with contextlib.redirect_stdout(tee):
        result = train(*bound.args, **bound.kwargs)
    stored = {"result": result, "printed": tee.text.getvalue(), "epochs": epochs, "rng": torch.get_rng_state(),
              "final": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        torch.save(stored, partial)
        partial.replace(path)  # atomic: a kernel running beside this one never reads half a file
    except OSError:
        pass  # a read-only or full disk: the training is simply not remembered
    return result


def _replay(stored: dict, model: nn.Module, hook, device):
    print(stored["printed"], end="")
    if device is not None:
        model.to(device)  # where the training function would have put it
    for epoch, state in enumerate(stored["epochs"], start=1):
        model.load_state_dict(state)
        model.train()
        with torch.random.fork_rng(devices=[]):
            hook(epoch, model)
    model.load_state_dict(stored["final"])
    model.train()
    torch.set_rng_state(stored["rng"])
    return stored["result"]
