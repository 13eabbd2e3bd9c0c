"""optuna-dashboard for tuner studies: what a study shows there, and ``tuner dashboard``.

:func:`publish` stores the study note (Markdown) and the custom plots on the study, through
optuna-dashboard's own API, so any optuna-dashboard pointed at the storage shows them.
:func:`serve` runs the dashboard on a storage until Ctrl-C.
"""

from __future__ import annotations

import datetime as _dt
import errno
import socketserver
from collections.abc import Callable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import optuna

from tuner.errors import ConfigError
from tuner.figures import study_figures
from tuner.note import study_note
from tuner.storage import open_storage


def publish(study: optuna.Study, rec: dict[str, Any] | None) -> None:
    """Write the note and the plots ``throughput-vs-batch``, ``loss-vs-batch`` and ``pareto`` on
    ``study`` (``rec``: its recommendation, or ``None`` when nothing completed). Rewriting
    replaces the previous note and plots."""
    from optuna_dashboard import save_note, save_plotly_graph_object

    trials = study.get_trials(deepcopy=False)
    written_at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    save_note(study, study_note(study.study_name, trials, study.user_attrs, rec, written_at))
    figures = study_figures(
        trials,
        baseline_throughput=(rec or {}).get("baseline_throughput"),
        recommended_trial=(rec or {}).get("trial_number"),
    )
    for graph_id, figure in figures.items():
        save_plotly_graph_object(study, figure, graph_object_id=graph_id)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """The dashboard page loads several API calls at once: answer them in parallel."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # no access log on the terminal
        pass


def serve(
    storage_url: str, host: str, port: int, on_ready: Callable[[str], None] = lambda url: None
) -> None:
    """Serve optuna-dashboard for ``storage_url`` on ``host:port`` until interrupted.

    The storage must exist (nothing is created) and the port must be free; both are checked
    before serving and raise :class:`ConfigError`. ``on_ready`` gets the dashboard's URL.
    """
    storage = open_storage(storage_url, create=False)
    from optuna_dashboard import wsgi

    app = wsgi(storage)
    try:
        server = make_server(
            host, port, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use; pick another with --port"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    with server:
        shown_host = f"[{host}]" if ":" in host else host
        on_ready(f"http://{shown_host}:{server.server_port}/dashboard/")
        try:
            server.serve_forever(poll_interval=0.2)
        finally:
            server.server_close()
