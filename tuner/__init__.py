"""tuner: measure which global batch size and learning-rate rule to use on several GPUs.

The public API is re-exported here lazily, so ``import tuner`` (and ``tuner --help``) never imports
TensorFlow or Optuna.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from tuner._version import __version__ as __version__

_EXPORTS = {
    "ConfigError": "tuner.core.errors",
    "SearchResult": "tuner.api",
    "DevicePlan": "tuner.core.devices",
    "LrFindResult": "tuner.api",
    "StudySpec": "tuner.core.spec",
    "TrialOutcome": "tuner.core.outcome",
    "TunerError": "tuner.core.errors",
    "classify": "tuner.core.outcome",
    "is_oom_error": "tuner.core.oom",
    "is_probable_oom": "tuner.core.oom",
    "load_recommendation": "tuner.load",
    "load_spec": "tuner.driver.setup.spec_file",
    "load_study": "tuner.api",
    "lr_find": "tuner.api",
    "plan_devices": "tuner.driver.setup.devices",
    "recommend": "tuner.core.recommend",
    "recommendation": "tuner.results",
    "run_search": "tuner.driver.study",
    "scaled_learning_rate": "tuner.core.scaling",
    "search": "tuner.api",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")
