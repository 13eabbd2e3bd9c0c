"""What the CLI's commands share: option types, JSON output, and the browsing commands' fixed
choices as enums (``--help`` lists them, click refuses others), each mirroring a tuple of the core
(``tests/cli/test_conventions.py`` checks that they agree), and the storage URL read from a file
named by ``TUNER_STORAGE_FILE`` (a password in ``--storage`` or ``TUNER_STORAGE`` shows in ``ps`` or
``docker inspect``; Docker hands secrets over as files). Order: ``--storage``, ``TUNER_STORAGE``,
``TUNER_STORAGE_FILE``, the default; both variables set is an error, as in PostgreSQL's image:
nobody can tell which was meant."""

from __future__ import annotations

import functools
import inspect
import json
import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from tuner.cli.errors import guard
from tuner.console.logs import say_info
from tuner.core.errors import ConfigError
from tuner.core.options import Option, naming, option, options_of
from tuner.files import atomic_write_text

if TYPE_CHECKING:
    from tuner.driver.options import SpecOptions

Options = TypeVar("Options", bound="SpecOptions")


class Policy(StrEnum):
    """``--policy``: how the recommendation is chosen within the loss tolerance."""

    loss_then_throughput = "loss-then-throughput"
    goodput = "goodput"
    time_to_target = "time-to-target"


class ReportFormat(StrEnum):
    """``tuner report --format``."""

    html = "html"
    png = "png"


class ShowFormat(StrEnum):
    """``tuner show --format``: a table for people, JSON or CSV for programs."""

    table = "table"
    json = "json"
    csv = "csv"


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


def value(choice: StrEnum | None) -> str | None:
    """The plain string of a choice (``None`` stays ``None``: the spec's value is kept)."""
    return None if choice is None else str(choice.value)


def spec_default(key: str) -> str:
    """How ``--help`` shows the default of a flag that overrides the spec key ``key``."""
    from tuner.core.spec import spec_from_dict

    section, field = key.split(".")
    found = spec_from_dict().to_dict()[section][field]  # the flat keys, lists as lists
    if isinstance(found, bool):
        shown = "on" if found else "off"
    elif found is None:
        shown = "none"
    else:
        shown = ",".join(map(str, found)) if isinstance(found, list) else found
    return f"spec, else {shown}"


StorageOpt = Annotated[
    str,
    typer.Option(
        "--storage",
        envvar="TUNER_STORAGE",
        show_envvar=True,
        callback=storage_from_file,
        help=option("storage").help,
    ),
]
StudyNameOpt = Annotated[
    str | None,
    typer.Option(
        "--study-name",
        help="Name of the study.",
        show_default="the storage's only study",
    ),
]
_CALLBACKS: dict[str, Callable[..., Any]] = {"storage": storage_from_file}
Command = Callable[..., None]


def takes(command: str) -> Callable[[Command], Command]:
    """A command whose flags are ``command``'s rows of the options table, as its signature (Typer
    reads it); its errors name them as flags."""

    def wrap(func: Command) -> Command:
        @functools.wraps(func)
        def run(**flags: Any) -> None:
            with naming(command):
                func(**flags)

        params = [
            inspect.Parameter(row.key, inspect.Parameter.KEYWORD_ONLY, default=_default(row),
                              annotation=_annotation(row))
            for row in options_of(command)
        ]  # fmt: skip
        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return run

    return wrap


def _annotation(row: Option) -> Any:
    """The row's type with its ``typer.Option`` (a list is its comma-separated text)."""
    kind: Any = _choice(row) if row.choices else str if row.kind is tuple else row.kind
    dash = row.flag.removeprefix("--")
    switch = row.kind is bool and row.default is not False and not row.flags
    info = typer.Option(
        *((f"--{dash}/--no-{dash}",) if switch else row.flags or (row.flag,)),
        help=row.help,
        show_default=_shown(row),
        envvar=row.envvar,
        show_envvar=row.envvar is not None,
        callback=_CALLBACKS.get(row.key),
        min=row.minimum,
    )
    return Annotated[kind | None if row.default is None else kind, info]  # type: ignore[valid-type]


def _shown(row: Option) -> str | bool:
    if row.shown is not None:
        return row.shown
    return spec_default(row.spec) if row.spec and row.default is None else True


@functools.cache
def _choice(row: Option) -> type[StrEnum]:
    """The row's choices as an enum: ``--help`` lists them and click refuses any other value."""
    return StrEnum(row.key, {choice.replace("-", "_"): choice for choice in row.choices})  # type: ignore[return-value]


def _default(row: Option) -> Any:
    return _choice(row)(row.default) if row.choices and row.default is not None else row.default


def parsed(kind: type[Options], flags: dict[str, Any]) -> Options:
    """A command's options from its flags (named as the options' fields), choices as strings."""
    given: dict[str, Any] = {
        key: value(flag) if isinstance(flag, StrEnum) else flag for key, flag in flags.items()
    }
    return kind(**given)


def write_json(path: Path, data: dict[str, Any], what: str) -> None:
    """Write ``data`` as JSON, atomically, and say so; an unwritable path is bad input."""
    try:
        atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    say_info(f"{what} written to {path}")
