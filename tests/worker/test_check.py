"""The workload check (mode ``inspect``) in this process, on one CPU: what it reports, and the one
line it raises for each mistake a user makes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from child_requests import inspect_request

from tuner.core.errors import WorkloadError
from tuner.worker.check import check_workload

MODEL = "tuner.workloads.regression:build_model"
DATA = "tuner_test_workloads:small_regression_data"
HERE = __name__


def three_arrays() -> tuple[np.ndarray, ...]:
    return (np.zeros((4, 10)), np.zeros((4, 1)), np.zeros((2, 10)))


def empty_validation() -> tuple[np.ndarray, ...]:
    return (np.zeros((4, 10)), np.zeros((4, 1)), np.zeros((0, 10)), np.zeros((0, 1)))


def unpaired() -> tuple[np.ndarray, ...]:
    return (np.zeros((4, 10)), np.zeros((3, 1)), np.zeros((2, 10)), np.zeros((2, 1)))


def request(**changes: Any) -> Any:
    return inspect_request(**{"model": MODEL, "data": DATA, **changes})


def test_a_good_workload_reports_its_sizes() -> None:
    result = check_workload(request())
    assert (result["n_train"], result["n_val"], result["input_shape"]) == (4096, 1024, [10])
    assert result["parameters"] == 10 * 64 + 64 + 64 * 32 + 32 + 32 + 1
    assert (result["hypermodel"], result["compiled_by_build"]) == (None, False)
    assert set(result["versions"]) == {"tensorflow", "keras"}


def test_a_compiled_hypermodel_is_reported_as_such() -> None:
    result = check_workload(request(model="tuner_test_workloads:compiled_mlp"))
    assert result["compiled_by_build"] is True
    names = {entry["config"]["name"] for entry in result["hypermodel"]["space"]}
    assert names >= {"units", "activation", "dropout", "rate"}  # "rate": behind dropout = True


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {"data": "tuner_test_workloads:raising_data"},
            "tuner_test_workloads:raising_data raised FileNotFoundError: no such file",
        ),
        ({"data": f"{HERE}:three_arrays"}, "must return (x_train, y_train, x_val, y_val)"),
        ({"data": f"{HERE}:empty_validation"}, "empty_validation: x_val is empty"),
        ({"data": f"{HERE}:unpaired"}, "x and y have different numbers of samples"),
        ({"data": "no_such_module:data"}, "cannot import 'no_such_module'"),
        ({"loss": "msee"}, "unknown Keras loss 'msee'"),
        ({"optimizer": "adamm"}, "unknown Keras optimizer 'adamm'"),
        (
            {"data": "tuner_test_workloads:mismatched_data"},
            f"model {MODEL} does not fit data tuner_test_workloads:mismatched_data "
            "(x (7,), y (1,)): ",
        ),
        (
            {"optimizer": "sgd", "lr_rules": ["sqrt-adam"], "max_ratio": 2},
            "the optimizer is SGD: ",
        ),
        (
            {
                "model": "tuner_test_workloads:compiled_mlp",
                "lr_rules": ["sqrt-adam"],
                "max_ratio": 2,
            },
            "tuner_test_workloads:compiled_mlp compiles a SGD: ",
        ),
        (
            {"model": "tuner_test_workloads:compiled_mlp", "loop": "custom"},
            "compiles its model; a compiled model runs with loop = fit",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_it(changes: dict[str, Any], line: str) -> None:
    with pytest.raises(WorkloadError) as raised:
        check_workload(request(**changes))
    message = str(raised.value)
    assert line in message and "\n" not in message


def test_sqrt_adam_beyond_its_range_names_the_ratio() -> None:
    with pytest.raises(WorkloadError, match=r"^the optimizer is Adam: .* at 16x the base batch"):
        check_workload(request(lr_rules=["none", "sqrt-adam"], max_ratio=16))


MAE_ONLY = "tuner_test_workloads:mae_only_evaluation_model"
VAE = {"model": "tuner_test_workloads:vae_model", "data": "tuner_test_workloads:vae_digits"}


def test_an_evaluation_without_the_objective_lists_what_it_reports() -> None:
    # A test_step that reports metrics and no loss: one line naming the objective to set,
    # before any trial (each would end with a bare KeyError: 'loss').
    with pytest.raises(WorkloadError) as raised:
        check_workload(request(model=MAE_ONLY, loss=None))
    assert str(raised.value) == (
        f"model {MAE_ONLY}: the evaluation reports mae, not loss: "
        'set [workload] objective = "val_mae"'
    )
    assert check_workload(request(model=MAE_ONLY, loss=None, objective="val_mae"))["parameters"]


def test_a_model_that_trains_but_cannot_evaluate_is_told_apart_from_one_that_does_not_fit() -> None:
    # keras-io's VAE: its loss lives in train_step, compile names none, evaluate cannot run.
    with pytest.raises(WorkloadError) as raised:
        check_workload(request(**VAE, loss=None))
    message = str(raised.value)
    assert message.startswith(
        f"model {VAE['model']} trains on data {VAE['data']}, but its evaluation fails: "
    )
    assert "override test_step" in message and "does not fit" not in message
    assert 'set [workload] objective = "loss" to compare trials by their training loss' in message
    assert "cannot show overfitting" in message and "\n" not in message
    # The training loss as the objective: the check passes, the parts' weights counted.
    assert check_workload(request(**VAE, loss=None, objective="loss"))["parameters"] > 0
