"""The dashboard page as ``tuner dashboard`` serves it: optuna-dashboard's own, with a style that
gives tuner's plots the page's full width.

optuna-dashboard puts every stored plot in a half-width card of fixed height (450 px), where a
legend below the plot leaves the plot a strip; it offers no setting for either. ``tuner dashboard``
adds one ``<style>`` to the page's HTML (optuna-dashboard's Content-Security-Policy allows inline
styles) that widens the cards holding a stored plot (element id ``user-defined-plot:<id>``) and
makes them taller. A plain ``optuna-dashboard`` on the same storage shows the same plots at half
width.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

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
    """``app`` (optuna-dashboard's WSGI app) with :data:`WIDE_PLOTS_STYLE` added to its HTML
    pages; every other answer (the API, scripts) passes unchanged."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("PATH_INFO", "").startswith("/dashboard"):
            return app(environ, start_response)
        # A cached copy would lack the style: ask for the whole page.
        environ = {
            k: v
            for k, v in environ.items()
            if k not in ("HTTP_IF_MODIFIED_SINCE", "HTTP_IF_NONE_MATCH", "HTTP_RANGE")
        }
        held: dict[str, Any] = {}

        def hold(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            held.update(status=status, headers=headers, exc_info=exc_info)
            return lambda data: None  # the page is written below, whole

        chunks = app(environ, hold)
        try:
            body = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
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
    """``app`` refusing every request that would change the storage (any method but GET, HEAD
    and OPTIONS: optuna-dashboard's API deletes, creates and renames studies and writes notes
    and trial values that way) with 403 and :data:`READ_ONLY_REASON` as optuna-dashboard words
    its own errors, so its page shows the reason."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD", "GET").upper() in READ_ONLY_METHODS:
            return app(environ, start_response)
        body = json.dumps({"reason": READ_ONLY_REASON}).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response("403 Forbidden", headers)
        return [body]

    return wrapped
