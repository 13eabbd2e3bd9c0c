"""The workload check's measurement step (issue 28, part 4): one step of the gradient noise meter
on the first batch where the trials will measure it. Where the meter cannot measure, the check
passes and says why (``noise_scale_skipped``), never a refusal (in this process, one CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from child_requests import inspect_request

from tuner.core.errors import WorkloadError
from tuner.worker import backends
from tuner.worker.check import check_workload
from tuner.worker.noise import HIDDEN_LOSS

TESTS = Path(__file__).resolve().parents[1]
GUIDE = "guide_hidden_loss"
REGRESSION = (
    "tuner.workloads.regression:build_model",
    "tuner_test_workloads:small_regression_data",
)


def guide(**changes: Any) -> Any:
    """The guide's lower-level custom ``train_step``, compiled with an optimizer only."""
    fields = {"model": f"{GUIDE}:build_model", "data": f"{GUIDE}:load_data"}
    return inspect_request(**{**fields, "loss": None, "optimizer": None, **changes})


def test_a_train_step_that_hides_its_loss_is_warned_not_refused() -> None:
    result = check_workload(guide())
    assert result["noise_scale_skipped"] == HIDDEN_LOSS
    assert result["compile"]["loss"] is None  # it trains on its own loss, as in the guide
    assert result["n_train"] == 1024


def test_a_custom_loop_refuses_a_model_whose_train_step_it_would_never_run() -> None:
    """An uncompiled model with its own ``train_step``: the custom loops train on
    ``compute_loss`` (the spec's loss) and would silently skip the user's step."""
    request = guide(model=f"{GUIDE}:uncompiled_model", loss="mse", optimizer="adam")
    assert check_workload(request)["compiled_by_build"] is False  # fit runs it: fine
    with pytest.raises(WorkloadError, match="has its own train_step, which the custom loops"):
        check_workload(guide(model=f"{GUIDE}:uncompiled_model", loss="mse", loop="custom"))


def test_nothing_is_said_when_the_noise_scale_is_off() -> None:
    assert "noise_scale_skipped" not in check_workload(guide(noise_scale=False))


def test_a_normal_model_is_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[float] = []
    tensorflow = backends.load("tensorflow")
    measure = tensorflow.measure_noise_once

    def counted(model: Any, batch: tuple[Any, ...], samples: int) -> None:
        steps.append(samples)
        measure(model, batch, samples)

    monkeypatch.setattr(tensorflow, "measure_noise_once", counted)
    model, data = REGRESSION
    result = check_workload(inspect_request(model=model, data=data))
    assert "noise_scale_skipped" not in result
    assert steps == [8]  # one step, on the samples the training step took


def test_a_measurement_step_that_raises_is_the_reason_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keras's own line, its name once, without the call frame around it."""

    def failing(model: Any, batch: tuple[Any, ...], samples: int) -> None:
        raise ValueError(
            "Exception encountered when calling Dense.call().\n\n"
            "ValueError: target and output must have the same rank\n\n"
            "Arguments received by Dense.call():\n  • inputs=tf.Tensor(shape=(8, 10))"
        )

    monkeypatch.setattr(backends.load("tensorflow"), "measure_noise_once", failing)
    model, data = REGRESSION
    result = check_workload(inspect_request(model=model, data=data))
    assert result["noise_scale_skipped"] == (
        "the noise meter failed: ValueError: target and output must have the same rank"
    )


def test_loops_without_the_meter_take_no_measurement_step(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: Any) -> None:
        raise AssertionError("the meter is not run in a loop that does not measure")

    monkeypatch.setattr(backends.load("tensorflow"), "measure_noise_once", never)
    model, data = REGRESSION
    assert "noise_scale_skipped" not in check_workload(
        inspect_request(model=model, data=data, loop="cpu-update")
    )


JAX_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from child_requests import inspect_request
from tuner.worker import backends
from tuner.worker.check import check_workload

jax_backend = backends.load("jax")
measure, steps = jax_backend.measure_noise_once, []
def counted(model, batch, samples):
    steps.append(samples)
    measure(model, batch, samples)
jax_backend.measure_noise_once = counted
forms = "e2e.keras_forms"
result = check_workload(inspect_request(
    model=forms + ":dict_arrays_model", data=forms + ":dict_arrays_data", backend="jax"))
print(json.dumps({{"skipped": result.get("noise_scale_skipped"), "steps": steps}}))
"""


@pytest.mark.slow
def test_jax_takes_the_measurement_step_on_dicts_of_arrays() -> None:
    """Keras on JAX: the meter's step (two shards of the first samples) on the functional-API
    guide's named inputs and output, as dicts of arrays; measured, nothing to say."""
    from jax_child import run_jax

    out = run_jax(JAX_SCRIPT.format(tests=str(TESTS)))
    assert out == {"skipped": None, "steps": [8]}
