"""The study spec: what to train and which grid to search, validated (pure).

:func:`spec_from_dict` turns parsed TOML plus CLI overrides into a :class:`StudySpec`, or raises
one :class:`~tuner.core.errors.ConfigError` line.
"""

from __future__ import annotations

from tuner.core.options import LOSS_REDUCTIONS as LOSS_REDUCTIONS
from tuner.core.spec._fields import SHIPPED_MODULE as SHIPPED_MODULE
from tuner.core.spec._fields import check_study_name as check_study_name
from tuner.core.spec._fields import parse_int_list as parse_int_list
from tuner.core.spec._fields import parse_name_list as parse_name_list
from tuner.core.spec._fields import shown_reference as shown_reference
from tuner.core.spec._parse import spec_from_dict as spec_from_dict
from tuner.core.spec._runtime import BACKENDS as BACKENDS
from tuner.core.spec._runtime import DEFAULT_BACKEND as DEFAULT_BACKEND
from tuner.core.spec._spec import BUILTIN_SOURCE as BUILTIN_SOURCE
from tuner.core.spec._spec import DEFAULT_LOSS as DEFAULT_LOSS
from tuner.core.spec._spec import DEFAULT_OPTIMIZER as DEFAULT_OPTIMIZER
from tuner.core.spec._spec import LOOP_KINDS as LOOP_KINDS
from tuner.core.spec._spec import KerasObject as KerasObject
from tuner.core.spec._spec import SearchSpec as SearchSpec
from tuner.core.spec._spec import StudySpec as StudySpec
from tuner.core.spec._spec import WorkloadSpec as WorkloadSpec
from tuner.core.spec._spec import identity_of as identity_of
from tuner.core.spec._spec import keras_class as keras_class
