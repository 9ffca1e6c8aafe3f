"""The pipe between the grader and a worker: framed messages (``checkers.transport``), a deadline
on every read and write on the grader's side, and the loop that answers the other side's requests.

Both sides hold an :class:`Endpoint`, but only the grader asks. A request is ``{"op": "call",
"id", "args", "kwargs"}`` or ``{"op": "getattr", "id", "name"}`` on an object the worker exported
(``id``); the answer is ``{"op": "return", "value", "after", "records"}`` or ``{"op": "raise",
"error"}``. Data only crosses towards the worker: the grader exports nothing (a callable it would
send arrives as an inert :class:`~.transport.Opaque`), fixtures travel as their specs and are
rebuilt in the worker, and a request from the worker ends the conversation (:class:`Garbled`).
No object of the grader's process can be called, read or compiled from the worker.
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
    it may rebuild ``fixtures`` from their specs. Otherwise this is the grader: it exports
    nothing and answers nothing; a request from the worker is a malformed reply.
    ``deadline`` (``time.monotonic()`` value, or None): when reads and writes give up."""

    def __init__(self, rfd: int, wfd: int, *, student_side: bool = False, fixtures=None, limit: int = MAX_BYTES):
        self.rfd, self.wfd, self.limit = rfd, wfd, limit
        self.student_side, self.fixtures = student_side, fixtures
        self.exports: dict[int, Any] = {}
        self.deadline: float | None = None
        self._buffer = bytearray()

    # -- objects kept on this side ------------------------------------------------------------
    def export(self, obj: Any) -> dict | None:
        if not self.student_side or not callable(obj):  # the grader's objects never leave its process
            return None
        key = len(self.exports)
        self.exports[key] = obj
        name = getattr(obj, "__name__", None)
        return {"$": "ref", "id": key, "type": type(obj).__name__, "name": name if isinstance(name, str) else None}

    def codec(self) -> Codec:
        return Codec(export=self.export, resolve=None if self.student_side else (lambda node: remote_from(node, self)),
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
            if not self.student_side:
                raise Garbled("the worker asked the grader to run something (refused: only data crosses)")
            self.answer(incoming, their_codec)

    def serve(self) -> None:
        """Answer requests until the other side closes the channel (the worker's main loop)."""
        try:
            while True:
                self.answer(*self.receive())
        except ChannelClosed:
            return

    def answer(self, message: dict, codec: Codec) -> None:
        """Answer one request of the grader (the worker's side only)."""
        if not self.student_side:
            raise Garbled("the grader answers no requests")
        args, kwargs = message.get("args", []), message.get("kwargs", {})
        try:
            target = self._target(message)
            if message["op"] == "call":
                if not isinstance(args, list) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                    raise TransportError("a call whose arguments are not a list and a dict of names")
                reply = {"op": "return", "value": target(*args, **kwargs),
                         "after": changed_arguments(tuple(args), kwargs)}
            else:
                name = message.get("name")
                if not isinstance(name, str):
                    raise AttributeError("an attribute name that is not a string")
                reply = {"op": "return", "value": getattr(target, name)}
            records = {k: f.record() for k, f in codec.got_fixtures.items() if callable(getattr(f, "record", None))}
            if records:
                reply["records"] = records
        except ChannelClosed:
            raise
        except BaseException as err:  # noqa: BLE001 - whatever the student's code raised is its answer
            reply = {"op": "raise", "error": err}
        try:
            self.send(reply)
        except TransportError as err:  # e.g. an answer over the size limit: say so instead
            self.send({"op": "raise", "error": err})

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
