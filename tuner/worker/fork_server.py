"""The fork server: ``python -m tuner.worker.fork_server BACKEND FD``, one per search and
environment (what it is for, and why fork is safe once it imported: docs/design/architecture.md,
"Why a child process per trial"; OpenBLAS's threads handle ``fork``).

It imports BACKEND's modes once, touching no device, then forks each warm spare the driver asks
for over the Unix socket FD (:mod:`tuner.driver.children._forked`): the trial's supervisor, which
forks the warm worker. It reports each fork's pid, then its exit status (``{"id": N, "pid": P}``,
``{"id": N, "code": C}``); it exits with its parent, the driver. Each child sets the environment
the driver named (its ``TMPDIR``) before any code of the trial. A server whose import failed
exits: the driver then starts its spares, whose own import reports the error.
"""

from __future__ import annotations

import array
import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import tempfile
import traceback
from typing import Any, NoReturn

from tuner.worker import supervisor, warm

_FDS = 4
"""Each fork request carries the child's stdin, stdout and stderr, and the stdin's write end,
which its supervisor holds (so that the worker sees no end of input when the driver dies)."""
_POLL_S = 0.5


def main(argv: list[str]) -> NoReturn:
    """Import ``argv[0]``'s modes, then serve fork requests on the socket ``argv[1]``."""
    backend, fd = argv[0], int(argv[1])
    sock = socket.socket(fileno=fd)
    parent = int(os.environ.get(supervisor.PARENT_PID_ENV, os.getppid()))
    supervisor.die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(137)
    from tuner.worker.__main__ import runners

    preloaded = warm.preload(backend, runners)
    if preloaded.error is not None:
        os._exit(1)
    gc.freeze()  # the imported objects stay out of the children's collections: fewer pages copied
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    children: dict[int, int] = {}  # pid -> request id
    while True:
        ready = {fd for fd, _ in poller.poll(_POLL_S * 1000)}
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        for pid, code in supervisor.reap_children().items():
            if pid in children:
                _send(sock, {"id": children.pop(pid), "code": code})
        if os.getppid() != parent:
            os._exit(137)
        if sock.fileno() not in ready:
            continue
        message, fds = _receive(sock)
        if message is None:
            os._exit(0)  # the driver is done (no fork of ours runs a trial): ours end with us
        try:
            pid = _fork(message, fds, preloaded, closing=(sock, wake_r, wake_w))
        except OSError:
            _send(sock, {"id": message["id"], "pid": 0, "code": 127})
            continue
        children[pid] = message["id"]
        _send(sock, {"id": message["id"], "pid": pid})


def _receive(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    data, ancillary, _, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(_FDS * 4))
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    if not data:
        return None, list(fds)
    return json.loads(data), list(fds)


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the driver is gone: the parent check ends us
        sock.send(json.dumps(message).encode())


def _fork(
    message: dict[str, Any],
    fds: list[int],
    preloaded: warm.Preloaded,
    closing: tuple[socket.socket, int, int],
) -> int:
    """Fork the trial's supervisor for ``message``; its pid once it leads a session of its own
    (so that the driver's signal to its group reaches it). The fds are the child's now."""
    server = os.getpid()
    ready_r, ready_w = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.close(ready_r)
                _become_supervisor(message, fds, preloaded, server, closing, ready_w)
            except BaseException:  # a forked child must never return into the server's loop
                traceback.print_exc()
                os._exit(127)
        os.close(ready_w)
        ready_w = -1
        os.read(ready_r, 1)  # empty if it died first: its exit status tells
        return pid
    finally:
        for fd in (*fds, ready_r, ready_w):
            if fd >= 0:
                os.close(fd)


def _become_supervisor(
    message: dict[str, Any],
    fds: list[int],
    preloaded: warm.Preloaded,
    server: int,
    closing: tuple[socket.socket, int, int],
    ready: int,
) -> NoReturn:
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, supervisor.WATCHED)
    sock, wake_r, wake_w = closing
    sock.close()
    os.close(wake_r)
    os.close(wake_w)
    os.setsid()
    os.write(ready, b"1")
    os.close(ready)
    *streams, held = fds
    for target, fd in enumerate(streams):
        os.dup2(fd, target)
    for fd in streams:
        if fd > 2:
            os.close(fd)
    os.environ.update(message["env"])
    tempfile.tempdir = None  # the child's TMPDIR, not the server's cached one
    argv = list(message["argv"])
    me = os.getpid()

    def start() -> int:
        return _fork_worker(argv, preloaded, held, me)

    supervisor.supervise(message["trial_dir"], server, start)


def _fork_worker(argv: list[str], preloaded: warm.Preloaded, held: int, parent: int) -> int:
    pid = os.fork()
    if pid != 0:
        return pid
    code = 1
    try:
        os.close(held)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.environ[supervisor.PARENT_PID_ENV] = str(parent)
        _fresh_process_state()
        warm.inherit(preloaded)
        from tuner.worker.__main__ import main as worker_main

        worker_main(argv)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:  # as Python ends on an unhandled one: by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # reported on the trial's stderr, like a crash
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fresh_process_state() -> None:
    """What a started worker has of its own: its argv[0], a fresh NumPy RNG (Python's ``random``
    reseeds itself after a fork)."""
    import tuner.worker.__main__ as worker_module

    sys.argv[:1] = [worker_module.__file__ or sys.argv[0]]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _exit_code(exc: SystemExit) -> int:
    # As Python's own exit: None is 0, an int is itself, anything else is printed and is 1.
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main(sys.argv[1:])
