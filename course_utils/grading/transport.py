"""Plain data across a process boundary, and the remote proxies of the grader (the contract with
the grader: ``checkers/__init__.py``).

``course-grade`` runs a student's code in a worker process and the checkers in its own: a checker
is handed a :class:`Remote` stand-in for the student's function or class, whose calls travel to
the worker as messages: JSON plus ``.npy`` arrays read back with ``allow_pickle=False``, never
pickle, so nothing a worker sends can run code on the grader's side.

What travels as itself: ``torch.Tensor`` (every dtype; bfloat16 and others NumPy lacks as
same-sized integers), ``numpy.ndarray`` and NumPy scalars, ``None``, ``bool``, ``int``, ``float``,
``complex``, ``str``, ``torch.Size``, ``torch.dtype``, ``tuple``/``list``/``dict`` of these.
*Fixtures* (classes of ``checkers/fixtures.py``) travel as ``(fixture_name, to_spec())``, are rebuilt
with ``from_spec`` on the worker's side, and what they recorded there comes back (``record()``
there, ``absorb(record)`` here). A callable or ``nn.Module`` of the worker stays where it lives and
the grader gets a :class:`Remote` for it (calls, attribute reads, methods such as ``state_dict()``);
the grader's own objects never travel (its endpoint exports nothing: ``grading.channel``). Anything
else arrives as an :class:`Opaque` with the original type's name and a short ``repr``; an exception
as one of the same class name and message. Tensor and array arguments that the called code
changed in place are changed on the caller's side too (:func:`settle`).

Malformed or oversized input raises :class:`TransportError` (a ``ValueError``). A side that stops
answering raises :class:`ChannelClosed` (:class:`TimedOut` past the deadline): ``BaseException``s
that a checker's ``except Exception`` never takes for the student's error. The pipes and the
message loop: ``course_utils.grading.channel``.
"""

from __future__ import annotations

import builtins
import io
import json
import warnings
from typing import Any

import numpy as np
import torch

MAX_BYTES = 64 * 2**20  # one message, arrays included
MAX_DEPTH = 60
_PLAIN_SCALARS = (type(None), bool, int, float, str)
_TORCH_DTYPES = {str(d).removeprefix("torch."): d for d in (
    getattr(torch, n, None) for n in (
        "bool uint8 int8 int16 int32 int64 uint16 uint32 uint64 float16 bfloat16 float32 float64 complex32 "
        "complex64 complex128 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz").split()) if d is not None}
_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _carrier(dtype: torch.dtype) -> torch.dtype:
    """The dtype a tensor of ``dtype`` travels as: itself where NumPy has it, else a same-sized int."""
    with warnings.catch_warnings():  # "ComplexHalf support is experimental"
        warnings.simplefilter("ignore")
        try:
            torch.empty(0, dtype=dtype).numpy()
            return dtype
        except TypeError:
            return _INT_OF_SIZE[torch.empty(0, dtype=dtype).element_size()]


_CARRIERS = {dtype: _carrier(dtype) for dtype in _TORCH_DTYPES.values()}
_NUMPY_OF = {dtype: np.dtype(str(carrier).removeprefix("torch.")) for dtype, carrier in _CARRIERS.items()}


class TransportError(ValueError):
    """A message that is malformed, of an unknown kind, or larger than the limit."""


class ChannelClosed(BaseException):
    """The other side is gone (its process ended, or it closed the channel)."""


class TimedOut(ChannelClosed):
    """No answer before the deadline."""


class Opaque:
    """Stands in for an object that is not plain data: ``type(x).__name__`` is its type's name."""

    def __init__(self, text: str = "") -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text or f"<{type(self).__name__}>"


class RemoteError(Exception):
    """An exception raised on the other side whose class has no builtin of the same name here."""


def _named(base: type, name: str) -> type:
    name = name if isinstance(name, str) and name.isidentifier() and len(name) <= 100 else "object"
    return type(name, (base,), {"__module__": "remote"})


def opaque(type_name: str, text: str) -> Opaque:
    return _named(Opaque, type_name)(_short(text))


