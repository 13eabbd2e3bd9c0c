"""tuner: measure which global batch size and learning-rate rule to use on several GPUs.

The public API is re-exported here lazily, so ``import tuner`` (and ``tuner --help``) never imports
TensorFlow or Optuna.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from tuner._version import __version__ as __version__

_EXPORTS = {
    "ConfigError": "tuner.errors",
    "DevicePlan": "tuner.devices",
    "StudySpec": "tuner.spec",
    "TrialOutcome": "tuner.outcome",
    "TunerError": "tuner.errors",
    "classify": "tuner.outcome",
    "is_oom_error": "tuner.oom",
    "is_probable_oom": "tuner.oom",
    "load_spec": "tuner.spec",
    "load_study": "tuner.study",
    "plan_devices": "tuner.devices",
    "recommend": "tuner.recommend",
    "recommendation": "tuner.study",
    "run_search": "tuner.study",
    "scaled_learning_rate": "tuner.scaling",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")
