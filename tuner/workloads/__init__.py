"""Built-in workloads and the loader for ``module:function`` references.

A workload is two callables: ``model()`` returns an uncompiled ``keras.Model`` and ``data()``
returns ``(x_train, y_train, x_val, y_val)`` as NumPy arrays. The built-in ones import Keras inside
their functions, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
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
