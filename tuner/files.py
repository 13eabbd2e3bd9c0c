"""Writing files: refuse at once an output that cannot be written (:func:`check_output`), and
write so that a reader never sees half of one (a sibling, then a rename)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tuner.core.errors import ConfigError


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename; creates parent folders. Raises ``OSError``."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one rename; creates parent folders. Raises ``OSError``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def check_output(path: Path, flag: str) -> None:
    """Refuse, before any work is done, an output file that cannot be written: a folder, or a
    path whose folder is missing, is not a folder, or may not be written to."""
    folder = path.parent
    if path.is_dir():
        raise ConfigError(f"{flag} {path} is a directory; give a file name")
    if not folder.exists():
        raise ConfigError(f"{flag} {path}: folder {folder} does not exist; create it first")
    if not folder.is_dir():
        raise ConfigError(f"{flag} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: folder {folder} is not writable")
