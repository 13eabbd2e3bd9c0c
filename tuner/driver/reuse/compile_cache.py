"""Compile once: XLA's persistent compilation cache shared by a storage's JAX children (its key
hashes the program, options, devices and JAX's version: a changed model never reads a stale
entry). Under TensorFlow nothing is cached: ``fit`` under ``MirroredStrategy`` does not compile
with XLA (measured: the persistent XLA cache stays empty).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tuner.storage.places import locate

CACHE_ENV = "TUNER_COMPILE_CACHE"
"""``0`` turns the cache off; a path puts it there."""
MAX_BYTES = 1 << 30
"""The cache's bound (1 GiB): JAX evicts the least recently used entries past it."""
FOLDER = "xla-cache"


def cache_folder(storage_url: str) -> Path | None:
    """Where a storage's children cache compiled programs: ``xla-cache`` beside its file, else
    under ``~/.cache/tuner``; ``TUNER_COMPILE_CACHE`` overrides (``0``: no cache)."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen == "0":
        return None
    if chosen:
        return Path(chosen)
    place = locate(storage_url)
    if place.path is not None:
        return place.path.parent / FOLDER
    return Path.home() / ".cache" / "tuner" / FOLDER


def environment(folder: Path) -> dict[str, str]:
    """The variables that make a JAX child read and write ``folder``: every compiled program is
    kept (a small one costs a CPU child a second too), the whole bounded by :data:`MAX_BYTES`."""
    return {
        "JAX_COMPILATION_CACHE_DIR": str(folder),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        "JAX_COMPILATION_CACHE_MAX_SIZE": str(MAX_BYTES),
    }


@contextmanager
def activated(storage_url: str, backend: str, note: Callable[[str], None]) -> Iterator[None]:
    """Children started inside this block share the storage's cache (JAX only), said once."""
    folder = cache_folder(storage_url) if backend == "jax" else None
    if folder is None:
        yield
        return
    held = sum(e.stat().st_size for e in folder.iterdir() if e.is_file()) if folder.is_dir() else 0
    note(
        f"compiled programs cached in {folder} ({held / 2**20:.1f} MiB of "
        f"{MAX_BYTES / 2**30:.0f} GiB): seeds, repeats and resumes compile once"
    )
    before = {key: os.environ.get(key) for key in environment(folder)}
    os.environ.update(environment(folder))
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
