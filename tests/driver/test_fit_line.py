"""The one line a search says when a KerasTuner ``HyperModel`` overrides ``fit``, which tuner
never calls (issue 45): from the workload check's ``fit_override``."""

from __future__ import annotations

from tuner.driver.setup.workload_check import fit_line


def test_no_line_without_an_override() -> None:
    assert fit_line("m:H", None) is None


def test_the_line_names_the_hyperparameters_the_override_declares() -> None:
    assert fit_line("m:H", ["normalize", "shuffle"]) == (
        "m:H overrides HyperModel.fit, which tuner does not call: trials train with tuner's own "
        "batch size and learning rate, so the hyperparameters it declares (normalize, shuffle) "
        "are not used"
    )


def test_an_override_that_declares_none_is_said_not_to_be_used() -> None:
    assert fit_line("m:H", []) == (
        "m:H overrides HyperModel.fit, which tuner does not call: trials train with tuner's own "
        "batch size and learning rate, so what it sets is not used"
    )
