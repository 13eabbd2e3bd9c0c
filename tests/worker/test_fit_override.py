"""A ``HyperModel.fit`` override is not called by tuner's trials; the workload check calls it
once with a recording ``hp`` and a stand-in model to name what it declares (issue 45), and
still refuses one that sets ``batch_size``."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.core.errors import WorkloadError
from tuner.worker import hypermodel

X, Y = np.zeros((8, 28, 28), "float32"), np.zeros((8, 10), "float32")


def test_the_guides_fit_override_declares_normalize_and_shuffle() -> None:
    found = hypermodel.check_fit("workloads.keras_tuner_guide:MyHyperModel", X, Y)
    assert found == ["normalize", "shuffle"]


def test_no_override_and_no_hypermodel_say_nothing() -> None:
    assert hypermodel.check_fit("tuner_test_workloads:TunedMLP", X, Y) is None
    assert hypermodel.check_fit("workloads.keras_tuner_guide:build_model", X, Y) is None


def test_an_override_that_sets_batch_size_is_still_refused() -> None:
    with pytest.raises(WorkloadError, match="tuner owns the batch size"):
        hypermodel.check_fit("tuner_test_workloads:BatchSettingMLP", X, Y)
