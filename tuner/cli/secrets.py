"""The storage URL read from a file named by ``TUNER_STORAGE_FILE`` (a password in ``--storage``
or ``TUNER_STORAGE`` shows in ``ps`` or ``docker inspect``; Docker hands secrets over as files).
Order: ``--storage``, ``TUNER_STORAGE``, ``TUNER_STORAGE_FILE``, the default; both variables set
is an error, as in PostgreSQL's image: nobody can tell which was meant."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from tuner.cli.errors import guard
from tuner.core.errors import ConfigError

STORAGE_ENV = "TUNER_STORAGE"
STORAGE_FILE_ENV = "TUNER_STORAGE_FILE"


def read_storage_file(path: str) -> str:
    """The storage URL held in the file at ``path``, stripped. :class:`ConfigError` for a file
    that cannot be read, is empty or holds more than one line; no message quotes its content."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {STORAGE_FILE_ENV} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{STORAGE_FILE_ENV} {path} is not UTF-8 text") from None
    url = text.strip()
    if not url:
        raise ConfigError(f"{STORAGE_FILE_ENV} {path} is empty; it should hold the storage URL")
    if "\n" in url:
        raise ConfigError(f"{STORAGE_FILE_ENV} {path} should hold one line: the storage URL")
    if not is_url_like(url):  # a bare password, say: never repeat it in a message
        raise ConfigError(
            f"{STORAGE_FILE_ENV} {path} does not hold a storage URL (SCHEME:…, e.g. "
            "postgresql+psycopg://user:pass@host/db)"
        )
    return url


def is_url_like(text: str) -> bool:
    """Whether ``text`` starts with a URL scheme (``sqlite:``, ``postgresql+psycopg:``)."""
    scheme, colon, _ = text.partition(":")
    return bool(colon) and scheme.replace("+", "").replace("-", "").isalnum()


def choose_storage(value: str, source: str | None, storage_file: str | None) -> str:
    """The storage URL to use, given ``--storage``'s ``value``, its Click ``ParameterSource``'s
    name and ``TUNER_STORAGE_FILE`` (``None`` or empty: unset)."""
    if not storage_file or source == "COMMANDLINE":
        return value
    if source == "ENVIRONMENT":
        raise ConfigError(f"set {STORAGE_ENV} or {STORAGE_FILE_ENV}, not both")
    return read_storage_file(storage_file)


def storage_from_file(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
    """Typer callback of ``--storage``: :func:`choose_storage` with this process's environment; an
    error is :func:`tuner.cli.errors.guard`'s line, not Click's usage block (no flag is wrong)."""
    source = ctx.get_parameter_source(param.name) if param.name else None
    # By name: newer Typer vendors Click, so its ParameterSource is not click.core's.
    name = getattr(source, "name", None)
    return guard(lambda: choose_storage(value, name, os.environ.get(STORAGE_FILE_ENV)))
