"""A model without weights until it sees data (a ``Sequential`` without ``keras.Input``, as
KerasTuner's guide writes it) is built on the first training inputs before its initial weights
are recorded, and every build of the run starts from them (issue 28)."""

from __future__ import annotations

import numpy as np
from child_requests import run_request

from tuner.worker import building
from tuner.worker.session import ModelRecipe, initial_weights

X = np.random.default_rng(0).random((4, 10), dtype=np.float32)


def read(size: int) -> tuple[np.ndarray, np.ndarray]:
    return X[:size], X[:size, :1]


def test_an_unbuilt_sequential_records_its_initial_weights_the_same_every_time() -> None:
    request = run_request(model="tuner_test_workloads:sequential_without_input")
    first = building.FirstInputs(read)
    weights = initial_weights(request, inputs=first)
    again = initial_weights(request, inputs=building.FirstInputs(read))
    assert first.taken
    assert [w.shape for w in weights] == [(10, 32), (32,), (32, 1), (1,)]
    assert all(np.array_equal(a, b) for a, b in zip(weights, again, strict=True))


def test_every_build_of_the_run_starts_from_the_recorded_weights() -> None:
    request = run_request(model="tuner_test_workloads:sequential_without_input")
    first = building.FirstInputs(read)
    weights = initial_weights(request, inputs=first)
    recipe = ModelRecipe(request, None, weights, "float32", inputs=first)
    for _ in range(2):  # each build is a fresh, unbuilt Sequential
        model = recipe.build()
        assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), weights, strict=True))


def test_a_built_model_never_reads_the_inputs() -> None:
    def unread(size: int) -> None:
        raise AssertionError("a built model read the data")

    first = building.FirstInputs(unread)
    weights = initial_weights(run_request(), inputs=first)
    assert weights and not first.taken
    ModelRecipe(run_request(), None, weights, "float32", inputs=first).build()
    assert not first.taken
