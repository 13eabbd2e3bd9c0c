"""A ``HyperModel.fit`` override is not called by tuner's trials; the workload check calls it
once with a recording ``hp`` and a stand-in model to name what it declares (issue 45),
``batch_size`` too: tuner searches the batch itself."""

from __future__ import annotations

import numpy as np

from tuner.worker import hypermodel

X, Y = np.zeros((8, 28, 28), "float32"), np.zeros((8, 10), "float32")


def test_the_guides_fit_override_declares_normalize_and_shuffle() -> None:
    found = hypermodel.check_fit("workloads.keras_tuner_guide:MyHyperModel", X, Y)
    assert found == ["normalize", "shuffle"]


def test_no_override_and_no_hypermodel_say_nothing() -> None:
    assert hypermodel.check_fit("tuner_test_workloads:TunedMLP", X, Y) is None
    assert hypermodel.check_fit("workloads.keras_tuner_guide:build_model", X, Y) is None


def test_an_override_that_tunes_batch_size_is_named_not_refused() -> None:
    # KerasTuner's way of tuning the batch: tuner searches the batch itself, so it is unused.
    assert hypermodel.check_fit("tuner_test_workloads:BatchSettingMLP", X, Y) == ["batch_size"]
