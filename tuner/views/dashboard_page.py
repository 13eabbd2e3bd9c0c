"""The dashboard page as ``tuner dashboard`` serves it: optuna-dashboard's own, with a ``<style>``
that gives tuner's plots the full width and more height (optuna-dashboard puts each in a
half-width card of 450 px, where a legend leaves the plot a strip, and offers no setting)."""

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
