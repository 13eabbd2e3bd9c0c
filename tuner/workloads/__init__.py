"""Built-in workloads, the loader for ``module:function`` references, and the cache where
generated example data live (made once, offline, then reused by every trial). The built-in
workloads import Keras inside their functions, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.core.errors import WorkloadError


def resolve(reference: str, *, allow_hypermodel: bool = False) -> Callable[..., Any]:
    """Import ``module:function`` and return the callable; :class:`WorkloadError` if it can't.
    With ``allow_hypermodel`` a KerasTuner ``HyperModel`` object (not callable) is accepted too."""
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is the user's module failing
        raise WorkloadError(
            f"cannot import {module_name!r} for {reference!r}: {type(exc).__name__}: {exc}"
        ) from exc
    except SystemExit as exc:  # else the child dies and TensorFlow's last log line is all we see
        code = 0 if exc.code is None else exc.code  # sys.exit(), sys.exit(7), sys.exit("why")
        raise WorkloadError(
            f"module {module_name!r} exited with code {code!r} while importing ({reference!r})"
        ) from None
    target = getattr(module, attribute, None)
    if target is None:
        raise WorkloadError(
            f"module {module_name!r} has no attribute {attribute!r} ({reference!r})"
        )
    if not callable(target) and not (allow_hypermodel and hasattr(target, "build")):
        raise WorkloadError(f"{reference!r} is not callable")
    return target


def cache_root() -> Path:
    """``$TUNER_CACHE``, else ``$XDG_CACHE_HOME/tuner``, else ``~/.cache/tuner``."""
    if os.environ.get("TUNER_CACHE"):
        return Path(os.environ["TUNER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tuner"


def generated(name: str, write: Callable[[Path], None]) -> Path:
    """The folder ``name`` in the cache, written by ``write`` on first use into a sibling renamed
    into place: trials that start at once never see half a data set (the first rename wins)."""
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
