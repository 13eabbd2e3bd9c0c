"""Where generated example data live: made once, offline, then reused by every trial."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_root() -> Path:
    """``$TUNER_CACHE``, else ``$XDG_CACHE_HOME/tuner``, else ``~/.cache/tuner``."""
    if os.environ.get("TUNER_CACHE"):
        return Path(os.environ["TUNER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tuner"


def generated(name: str, write: Callable[[Path], None]) -> Path:
    """The folder ``name`` in the cache, written by ``write`` on first use.

    ``write`` fills a temporary sibling that is renamed into place, so trials that start at once
    never see half a data set: the first rename wins and the others' copies are dropped.
    """
    target = cache_root() / name
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        write(staging)
        staging.rename(target)
    except OSError:
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
