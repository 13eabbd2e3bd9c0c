"""optuna-dashboard for tuner studies: the note and plots stored through its own API (any
optuna-dashboard on the storage shows them), and ``tuner dashboard``: optuna-dashboard's page
with a ``<style>`` that gives tuner's plots the full width and more height (optuna-dashboard puts
each in a half-width card of 450 px, where a legend leaves the plot a strip, and offers no
setting)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import ipaddress
import json
import signal
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import optuna

from tuner.core.errors import ConfigError
from tuner.core.record import decode_study
from tuner.storage import open_storage
from tuner.views.batch_figures import TARGET_PLOT, study_figures
from tuner.views.law_figure import LAW_PLOT, law_figures
from tuner.views.note import study_note

DASHBOARD_PLOTS = ("throughput-vs-batch", "loss-vs-batch", "pareto", TARGET_PLOT, LAW_PLOT)
"""The plots stored on a study, by id. ``pareto`` is tuner's own front beside optuna-dashboard's:
it draws the loss tolerance and the candidates it makes equal, so the pick is seen among them."""


def publish(study: optuna.Study, rec: dict[str, Any] | None) -> None:
    """Write the note and the plots on ``study``, replacing the previous ones. optuna-dashboard
    stores each text in pieces, one write each: Ctrl-C and SIGTERM are held back until all are
    written, so an interrupt never leaves half a note or plot."""
    from optuna_dashboard import save_note, save_plotly_graph_object

    trials = study.get_trials(deepcopy=False)
    written_at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    note = study_note(study.study_name, trials, decode_study(study).flat, rec, written_at)
    figures = study_figures(trials, rec) | law_figures(rec)
    plots = {graph_id: figures[graph_id] for graph_id in DASHBOARD_PLOTS if graph_id in figures}
    with _signals_held():
        save_note(study, note)
        for graph_id, figure in plots.items():
            save_plotly_graph_object(study, figure, graph_object_id=graph_id)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Block SIGINT and SIGTERM in the block; one that arrived is delivered at its end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """The dashboard page loads several API calls at once: answer them in parallel."""

    daemon_threads = True


class _ThreadingWSGIServer6(_ThreadingWSGIServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # no access log on the terminal
        pass


def serve(
    storage_url: str,
    host: str,
    port: int,
    on_ready: Callable[[str], None] = lambda url: None,
    storage_wait: float | None = None,
    allow_writes: bool = False,
    prepare: Callable[[Any], None] = lambda storage: None,
) -> None:
    """Serve optuna-dashboard for ``storage_url`` until interrupted, read-only unless
    ``allow_writes``, waiting ``storage_wait`` s for it (``None``: 30); :class:`ConfigError` for
    a missing storage or a busy port. ``prepare`` gets the storage before the page is served."""
    storage = open_storage(storage_url, create=False, wait_s=storage_wait)
    prepare(storage)
    from optuna_dashboard import wsgi

    app = wide_plots(wsgi(storage))
    if not allow_writes:  # every local user reaches 127.0.0.1, and the API has no login
        app = read_only(app)
    server_class = _ThreadingWSGIServer6 if ":" in host else _ThreadingWSGIServer
    try:
        server = make_server(
            host, port, app, server_class=server_class, handler_class=_QuietHandler
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use; pick another with --port"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    with server:  # closes the server, however serving ends
        shown_host = f"[{host}]" if ":" in host else host
        on_ready(f"http://{shown_host}:{server.server_port}/dashboard/")
        server.serve_forever(poll_interval=0.2)


SECURITY_DOCS = "docs/guide/security.md"  # the threat model and the reverse-proxy setup


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` serves this machine only (127.0.0.0/8, ``::1``,
    ``localhost``). No other name is resolved: a lookup can hang, and a name can move."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    # Before Python 3.13, is_loopback is False for ::ffff:127.0.0.1; ask its IPv4 address.
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def exposure_warning(host: str) -> str | None:
    """The one-line warning that the dashboard on ``host`` is open to whoever can reach it
    (``None`` on loopback): it has no login, and its API edits notes and deletes studies."""
    if is_loopback(host):
        return None
    return (
        f"the dashboard listens on {host}, which is not loopback: anyone who can reach "
        "it can read and change every study in this storage (notes, trials, deletion) without "
        f"logging in; put it behind an authenticating reverse proxy, see {SECURITY_DOCS}"
    )


PLOT_HEIGHT_PX = 560
"""The height of a stored plot's card: room for the legend below the plot."""

WIDE_PLOTS_STYLE = (
    "<style>"
    '.MuiGrid-grid-xs-6:has([id^="user-defined-plot:"])'
    "{flex-basis:100%!important;max-width:100%!important;}"
    f'[id^="user-defined-plot:"]{{height:{PLOT_HEIGHT_PX}px!important;}}'
    "</style>"
)

_App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def wide_plots(app: _App) -> _App:
    """``app`` with :data:`WIDE_PLOTS_STYLE` added to its HTML pages, the rest unchanged."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("PATH_INFO", "").startswith("/dashboard"):
            return app(environ, start_response)
        # A cached copy would lack the style: ask for the whole page.
        partial = ("HTTP_IF_MODIFIED_SINCE", "HTTP_IF_NONE_MATCH", "HTTP_RANGE")
        environ = {k: v for k, v in environ.items() if k not in partial}
        held: dict[str, Any] = {}

        def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            held.update(status=status, headers=headers, exc_info=exc_info)
            return lambda data: None  # the page is written below, whole

        chunks = app(environ, hold)
        try:
            body = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        headers = held["headers"]
        if dict((k.lower(), v) for k, v in headers).get("content-type", "").startswith("text/html"):
            body = body.replace(b"</head>", WIDE_PLOTS_STYLE.encode() + b"</head>", 1)
            drop = {"content-length", "etag", "last-modified"}
            headers = [(k, v) for k, v in headers if k.lower() not in drop]
            headers.append(("Content-Length", str(len(body))))
        start_response(held["status"], headers, held["exc_info"])
        return [body]

    return wrapped


READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ONLY_REASON = (
    "tuner dashboard serves this storage read-only: deleting, creating or renaming a study and "
    "writing notes or trial values are refused (start it with --allow-writes to change studies "
    "from the page)"
)


def read_only(app: _App) -> _App:
    """``app`` refusing every request but GET, HEAD and OPTIONS with 403 and
    :data:`READ_ONLY_REASON`, worded as optuna-dashboard's own errors so its page shows it."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD", "GET").upper() in READ_ONLY_METHODS:
            return app(environ, start_response)
        body = json.dumps({"reason": READ_ONLY_REASON}).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response("403 Forbidden", headers)
        return [body]

    return wrapped
