"""Typos caught in the driver, in milliseconds, before a child imports TensorFlow: Keras optimizer
and loss names, and ``module:function`` references read from the module's source, never imported
(it may import TensorFlow itself); each one line with the nearest right name."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.core.errors import ConfigError
from tuner.core.keras_names import LOSSES, OPTIMIZERS, nearest
from tuner.core.typos import closest

if TYPE_CHECKING:
    from tuner.core.spec import StudySpec


def check_names(spec: StudySpec) -> None:
    """Raise :class:`ConfigError` for a misspelt optimizer, loss or function of ``spec``."""
    workload = spec.workload
    keras = (
        ("optimizer", workload.optimizer, OPTIMIZERS, True),
        ("loss", workload.loss, LOSSES, False),
    )
    for kind, value, known, ignore_case in keras:
        # A serialized loss or optimizer is Keras's to read: the workload check deserializes it.
        typo = nearest(value, known, ignore_case=ignore_case) if isinstance(value, str) else None
        if typo is not None:
            raise ConfigError(
                f"unknown Keras {kind} {value!r} in {spec.source}; did you mean {typo!r}?"
            )
    for key in ("model", "data", "dataset"):
        reference = getattr(workload, key)
        problem = reference_problem(reference) if reference else None
        if problem is not None:
            raise ConfigError(f"workload.{key} = {reference!r} in {spec.source}: {problem}")


def reference_problem(reference: str) -> str | None:
    """Why a child could not find ``module:function``, or ``None`` (found, or unknowable)."""
    module_name, _, name = reference.partition(":")
    origin = _module_file(module_name)
    if not isinstance(origin, Path):  # why it is not found; None: compiled or frozen, unknowable
        return origin
    names = _top_level_names(origin)
    if names is None or name in names:
        return None
    near = closest(name, sorted(names))
    hint = f"; did you mean {module_name}:{near}?" if near else ""
    return f"{origin.name} defines no {name!r} at its top level{hint}"


def _module_file(module_name: str) -> Path | str | None:
    """The source file of ``module_name`` (found as the child's import system would, without
    importing anything), a line saying it is not found, or ``None`` (no source to read)."""
    # Where a child looks: the current directory, then PYTHONPATH, then site-packages.
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    site = [p for p in sys.path if p and Path(p).is_dir()]
    path: list[str] | None = [os.getcwd(), *extra, *site]
    spec = None
    parts = module_name.split(".")
    for depth, part in enumerate(parts):
        spec = importlib.machinery.PathFinder.find_spec(part, path)
        if spec is None and depth == 0:  # an installed package's own finder (editable installs)
            spec = _installed(part)
        if spec is None:
            found = ".".join(parts[:depth]) or "the current directory or the Python path"
            return f"no module {'.'.join(parts[: depth + 1])!r} (looked in {found})"
        path = list(spec.submodule_search_locations or []) or None
        if path is None and depth < len(parts) - 1:
            return f"{'.'.join(parts[: depth + 1])!r} is a module, not a package"
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _installed(name: str) -> importlib.machinery.ModuleSpec | None:
    """A top-level module found by the import system's other finders (never imported)."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _top_level_names(path: Path) -> set[str] | None:
    """The names a module's source binds at its top level; ``None`` when it may bind others
    (``from x import *``, a module ``__getattr__``) or cannot be parsed (the child will say)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Global):
            names.update(node.names)
    return None if "__getattr__" in names else names
