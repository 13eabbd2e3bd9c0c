"""The workload check (in this process, on one CPU) finds NaN and inf in the data it reads: it
names each array (``x``, ``y``, a feature by its key) and counts the values, per split."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from child_requests import inspect_request

from tuner.core.errors import WorkloadError
from tuner.worker.check import SCAN_SAMPLES, check_workload, named_arrays, non_finite_count

MODEL = "tuner.workloads.regression:build_model"
HERE = __name__


def request(data: str, model: str = MODEL, **workload: Any) -> Any:
    return inspect_request(model=model, data=data, **workload)


def inf_past_the_first_batch() -> tuple[np.ndarray, ...]:
    """Finite first 8 samples; inf in x of samples 100-101 (2 × 10 values) and NaN in y of the
    first 3 validation samples."""
    rng = np.random.default_rng(0)
    x, y = rng.random((512, 10)), rng.random((512, 1))
    xv, yv = rng.random((64, 10)), rng.random((64, 1))
    x[100:102] = np.inf
    yv[:3] = np.nan
    return x, y, xv, yv


def test_all_nan_labels_are_refused_with_the_array_and_the_count() -> None:
    with pytest.raises(WorkloadError) as raised:
        check_workload(request("tuner_test_workloads:nan_label_data"))
    message = str(raised.value)
    assert message.startswith("tuner_test_workloads:nan_label_data: NaN or inf in y (")
    assert f"{SCAN_SAMPLES} of {SCAN_SAMPLES} values in train)" in message
    assert "in x" not in message and "in val" not in message


def test_values_past_the_first_batch_are_counted_per_array_and_split() -> None:
    with pytest.raises(WorkloadError) as raised:
        check_workload(request(f"{HERE}:inf_past_the_first_batch"))
    message = str(raised.value)
    assert "NaN or inf in x (20 of 2,560 values in train); in y (3 of 64 values in val)" in message


def test_a_dict_feature_is_named_by_its_key() -> None:
    with pytest.raises(WorkloadError) as raised:
        check_workload(
            request(
                "tuner_test_workloads:dict_feature_datasets",
                model="tuner_test_workloads:dict_feature_model",
            )
        )
    assert "NaN or inf in b (8 of 768 values in train)" in str(raised.value)


def test_finite_dict_features_pass_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorflow as tf
    import tuner_test_workloads as workloads

    original = workloads.dict_feature_datasets

    def finite() -> tuple[Any, Any]:
        train, val = original()
        return train.map(lambda f, y: ({"a": f["a"], "b": tf.minimum(f["b"], 1.0)}, y)), val

    monkeypatch.setattr(workloads, "dict_feature_datasets", finite)
    result = check_workload(
        request(
            "tuner_test_workloads:dict_feature_datasets",
            model="tuner_test_workloads:dict_feature_model",
        )
    )
    assert result["input_shape"] == {"a": [10], "b": [3]}


def test_arrays_are_named_through_nested_features() -> None:
    batch = ({"a": np.zeros((2, 3)), "b": (np.ones(2), np.ones(2))}, np.zeros(2), np.ones(2))
    assert [name for name, _ in named_arrays(batch)] == ["a", "b[0]", "b[1]", "y", "sample_weight"]


def test_only_floating_data_can_hold_nan_or_inf() -> None:
    assert non_finite_count(np.array([1.0, np.nan, -np.inf, 2.0])) == 2
    assert non_finite_count(np.array([1, 2, 3])) == 0
    assert non_finite_count(np.array([b"a", b"b"])) == 0
