"""The pipe between the grader and a worker: framed messages (``checkers.transport``), a deadline
on every read and write on the grader's side, and the loop that answers the other side's requests.

Both sides hold an :class:`Endpoint`. A request is ``{"op": "call", "id", "args", "kwargs"}`` or
``{"op": "getattr", "id", "name"}`` on an object the answering side exported (``id``); the answer
is ``{"op": "return", "value", "after", "records"}`` or ``{"op": "raise", "error"}``. While a side
waits for its answer it serves the other side's requests, so a fixture's callback (a layer the
student's code calls) runs on the grader's side, in the middle of the student's call.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any

import numpy as np
import torch

from .transport import (
    MAX_BYTES, ChannelClosed, Codec, TimedOut, TransportError, pack, remote_from, unpack)


PROTOCOL = frozenset({"to_spec", "from_spec", "record", "absorb", "by_reference", "remote_attributes"})


class Garbled(ChannelClosed):
    """The worker sent something that is not a well-formed message (or one over the size limit)."""


def changed_arguments(args: tuple, kwargs: dict) -> dict:
    """The tensor and array arguments of a call, by position or keyword: sent back after it (in-place changes)."""
    after = {i: a for i, a in enumerate(args) if isinstance(a, (torch.Tensor, np.ndarray))}
    after.update({k: a for k, a in kwargs.items() if isinstance(a, (torch.Tensor, np.ndarray))})
    return after


class Endpoint:
    """One side of the channel (read from ``rfd``, write to ``wfd``).

    student_side: this is the worker: it answers with the arguments' values after each call
    (in-place changes) and takes any exception of the code it runs as that code's answer;
    it may rebuild ``fixtures`` from their specs. Otherwise this is the grader: a request from
    the worker may only call what the grader handed over, or read its public attributes.
    ``deadline`` (``time.monotonic()`` value, or None): when reads and writes give up."""

    def __init__(self, rfd: int, wfd: int, *, student_side: bool = False, fixtures=None, limit: int = MAX_BYTES):
        self.rfd, self.wfd, self.limit = rfd, wfd, limit
        self.student_side, self.fixtures = student_side, fixtures
        self.exports: dict[int, Any] = {}
        self.deadline: float | None = None
        self._buffer = bytearray()

    # -- objects kept on this side ------------------------------------------------------------
    def export(self, obj: Any) -> dict | None:
        if not callable(obj):
            return None
        key = len(self.exports)
        self.exports[key] = obj
        name = getattr(obj, "__name__", None)
        return {"$": "ref", "id": key, "type": type(obj).__name__, "name": name if isinstance(name, str) else None}

    def codec(self) -> Codec:
        return Codec(export=self.export, resolve=lambda node: remote_from(node, self),
                     fixtures=self.fixtures if self.student_side else None)

    # -- messages -------------------------------------------------------------------------------
    def send(self, value: Any, codec: Codec | None = None) -> None:
        doc, blobs = (codec or self.codec()).flatten(value)
        self._send_bytes(pack(doc, blobs, self.limit))

    def receive(self) -> tuple[Any, Codec]:
        """The next message (decoded) and its codec. On the grader's side a malformed message raises
        :class:`Garbled`: the channel cannot be trusted to line up again, and no checker may take it
        for an ordinary exception of the student's code."""
        try:
            doc, blobs = unpack(self._recv_bytes, self.limit)
            codec = self.codec()
            message = codec.rebuild(doc, blobs)
            if not isinstance(message, dict) or not isinstance(message.get("op"), str):
                raise TransportError("a message without an operation")
        except TransportError as err:
            if self.student_side:
                raise
            raise Garbled(f"malformed reply from the worker: {err}") from None
        return message, codec

    def request(self, message: dict) -> tuple[dict, Codec]:
        """Send a request; serve the other side's requests until its answer comes: (answer, codec used)."""
        codec = self.codec()
        self.send(message, codec)
        while True:
            incoming, their_codec = self.receive()
            if incoming["op"] in ("return", "raise"):
                return incoming, codec
            self.answer(incoming, their_codec)

    def serve(self) -> None:
        """Answer requests until the other side closes the channel (the worker's main loop)."""
        try:
            while True:
                self.answer(*self.receive())
        except ChannelClosed:
            return

    def answer(self, message: dict, codec: Codec) -> None:
        caught = BaseException if self.student_side else Exception
        args, kwargs = message.get("args", []), message.get("kwargs", {})
        try:
            target = self._target(message)
            if message["op"] == "call":
                if not isinstance(args, list) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                    raise TransportError("a call whose arguments are not a list and a dict of names")
                reply = {"op": "return", "value": target(*args, **kwargs)}
                if self.student_side:
                    reply["after"] = changed_arguments(tuple(args), kwargs)
            else:
                reply = {"op": "return", "value": self._attribute(target, message.get("name"))}
            records = {k: f.record() for k, f in codec.got_fixtures.items() if callable(getattr(f, "record", None))}
            if records:
                reply["records"] = records
        except ChannelClosed:
            raise
        except caught as err:  # noqa: BLE001 - on the worker's side, whatever the student's code raised
            reply = {"op": "raise", "error": err}
        try:
            self.send(reply)
        except TransportError as err:  # e.g. an answer over the size limit: say so instead
            self.send({"op": "raise", "error": err})

    def _attribute(self, target: Any, name: Any) -> Any:
        """An attribute the other side asked for. The grader answers the worker only with what a student's
        code may use of an object it was handed: its sub-modules and methods (callables), or the names its
        class lists in ``remote_attributes``; never a private name, plain data (a layer's ``kind`` would
        give the answer away) or the fixture protocol (``to_spec``, ``record``...)."""
        if not isinstance(name, str):
            raise AttributeError("an attribute name that is not a string")
        if self.student_side:
            return getattr(target, name)
        listed = getattr(type(target), "remote_attributes", None)
        refused = name.startswith("_") or name in PROTOCOL or (listed is not None and name not in listed)
        value = None if refused else getattr(target, name)
        if refused or (listed is None and not callable(value)):
            raise AttributeError(f"{type(target).__name__} has no attribute {name[:60]!r} that your code may read")
        return value

    def _target(self, message: dict) -> Any:
        key = message.get("id")
        if message["op"] not in ("call", "getattr") or type(key) is not int or key not in self.exports:
            raise TransportError(f"an unknown request {str(message.get('op'))[:40]!r} on object {str(key)[:20]}")
        return self.exports[key]

    # -- bytes ----------------------------------------------------------------------------------
    def _wait(self, fd: int, write: bool) -> None:
        if self.deadline is None:
            return
        left = self.deadline - time.monotonic()
        ready = select.select([], [fd], [], max(left, 0))[1] if write else select.select([fd], [], [], max(left, 0))[0]
        if left <= 0 or not ready:
            raise TimedOut("no answer before the time limit")

    def _recv_bytes(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._wait(self.rfd, write=False)
            try:
                chunk = os.read(self.rfd, max(n - len(self._buffer), 1 << 16))
            except OSError as err:
                raise ChannelClosed(f"the channel broke ({err})") from None
            if not chunk:
                raise ChannelClosed("the other side closed the channel")
            self._buffer += chunk
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    def _send_bytes(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self._wait(self.wfd, write=True)
            try:  # with a deadline, at most one pipe page at a time: select said that much fits
                written = os.write(self.wfd, view[: 4096 if self.deadline is not None else len(view)])
            except OSError as err:
                raise ChannelClosed(f"the channel broke ({err})") from None
            view = view[written:]
