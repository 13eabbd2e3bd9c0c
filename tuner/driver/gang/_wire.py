"""The gang's messages on the wire: one JSON object each, after its length (4 bytes, big-endian),
over one TCP connection per follower; a finished run as plain data and back."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from dataclasses import asdict
from typing import Any

from tuner.core.outcome import ChildRun

_LENGTH = struct.Struct(">I")
MAX_MESSAGE = 64 << 20
"""Larger is no message of a tuner's: a stray client, not a rank."""


class Closed(ConnectionError):
    """The other side went away (or sent what no rank sends)."""


class Line:
    """One connection: messages sent whole under a lock (a run's report and the leader's order
    to end it may cross), received by one reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        # A host that vanishes without closing is noticed in about a minute, not two hours.
        for name, value in (("TCP_KEEPIDLE", 20), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 4)):
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)

    def send(self, kind: str, **fields: Any) -> None:
        """Send one message; raises :class:`Closed` when the other side is gone."""
        body = json.dumps({"kind": kind, **fields}).encode()
        try:
            with self._lock:
                self.sock.sendall(_LENGTH.pack(len(body)) + body)
        except OSError as exc:
            raise Closed(str(exc)) from None

    def receive(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The next message; raises :class:`Closed` (the other side is gone) or
        :class:`TimeoutError` (nothing within ``timeout_s``)."""
        self.sock.settimeout(timeout_s)
        try:
            (length,) = _LENGTH.unpack(self._exactly(_LENGTH.size))
            if length > MAX_MESSAGE:
                raise Closed(f"a message of {length} bytes")
            self.sock.settimeout(None if timeout_s is None else max(timeout_s, 30.0))
            message = json.loads(self._exactly(length))
        except TimeoutError:
            raise
        except (OSError, ValueError) as exc:
            raise Closed(str(exc) or type(exc).__name__) from None
        if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
            raise Closed("a message without a kind")
        return message

    def _exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self.sock.recv(size - len(chunks))
            if not chunk:
                raise Closed("connection closed")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def run_to_plain(run: ChildRun) -> dict[str, Any]:
    return asdict(run)


def run_from_plain(data: Any) -> ChildRun:
    """A rank's run as it reported it; what is no run reads as one that died saying so."""
    try:
        return ChildRun(**data)
    except TypeError:
        return ChildRun(returncode=1, result_text=None, stderr_tail=f"unreadable report: {data!r}")
