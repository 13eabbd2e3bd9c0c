"""The user's functions as the ``module:function`` references a trial child imports; one it
cannot import (a notebook cell's, nested, a lambda) is shipped by value: pickled beside a module
that unpickles it, in a folder on the children's ``PYTHONPATH`` named by what it pickles to, so a
second call never replaces the functions a running one's trials import."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tuner.core.errors import ConfigError
from tuner.core.spec import SHIPPED_MODULE
from tuner.files import atomic_write_bytes, atomic_write_text

_LOADER = '''"""Written by tuner.search(): the functions it was given that no process can import,
shipped by value (cloudpickle). One folder per set of functions: never rewritten."""

from pathlib import Path

import cloudpickle

_HERE = Path(__file__).parent
{assignments}
'''


class Shipment:
    """The references of one call's functions, and the folder in ``root`` (the study's) that
    holds the shipped ones, once written."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder: Path | None = None
        self.created = False
        """Whether :meth:`write` made :attr:`folder` (a refused call removes it)."""
        self._shipped: dict[str, Any] = {}

    def reference(self, value: Any, role: str) -> str:
        """``value`` (a function, a ``HyperModel`` object or a ``module:function`` string) as a
        reference; ``role`` (``model``, ``data``, ``dataset``) names it in errors."""
        if isinstance(value, str):
            return value  # checked with the spec, as the TOML's
        if not callable(value) and not hasattr(value, "build"):
            raise ConfigError(
                f"{role}= must be a function (or 'module:function'), got {type(value).__name__}"
            )
        importable = _importable(value)
        if importable is not None:
            return importable
        name = getattr(value, "__name__", None)
        if not isinstance(name, str) or not name.isidentifier() or name in self._shipped:
            name = role  # a lambda, an object, or a second function of that name
        self._shipped[name] = value
        return f"{SHIPPED_MODULE}:{name}"

    @property
    def shipped(self) -> list[str]:
        """The names of the functions shipped by value."""
        return sorted(self._shipped)

    def write(self) -> None:
        """Pickle the shipped functions, beside their loader, into a folder of their own in
        :attr:`root` (the same functions again find it as it is)."""
        if not self._shipped:
            return
        payloads = {name: _pickled(name, value) for name, value in self._shipped.items()}
        digest = hashlib.sha256()
        for name, payload in sorted(payloads.items()):
            digest.update(name.encode() + b"\0" + hashlib.sha256(payload).digest())
        self.folder = self.root / digest.hexdigest()[:16]
        if (self.folder / f"{SHIPPED_MODULE}.py").exists():
            return  # written by an earlier call: never rewritten under a running search
        self.created = not self.folder.exists()
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, payload in payloads.items():
            atomic_write_bytes(self.folder / f"{name}.pkl", payload)
        lines = [
            f'{name} = cloudpickle.loads((_HERE / "{name}.pkl").read_bytes())' for name in payloads
        ]
        loader = _LOADER.format(assignments="\n".join(lines))
        atomic_write_text(self.folder / f"{SHIPPED_MODULE}.py", loader)  # last: the folder is whole

    def discard(self) -> None:
        """Remove the folder :meth:`write` made (the call was refused: nothing of it stays)."""
        if self.created and self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.root.rmdir()  # the study's folder too, when nothing else is in it

    @contextmanager
    def importable(self) -> Iterator[None]:
        """Children started inside this block can import the shipped functions."""
        if not self._shipped or self.folder is None:
            yield
            return
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.folder), before) if p)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = before


def _pickled(name: str, value: Any) -> bytes:
    import cloudpickle

    try:
        return bytes(cloudpickle.dumps(value))
    except Exception as exc:  # what cloudpickle cannot carry (a lock, an open file)
        raise ConfigError(
            f"{name} cannot be shipped to the trial processes ({type(exc).__name__}: "
            f"{exc}); define it in an importable module and pass it from there"
        ) from None


def _importable(value: Any) -> str | None:
    """``module:name`` when a fresh process importing ``module`` finds ``value`` as ``name``."""
    module_name = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None)
    if not module_name or module_name == "__main__" or not isinstance(name, str):
        return None
    if not name.isidentifier():  # nested ("f.<locals>.g"), a lambda, a method
        return None
    try:
        module = importlib.import_module(module_name)
    except Exception:  # not importable here: ship it
        return None
    return f"{module_name}:{name}" if getattr(module, name, None) is value else None
