"""The final-weights comparison of ``tuner validate`` (pure: arrays in, figures out)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tuner.driver.validate.weights import compare, compare_files

NAMES = ["dense/kernel", "dense/bias", "adam/iteration", "adam/dense_kernel_momentum"]


def _run(kernel: float, momentum: float, iteration: int = 10) -> dict[int, np.ndarray]:
    return {
        0: np.full((3, 2), kernel, np.float32),
        1: np.zeros(2, np.float32),
        2: np.array(iteration, np.int64),
        3: np.full((3, 2), momentum, np.float32),
    }


INITIAL = {0: np.full((3, 2), 1.0, np.float32), 1: np.zeros(2, np.float32)}


def test_equal_runs_differ_by_nothing() -> None:
    figures = compare(_run(1.5, 0.2), _run(1.5, 0.2), INITIAL, NAMES, model_variables=2)
    assert figures["compared"] and figures["variables_compared"] == 4
    assert figures["max_relative_difference"] == 0.0


def test_the_difference_is_relative_to_how_far_a_variable_moved() -> None:
    # The kernel moved 0.5 from 1.0; the runs are 0.005 apart: 1 %, though 0.3 % of its value.
    figures = compare(_run(1.5, 0.2), _run(1.505, 0.2), INITIAL, NAMES, model_variables=2)
    assert figures["model_relative_difference"] == pytest.approx(0.005 / 0.505)
    assert figures["optimizer_relative_difference"] == 0.0
    assert figures["largest"][0][0] == "dense/kernel"


def test_doubled_moments_fail_though_the_weights_agree() -> None:
    # The forum answer's replica-mean loss under Adam: the weights hardly differ, the moments 2x.
    figures = compare(_run(1.5, 0.2), _run(1.5, 0.4), INITIAL, NAMES, model_variables=2)
    assert figures["model_relative_difference"] == 0.0
    assert figures["optimizer_relative_difference"] == pytest.approx(0.5)
    assert figures["per_variable"]["adam/dense_kernel_momentum"] == pytest.approx(0.5)


def test_a_step_counter_is_exact_and_nan_is_infinitely_far() -> None:
    counted = compare(_run(1.5, 0.2), _run(1.5, 0.2, iteration=11), INITIAL, NAMES, 2)
    assert math.isinf(counted["optimizer_relative_difference"])
    broken = _run(1.5, 0.2)
    broken[0][0, 0] = np.nan
    assert math.isinf(compare(_run(1.5, 0.2), broken, INITIAL, NAMES, 2)["max_relative_difference"])


def test_runs_with_other_variables_are_not_alike() -> None:
    fewer = {k: v for k, v in _run(1.5, 0.2).items() if k != 3}
    figures = compare(_run(1.5, 0.2), fewer, INITIAL, NAMES, 2)
    assert math.isinf(figures["max_relative_difference"])
    assert "4 variables on one device, 3 on the replicas" in figures["largest"][0][0]


def test_files_round_trip_and_a_missing_file_is_said(tmp_path: Path) -> None:
    one, many = tmp_path / "one.npz", tmp_path / "many.npz"
    np.savez(one, **{"final/0": np.ones(3), "initial/0": np.zeros(3)})
    assert compare_files(one, many, ["w"])["compared"] is False
    np.savez(many, **{"final/0": np.ones(3) * 1.001, "initial/0": np.zeros(3)})
    figures = compare_files(one, many, ["w"])
    assert figures["max_relative_difference"] == pytest.approx(0.001 / 1.001, rel=1e-6)
