"""The study spec: what to train and which grid to search, validated (pure).

:func:`spec_from_dict` turns parsed TOML plus CLI overrides into a :class:`StudySpec`, or raises
one :class:`~tuner.core.errors.ConfigError` line.
"""

from __future__ import annotations

from tuner.core.options import LOSS_REDUCTIONS, MODEL_HYPERPARAMETERS
from tuner.core.spec._fields import check_study_name, parse_int_list, parse_name_list
from tuner.core.spec._parse import spec_from_dict
from tuner.core.spec._runtime import BACKENDS, DEFAULT_BACKEND
from tuner.core.spec._spec import (
    BUILTIN_SOURCE,
    DEFAULT_LOSS,
    DEFAULT_OPTIMIZER,
    LOOP_KINDS,
    KerasObject,
    SearchSpec,
    StudySpec,
    WorkloadSpec,
    identity_of,
    keras_class,
)

__all__ = [
    "BACKENDS",
    "BUILTIN_SOURCE",
    "DEFAULT_BACKEND",
    "DEFAULT_LOSS",
    "DEFAULT_OPTIMIZER",
    "LOOP_KINDS",
    "LOSS_REDUCTIONS",
    "MODEL_HYPERPARAMETERS",
    "KerasObject",
    "SearchSpec",
    "StudySpec",
    "WorkloadSpec",
    "check_study_name",
    "identity_of",
    "keras_class",
    "parse_int_list",
    "parse_name_list",
    "spec_from_dict",
]
