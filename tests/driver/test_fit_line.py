"""The lines a search says before any trial about what tuner does not set (issue 45): a KerasTuner
``HyperModel.fit`` override it never calls (the workload check's ``fit_override``), optimizers a
model holds besides its compiled one (the check's ``compile.own_optimizers``)."""

from __future__ import annotations

from tuner.driver.setup.workload_check import fit_line, optimizers_line


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


def test_optimizers_a_model_holds_besides_its_compiled_one_are_said_not_to_be_set() -> None:
    assert optimizers_line("m:f", None) is None
    assert optimizers_line("m:f", {"from_build": True, "loss": None, "optimizer": "Adam"}) is None
    described = {"from_build": True, "optimizer": "RMSprop", "own_optimizers": ["d_optimizer"]}
    assert optimizers_line("m:GAN", described) == (
        "m:GAN's model holds optimizers of its own (d_optimizer), which tuner does not set: "
        "whatever its train_step updates with them trains at the build's learning rates, not the "
        "rule's (the trials store the compiled optimizer's)"
    )
