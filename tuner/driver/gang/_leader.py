"""Rank 0's side of the gang's connections: it listens on the coordinator's port (every
interface), greets each follower (its hello checked against rank 0's own), and keeps one line
per rank; a lost rank may connect again and takes its seat back."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from tuner.core.errors import ConfigError, TunerError
from tuner.core.gang import Gang
from tuner.core.options import named
from tuner.driver.gang._hello import mismatch
from tuner.driver.gang._wire import Closed, Line

_HELLO_WAIT_S = 10.0
"""How long a new connection may take to say hello (a port scanner never does)."""


class Leader:
    """The followers of ``gang`` as they join; ``ours``: rank 0's hello."""

    def __init__(self, gang: Gang, ours: dict[str, Any], say: Callable[[str], None]) -> None:
        self.gang = gang
        self._ours = ours
        self._say = say
        self._lines: dict[int, Line] = {}
        self._refused: str | None = None
        self._closed = False
        self._changed = threading.Condition()
        self._server = _listen(gang.address[1])
        self._thread = threading.Thread(target=self._accept, name="tuner-gang", daemon=True)
        self._thread.start()

    def ready(self, wait_s: float) -> dict[int, Line]:
        """Every follower's line, once all are connected; waits ``wait_s`` seconds for those
        that are not. Raises :class:`ConfigError` for a rank refused (not the same tuner or
        options), :class:`TunerError` for ranks that never came."""
        missing: list[int] = []
        with self._changed:
            self._changed.wait_for(lambda: self._refused or not self._missing(), wait_s)
            if self._refused:
                raise ConfigError(self._refused)
            missing = self._missing()
            if not missing:
                return dict(self._lines)
        ranks = ", ".join(str(rank) for rank in missing)
        host, port = self.gang.address
        raise TunerError(
            f"rank(s) {ranks} of {self.gang.hosts} did not join at {host}:{port} within "
            f"{wait_s:.0f} s ({named('join_wait')}): start `tuner search --rank R` with the same "
            "options on each host, and check that they reach this port"
        )

    def drop(self, rank: int, line: Line) -> None:
        """Forget rank ``rank``'s ``line`` (its connection failed): closing it ends that rank's
        child, and the rank may connect again."""
        with self._changed:
            if self._lines.get(rank) is line:
                del self._lines[rank]
        line.close()

    def close(self, kind: str = "done", why: str = "") -> None:
        """Tell every follower the search is over (``done``) or stopped (``stop``, ``why``),
        then close every line and the port."""
        with self._changed:
            self._closed = True
            lines = list(self._lines.values())
            self._lines.clear()
        for line in lines:
            with contextlib.suppress(Closed):
                line.send(kind, why=why)
            line.close()
        with contextlib.suppress(OSError):
            self._server.close()
        self._thread.join(timeout=2)

    def _missing(self) -> list[int]:
        return [rank for rank in range(1, self.gang.hosts) if rank not in self._lines]

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, peer = self._server.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            conn.settimeout(None)
            threading.Thread(
                target=self._greet, args=(Line(conn), peer[0]), name="tuner-gang-hello", daemon=True
            ).start()

    def _greet(self, line: Line, peer: str) -> None:
        """Read a new connection's hello; seat it, or refuse it saying why (on both sides)."""
        try:
            hello = line.receive(_HELLO_WAIT_S)
            rank = hello.get("rank")
            if hello["kind"] != "hello":  # not a tuner's: no reason to stop the search
                line.close()
                return
            why = mismatch(self._ours, hello)
            if why is None and not (isinstance(rank, int) and 1 <= rank < self.gang.hosts):
                why = f"rank {rank!r} is not a follower of {self.gang.hosts} hosts (1 to "
                why += f"{self.gang.hosts - 1})"
            if why is not None:
                line.send("refused", why=why)
                line.close()
                self._refuse(f"{why} (from {peer})")
                return
            line.send("welcome")
            assert isinstance(rank, int)
        except (Closed, TimeoutError):
            line.close()
            return
        with self._changed:
            if self._closed:
                line.close()
                return
            stale = self._lines.pop(rank, None)
            self._lines[rank] = line
            self._changed.notify_all()
        if stale is not None:
            stale.close()
        self._say(f"rank {rank}/{self.gang.hosts} joined from {peer}")

    def _refuse(self, why: str) -> None:
        self._say(why)
        with self._changed:
            self._refused = why
            self._changed.notify_all()


def _listen(port: int) -> socket.socket:
    """The coordinator's port on every interface (IPv6 too where the host has it)."""
    try:
        if socket.has_dualstack_ipv6():
            server = socket.create_server(
                ("", port), family=socket.AF_INET6, dualstack_ipv6=True, reuse_port=False
            )
        else:
            server = socket.create_server(("", port))
    except OSError as exc:
        raise TunerError(
            f"cannot listen on port {port} for the gang's ranks ({exc.strerror or exc}): "
            f"another process holds it; choose another {named('coordinator')} port"
        ) from None
    server.settimeout(0.5)  # the accepting thread looks at `closed` this often
    return server


def wait_until(deadline: float) -> float:
    """Seconds left until the monotonic ``deadline`` (0 when past)."""
    return max(0.0, deadline - time.monotonic())