def _short(text: Any, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_from(node: dict) -> BaseException:
    """An exception of the class of that name: the builtin one where there is one, else a RemoteError."""
    name, message = _str(node.get("type")), _str(node.get("message"))
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            err = cls(message)
            if str(err) == message:
                return err
        except Exception:  # noqa: BLE001 - a builtin whose constructor wants other arguments
            pass
    return _named(RemoteError, name)(message)  # SystemExit, KeyboardInterrupt, a library's own class...


def _dtype(name: Any) -> torch.dtype:
    if name not in _TORCH_DTYPES:
        raise TransportError(f"unknown dtype {_short(name, 40)!r}")
    return _TORCH_DTYPES[name]


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TransportError(f"expected a string in the message, got {type(value).__name__}")
    return value


class Codec:
    """Turns values into (JSON-able document, list of .npy blobs) and back, for one message.

    ``export(obj)`` gives a ``{"$": "ref"}`` node for a callable or module kept on this side (or
    ``None``: it travels as an Opaque); ``resolve(node)`` turns such a node from the other side
    into a :class:`Remote`. ``fixtures``: the module whose classes may be rebuilt from a spec, on
    the worker's side only (the grader never rebuilds anything a worker sent)."""

    def __init__(self, export=None, resolve=None, fixtures=None) -> None:
        self.export, self.resolve, self.fixtures = export, resolve, fixtures
        self.sent_fixtures: dict[int, Any] = {}
        self.got_fixtures: dict[int, Any] = {}

    # -- encoding -----------------------------------------------------------------------
    def flatten(self, value: Any) -> tuple[Any, list[bytes]]:
        blobs: list[bytes] = []
        return self._enc(value, blobs, 0), blobs

    def _blob(self, array: np.ndarray, blobs: list[bytes]) -> int:
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        blobs.append(buffer.getvalue())
        return len(blobs) - 1

    def _enc(self, v: Any, blobs: list[bytes], depth: int) -> Any:
        if depth > MAX_DEPTH:
            return {"$": "opaque", "type": type(v).__name__, "repr": "(nested too deeply to send)"}
        if type(v) in _PLAIN_SCALARS:
            return v
        if isinstance(v, torch.Tensor):
            return self._enc_tensor(v, blobs)
        if isinstance(v, np.ndarray) and v.dtype != object:
            return {"$": "ndarray", "blob": self._blob(np.ascontiguousarray(v), blobs)}
        if isinstance(v, np.generic) and not isinstance(v, np.object_):
            return {"$": "npscalar", "blob": self._blob(np.asarray(v), blobs)}
        if isinstance(v, torch.Size):
            return {"$": "size", "items": [int(s) for s in v]}
        if isinstance(v, torch.dtype):
            return {"$": "dtype", "name": str(v).removeprefix("torch.")}
        if isinstance(v, (int, float, str)):  # subclasses (an IntEnum, a str subclass): as the plain type
            return next(t for t in (int, float, str) if isinstance(v, t))(v)
        if isinstance(v, complex):
            return {"$": "complex", "re": v.real, "im": v.imag}
        if isinstance(v, list):
            return [self._enc(x, blobs, depth + 1) for x in v]
        if isinstance(v, tuple):
            return {"$": "tuple", "items": [self._enc(x, blobs, depth + 1) for x in v]}
        if isinstance(v, dict):
            return {"$": "dict", "items": [[self._enc(k, blobs, depth + 1), self._enc(x, blobs, depth + 1)]
                                           for k, x in v.items()]}
        if isinstance(v, BaseException):
            return {"$": "error", "type": type(v).__name__, "message": _short(v, 2000)}
        if isinstance(v, Opaque) and not isinstance(v, Remote):
            return {"$": "opaque", "type": type(v).__name__, "repr": v.text}
        if callable(getattr(v, "to_spec", None)) and getattr(type(v), "__module__", "").endswith("checkers.fixtures"):
            key = len(self.sent_fixtures)
            self.sent_fixtures[key] = v
            name = getattr(type(v), "fixture_name", "") or type(v).__name__
            return {"$": "fixture", "class": name, "id": key, "spec": self._enc(v.to_spec(), blobs, depth + 1)}
        node = self.export(v) if self.export else None
        if node is not None:
            return node
        try:
            text = repr(v)
        except Exception:  # noqa: BLE001 - a broken __repr__ must not stop the transport
            text = ""
        return {"$": "opaque", "type": type(v).__name__, "repr": _short(text)}

    def _enc_tensor(self, t: torch.Tensor, blobs: list[bytes]) -> dict:
        name = str(t.dtype).removeprefix("torch.")
        if name not in _TORCH_DTYPES or t.layout != torch.strided or t.is_quantized or t.is_nested:
            if t.layout in (torch.sparse_coo, torch.sparse_csr) and name in _TORCH_DTYPES:
                t = t.to_dense()
            else:
                return {"$": "opaque", "type": "Tensor", "repr": f"tensor of dtype {name}, layout {t.layout}"}
        plain = t.detach().cpu().contiguous()
        carrier = _CARRIERS[plain.dtype]
        array = (plain if carrier == plain.dtype else plain.view(carrier)).numpy()
        return {"$": "tensor", "dtype": name, "blob": self._blob(array, blobs), "grad": bool(t.requires_grad)}

    # -- decoding -----------------------------------------------------------------------
    def rebuild(self, doc: Any, blobs: list[bytes]) -> Any:
        return self._dec(doc, blobs, 0)

    def _array(self, node: dict, blobs: list[bytes]) -> np.ndarray:
        index = node.get("blob")
        if type(index) is not int or not 0 <= index < len(blobs):
            raise TransportError("an array refers to no data")
        try:
            array = np.load(io.BytesIO(blobs[index]), allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - any failure to read is a malformed message
            raise TransportError(f"an array could not be read ({type(err).__name__}: {_short(err, 100)})") from None
        if not isinstance(array, np.ndarray) or array.dtype.hasobject:
            raise TransportError("an array of Python objects")
        return array

    def _dec(self, v: Any, blobs: list[bytes], depth: int) -> Any:
        if depth > MAX_DEPTH + 2:
            raise TransportError("the message is nested too deeply")
        if type(v) in _PLAIN_SCALARS or isinstance(v, list):
            return v if not isinstance(v, list) else [self._dec(x, blobs, depth + 1) for x in v]
        if not isinstance(v, dict) or not isinstance(v.get("$"), str):
            raise TransportError(f"unexpected {type(v).__name__} in the message")
        kind = v["$"]
        if kind == "tensor":
            dtype, array = _dtype(v.get("dtype")), self._array(v, blobs)
            if array.dtype != _NUMPY_OF[dtype]:
                raise TransportError(f"a {v['dtype']} tensor sent as {array.dtype} data")
            t = torch.from_numpy(array)
            t = t if _CARRIERS[dtype] == dtype else t.view(dtype)
            return t.requires_grad_() if v.get("grad") is True and (t.is_floating_point() or t.is_complex()) else t
        if kind == "ndarray":
            return self._array(v, blobs)
        if kind == "npscalar":
            array = self._array(v, blobs)
            if array.shape != ():
                raise TransportError("a NumPy scalar with a shape")
            return array[()]
        if kind in ("tuple", "size"):
            items = v.get("items")
            if not isinstance(items, list):
                raise TransportError(f"a {kind} without items")
            values = [self._dec(x, blobs, depth + 1) for x in items]
            if kind == "tuple":
                return tuple(values)
            if not all(type(s) is int and s >= 0 for s in values):
                raise TransportError("a torch.Size of something other than sizes")
            return torch.Size(values)
        if kind == "dict":
            items = v.get("items")
            if not isinstance(items, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
                raise TransportError("a dict without (key, value) pairs")
            out = {}
            for key, value in items:
                key = self._dec(key, blobs, depth + 1)
                try:
                    hash(key)
                except TypeError:
                    raise TransportError(f"a dict key of type {type(key).__name__}") from None
                out[key] = self._dec(value, blobs, depth + 1)
            return out
        if kind == "dtype":
            return _dtype(v.get("name"))
        if kind == "complex":
            re, im = v.get("re"), v.get("im")
            if not all(type(x) in (int, float) for x in (re, im)):
                raise TransportError("a complex number without real and imaginary parts")
            return complex(re, im)
        if kind == "opaque":
            return opaque(_str(v.get("type")), _str(v.get("repr")))
        if kind == "error":
            return _error_from(v)
        if kind == "fixture":
            return self._dec_fixture(v, blobs, depth)
        if kind == "ref" and self.resolve is not None:
            return self.resolve(v)
        raise TransportError(f"unknown kind {_short(kind, 40)!r} in the message")

    def _dec_fixture(self, v: dict, blobs: list[bytes], depth: int) -> Any:
        """A fixture rebuilt from its spec: a class listed in ``fixtures.FIXTURES`` (by ``fixture_name``), or
        else a public class defined in that module."""
        name, key = _str(v.get("class")), v.get("id")
        listed = getattr(self.fixtures, "FIXTURES", None)
        cls = (listed.get(name) if isinstance(listed, dict) else getattr(self.fixtures, name, None)
               ) if self.fixtures is not None and not name.startswith("_") else None
        if not isinstance(cls, type) or cls.__module__ != self.fixtures.__name__ or type(key) is not int:
            raise TransportError(f"a fixture of an unknown class {_short(name, 60)!r}")
        fixture = cls.from_spec(self._dec(v.get("spec"), blobs, depth + 1))
        self.got_fixtures[key] = fixture
        return fixture


def pack(doc: Any, blobs: list[bytes], limit: int = MAX_BYTES) -> bytes:
    """One frame: a line with the lengths of the parts, the JSON document, then the arrays."""
    text = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    sizes = [len(text)] + [len(b) for b in blobs]
    if sum(sizes) > limit:
        raise TransportError(f"the message is {sum(sizes)} bytes, over the limit of {limit}")
    return json.dumps(sizes).encode("ascii") + b"\n" + text + b"".join(blobs)


def unpack(read, limit: int = MAX_BYTES) -> tuple[Any, list[bytes]]:
    """The (document, blobs) of one frame; ``read(n)`` returns exactly n bytes (or raises)."""
    line = b""
    while not line.endswith(b"\n"):
        line += read(1)
        if len(line) > 100_000:
            raise TransportError("the message's first line is too long")
    try:
        sizes = json.loads(line)
    except ValueError:
        raise TransportError(f"the message does not start with its sizes: {_short(line[:60], 80)}") from None
    if not isinstance(sizes, list) or not sizes or not all(type(s) is int and s >= 0 for s in sizes):
        raise TransportError("the message's sizes are not a list of byte counts")
    if sum(sizes) > limit:
        raise TransportError(f"the message is {sum(sizes)} bytes, over the limit of {limit}")
    try:
        doc = json.loads(read(sizes[0]).decode("utf-8"))
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        raise TransportError(f"the message is not valid JSON ({_short(err, 100)})") from None
    return doc, [read(n) for n in sizes[1:]]

class Remote(Opaque):
    """A function, class, instance or module that lives on the other side of ``endpoint``.

    Calling it, reading an attribute (not a dunder) or calling a method (``state_dict()``) sends a
    request; the answer is plain data, another :class:`Remote`, or the exception it raised. Tensor
    and array arguments changed in place there are changed here; fixtures absorb what they recorded.
    ``__name__`` is the object's name there (a function's or a class's), for a checker's messages."""

    def __init__(self, endpoint, key: int, name: str | None) -> None:
        super().__init__(f"<remote {type(self).__name__}{' ' + name if name else ''}>")
        self._endpoint, self._key = endpoint, key
        if name:
            self.__name__ = name

    def __call__(self, *args, **kwargs):
        reply, codec = self._endpoint.request({"op": "call", "id": self._key, "args": list(args), "kwargs": kwargs})
        return settle(reply, codec, args, kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("_endpoint", "_key"):
            raise AttributeError(name)
        reply, codec = self._endpoint.request({"op": "getattr", "id": self._key, "name": name})
        return settle(reply, codec, (), {})


def settle(reply: Any, codec: Codec, args: tuple, kwargs: dict) -> Any:
    """The value of a reply to a call made with ``args``/``kwargs`` (raises the remote exception);
    copies in-place changes back into those arguments and hands fixtures their records."""
    if not isinstance(reply, dict) or reply.get("op") not in ("return", "raise"):
        raise TransportError("the reply is neither a value nor an exception")
    records, after = reply.get("records", {}), reply.get("after", {})
    if not isinstance(records, dict) or not isinstance(after, dict):
        raise TransportError("the fixtures' records or the arguments after the call are not a dict")
    for key, record in records.items():
        fixture = codec.sent_fixtures.get(key)
        if fixture is None or not callable(getattr(fixture, "absorb", None)):
            raise TransportError("a record for a fixture that was not sent")
        fixture.absorb(record)
    changed = [(args[k], v) for k, v in after.items() if type(k) is int and 0 <= k < len(args)]
    changed += [(kwargs[k], v) for k, v in after.items() if isinstance(k, str) and k in kwargs]
    for before, now in changed:
        _copy_back(before, now)
    if reply["op"] == "raise":
        error = reply.get("error")
        raise error if isinstance(error, BaseException) else TransportError("an exception that is not one")
    return reply.get("value")


def _copy_back(before: Any, now: Any) -> None:
    if isinstance(before, torch.Tensor) and isinstance(now, torch.Tensor):
        if before.dtype == now.dtype and before.shape == now.shape and torch.equal(before, now):
            return
        with torch.no_grad():
            if before.shape == now.shape and before.dtype == now.dtype:
                before.copy_(now)
            else:  # resized or retyped in place (resize_, unsqueeze_, .data = ...)
                before.data = now.detach().clone()
    elif isinstance(before, np.ndarray) and isinstance(now, np.ndarray) and before.shape == now.shape:
        if before.flags.writeable and not np.array_equal(before, now, equal_nan=before.dtype.kind in "fc"):
            np.copyto(before, now, casting="unsafe")


def remote_from(node: dict, endpoint) -> Remote:
    """The :class:`Remote` for a ``{"$": "ref"}`` node that the other side of ``endpoint`` sent."""
    key, name = node.get("id"), node.get("name")
    if type(key) is not int:
        raise TransportError("a reference without an id")
    return _named(Remote, node.get("type"))(endpoint, key, name[:100] if isinstance(name, str) else None)
