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
of each epoch. Anything the fingerprint cannot describe (a model class defined in a notebook, a
function argument) is never cached: the function simply trains.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

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
    return repr((FORMAT, torch.__version__, torch.get_num_threads(), torch.backends.cpu.get_cpu_capability(),
                 platform.machine(), platform.processor(), sys.version_info[:2],
                 os.environ.get("MKL_CBWR"), os.environ.get("ATEN_CPU_CAPABILITY"), _code_digest()))


def _feed(h, obj) -> None:
    """Add ``obj`` to the hash ``h``; raise _Unknown for what cannot be described exactly."""
    if obj is None or isinstance(obj, (bool, int, float, str, torch.dtype, torch.device)):
        h.update(repr((type(obj).__name__, obj)).encode())
    elif isinstance(obj, Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(repr(("tensor", t.dtype, tuple(t.shape))).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, nn.Module):
        for name, module in obj.named_modules():
            kind = type(module)
            if not kind.__module__.startswith(("course_utils.", "torch.")):
                raise _Unknown(f"{kind.__qualname__} is defined outside the course and PyTorch")
            h.update(f"{name}:{kind.__module__}.{kind.__qualname__}".encode())
            for key, value in sorted(vars(module).items()):
                if not key.startswith("_") and key != "training":
                    h.update(key.encode())
                    _feed(h, value)
        for key, value in obj.state_dict().items():
            h.update(key.encode())
            _feed(h, value)
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}]".encode())
        for item in obj:
            _feed(h, item)
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}]".encode())
        for key, value in sorted(obj.items(), key=lambda kv: repr(kv[0])):
            _feed(h, key)
            _feed(h, value)
    elif type(obj).__module__.startswith("course_utils.") and hasattr(obj, "__dict__") and not callable(obj):
        h.update(f"{type(obj).__module__}.{type(obj).__qualname__}".encode())  # a task or a data set
        _feed(h, vars(obj))
    else:
        raise _Unknown(type(obj).__qualname__)


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
