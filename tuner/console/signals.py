"""SIGTERM as Ctrl-C: a stopped command runs the same clean-up as an interrupted one."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so the same clean-up runs (exit code 143)."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated`; outside the main thread (a notebook,
    a service's thread) Python allows no handler, and the process's own handling stays."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM are noted, then the first raised at its end (unless
    it ends by an exception): for a clean-up that must finish (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum: int, frame: object) -> None:
        caught.append(signum)

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    failed = True
    try:
        yield
        failed = False
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught and not failed:
            raise Terminated() if caught[0] == signal.SIGTERM else KeyboardInterrupt()
