"""A hypermodel given as an instance (``e2e.hypermodels:wide_instance``), for the out-of-memory
test of ``test_hypermodel.py``: the function and class forms are searched there with the
workloads of ``tuner_test_workloads``."""

from __future__ import annotations

from typing import Any

import keras_tuner
from tuner_test_workloads import wide_hypermodel


class WideHyperModel(keras_tuner.HyperModel):
    """:func:`tuner_test_workloads.wide_hypermodel` as a ``HyperModel``."""

    def build(self, hp: Any) -> Any:
        return wide_hypermodel(hp)


wide_instance = WideHyperModel()
