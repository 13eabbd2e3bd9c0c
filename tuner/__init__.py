"""tuner: measure which global batch size and learning-rate rule to use on several GPUs. The API
is re-exported lazily: ``import tuner`` (and ``tuner --help``) never imports TensorFlow or Optuna.
"""

# Private names: ``tuner.<TAB>`` in Jupyter offered ``import_module`` beside the API.
from importlib import import_module as _import_module
from typing import Any as _Any

from tuner._version import __version__ as __version__

_EXPORTS = {
    "ConfigError": "tuner.core.errors",
    "LrFindResult": "tuner.api",
    "SearchResult": "tuner.api",
    "TunerError": "tuner.core.errors",
    "load_recommendation": "tuner.load",
    "load_study": "tuner.api",
    "lr_find": "tuner.api",
    "search": "tuner.api",
}
"""The documented API (docs/guide/python.md) and nothing else."""

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> _Any:
    if name in _EXPORTS:
        return getattr(_import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names for ``dir(tuner)`` and completion: the lazy exports are not in the
    module's namespace until first used."""
    return list(__all__)
