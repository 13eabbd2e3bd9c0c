"""Reading a study spec from its TOML file; validation is the pure core's
(:func:`tuner.core.spec.spec_from_dict`)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.spec import StudySpec, spec_from_dict


def load_spec(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> StudySpec:
    """Load a spec from TOML (``None``: the built-in regression workload) and apply overrides.

    ``overrides`` maps ``"section.key"`` (e.g. ``"search.epochs"``) to a value; ``None`` values are
    ignored. Raises :class:`ConfigError` with one clear line for a missing or unreadable file or
    any invalid field.
    """
    if path is None:
        return spec_from_dict(None, overrides)
    return spec_from_dict(read_toml(Path(path)), overrides, source=str(path))


def read_toml(path: Path) -> dict[str, Any]:
    """The tables of the TOML file at ``path``; :class:`ConfigError` if it is missing or not
    TOML."""
    if not path.is_file():
        raise ConfigError(f"spec file {path} does not exist; pass --spec with a TOML file")
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"spec file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"spec file {path} is not valid TOML: it is not UTF-8 text") from None
