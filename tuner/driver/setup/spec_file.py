"""Reading a study spec from its TOML file (validation: :func:`tuner.core.spec.spec_from_dict`)."""

from __future__ import annotations

import codecs
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.options import named
from tuner.core.spec import StudySpec, spec_from_dict


def load_spec(
    path: str | Path | Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> StudySpec:
    """Load a spec from TOML (``None``: the built-in regression workload; a mapping: its tables)
    and apply ``overrides`` (``"section.key"`` to a value; ``None`` ignored); one clear line of
    :class:`ConfigError` if it is wrong."""
    if path is None:
        return spec_from_dict(None, overrides)
    if isinstance(path, Mapping):
        return spec_from_dict(path, overrides, source=API_SOURCE)
    return spec_from_dict(read_toml(Path(path)), overrides, source=str(path))


API_SOURCE = "tuner.search()"
"""How error lines name a spec given as tables (``spec_file`` with the file's path)."""

_UTF8_BOM = codecs.BOM_UTF8
_WIDE_BOMS = (  # UTF-32 first: its little-endian mark begins with UTF-16's
    ("UTF-32", (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)),
    ("UTF-16", (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)),
)


def read_toml(path: Path) -> dict[str, Any]:
    """The tables of the TOML file at ``path``; :class:`ConfigError` if it is missing or not
    TOML. A UTF-8 byte-order mark (which TOML does not allow, but Windows editors write) is
    skipped; a UTF-16 or UTF-32 file is refused naming its encoding."""
    if not path.is_file():
        raise ConfigError(f"spec file {path} does not exist; pass {named('spec')} with a TOML file")
    data = path.read_bytes()
    for encoding, marks in _WIDE_BOMS:
        if data.startswith(marks):
            raise ConfigError(
                f"spec file {path} is not valid TOML: it is {encoding} text; save it as UTF-8"
            )
    try:
        return tomllib.loads(data.removeprefix(_UTF8_BOM).decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"spec file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"spec file {path} is not valid TOML: it is not UTF-8 text") from None
