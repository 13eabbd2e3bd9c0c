"""Inside the child: check a workload once, on one CPU, before any trial runs (mode ``inspect``).

Catches what would otherwise fail every trial — imports, shapes, loss and optimizer names, a
learning-rate rule the optimizer cannot take, a compiled model asked to run a custom loop — and
reports the workload's sizes for the driver's plan.
"""

from __future__ import annotations

from typing import Any

from tuner.core.errors import WorkloadError
from tuner.core.hyperparams import check, defaults
from tuner.core.scaling import optimizer_settings
from tuner.worker import hypermodel
from tuner.worker.workload import (
    Arrays,
    check_loss,
    framework_versions,
    load_arrays,
    make_optimizer,
)

SAMPLES = 8
"""How many examples the check evaluates: enough to show a shape mismatch, cheap on any model."""

CHECK_LR = 1e-3
"""The learning rate of the check's optimizer; the check never trains, so any rate does."""


def check_workload(request: dict[str, Any]) -> dict[str, Any]:
    """Load the data, build and compile the model, evaluate a few samples; the workload's sizes.

    Raises :class:`WorkloadError` with one line that names what to fix.
    """
    workload = request["workload"]
    arrays = load_arrays(workload["data"])
    x_train, y_train = arrays[0][:SAMPLES], arrays[1][:SAMPLES]
    found = hypermodel.discover(workload["model"])
    hypermodel.check_fit(workload["model"], x_train, y_train)
    model, optimizer, compiled_by_build = _compiled_model(workload, found)
    if "sqrt-adam" in request.get("lr_rules", []):
        _check_sqrt_adam(request, optimizer, compiled_by_build)
    if compiled_by_build and request.get("loop", "fit") != "fit":
        raise WorkloadError(
            f"{workload['model']} compiles its model; a compiled model runs with loop = fit "
            "(the custom loops take the loss from the spec)"
        )
    _check_fits_data(model, workload, arrays)
    return {
        "status": "ok",
        "n_train": int(arrays[0].shape[0]),
        "n_val": int(arrays[2].shape[0]),
        "input_shape": list(arrays[0].shape[1:]),
        "parameters": int(model.count_params()),
        "versions": framework_versions(),
        "hypermodel": found,
        "compiled_by_build": compiled_by_build,
    }


def _compiled_model(
    workload: dict[str, Any], found: dict[str, Any] | None
) -> tuple[Any, Any, bool]:
    """The model (a hypermodel at its defaults), compiled by the user's build or with the spec's
    optimizer and loss; its optimizer; whether the user's build compiled it."""
    values = None
    if found is not None:
        check(found["space"])
        values = defaults(found["space"])
    model = hypermodel.build(workload["model"], values)
    compiled = hypermodel.compile_args(model, CHECK_LR)
    if compiled is not None:
        return model, compiled["optimizer"], True
    check_loss(workload["loss"])
    optimizer = make_optimizer(workload["optimizer"], CHECK_LR)
    model.compile(optimizer=optimizer, loss=workload["loss"])
    return model, optimizer, False


def _check_sqrt_adam(request: dict[str, Any], optimizer: Any, compiled_by_build: bool) -> None:
    """The optimizer must have Adam's moments, at every ratio of the grid."""
    try:
        optimizer_settings("sqrt-adam", float(request["max_ratio"]), optimizer.get_config())
    except ValueError as exc:
        model = request["workload"]["model"]
        where = f"{model} compiles a" if compiled_by_build else "the optimizer is"
        raise WorkloadError(f"{where} {type(optimizer).__name__}: {exc}") from None


def _check_fits_data(model: Any, workload: dict[str, Any], arrays: Arrays) -> None:
    """Evaluate a few training and validation samples; a failure is a model/data mismatch."""
    x_train, y_train, x_val, y_val = (array[:SAMPLES] for array in arrays)
    try:
        model.evaluate(x_train, y_train, verbose=0)
        model.evaluate(x_val, y_val, verbose=0)
    except Exception as exc:  # whatever evaluate raises here, the shapes disagree
        raise WorkloadError(
            f"model {workload['model']} does not fit data {workload['data']} "
            f"(x {arrays[0].shape[1:]}, y {arrays[1].shape[1:]}): {type(exc).__name__}: "
            f"{_first_line(str(exc))}"
        ) from exc


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else ""
