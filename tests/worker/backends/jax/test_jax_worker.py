"""The JAX worker's pure parts, without Keras on JAX: input forms and re-batching, the exact
evaluation of a validation set that does not split over the devices, the memory cap, the backend
choice, and which modules stay free of TensorFlow."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from child_requests import inspect_request, run_request, workload

from tuner.core.errors import WorkloadError
from tuner.worker.backends import backend_name
from tuner.worker.backends.jax import _devices as jax_devices
from tuner.worker.backends.jax import _inputs as jax_inputs
from tuner.worker.sources import ARRAYS, ITERABLES, Source

WORKER = Path(jax_inputs.__file__).parents[2]


def _arrays_source(n: int = 10) -> Source:
    x = np.arange(n, dtype=np.float32)[:, None]
    return Source(ARRAYS, "m:data", train=(x, x * 2), val=(x, x * 2), train_size=n, shuffle=True)


def test_arrays_are_reshuffled_every_pass_from_the_seed_and_the_remainder_dropped() -> None:
    stream = jax_inputs.train_batches(_arrays_source(10), 4, seed=3)
    passes = [[next(stream) for _ in range(2)] for _ in range(2)]  # 10 // 4 = 2 batches a pass
    for batches in passes:
        seen = np.concatenate([x[:, 0] for x, _ in batches])
        assert len(set(seen)) == 8 and all(np.array_equal(y, x * 2) for x, y in batches)
    assert not np.array_equal(passes[0][0][0], passes[1][0][0])
    again = jax_inputs.train_batches(_arrays_source(10), 4, seed=3)
    assert np.array_equal(next(again)[0], passes[0][0][0])


def test_batches_are_recut_at_the_global_batch_in_the_users_order() -> None:
    batches = [(np.arange(i, i + 3), np.arange(i, i + 3)) for i in range(0, 9, 3)]
    stream = jax_inputs.rebatch(lambda: iter(batches), 4, repeat=True)
    got = [next(stream)[0].tolist() for _ in range(3)]
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]  # 9 per pass: 8 used, 1 dropped
    once = jax_inputs.rebatch(lambda: iter(batches), 4, repeat=False, drop_remainder=False)
    assert [len(b[0]) for b in once] == [4, 4, 1]


def test_structured_batches_are_joined_per_array() -> None:
    batches = [({"a": np.ones((2, 3)), "b": np.zeros(2)}, np.arange(2)) for _ in range(3)]
    source = Source(ITERABLES, "m:data", val=lambda: iter(batches))
    x, y = jax_inputs.val_arrays(source, val_samples=5)
    assert (x["a"].shape, x["b"].shape, y.tolist()) == ((5, 3), (5,), [0, 1, 0, 1, 0])


def test_lists_pydatasets_and_one_shot_iterators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2]))  # jax_test_workloads
    listed = jax_inputs.load_source(workload(data="jax_test_workloads:iterable_data"))
    assert (listed.form, listed.train_size, listed.val_size) == ("iterables", 1024, 256)
    py = jax_inputs.load_source(workload(data="jax_test_workloads:pydataset_data"))
    assert (py.form, py.train_size, py.rebatched) == (
        "pydatasets",
        1024,
        True,
    )  # len() batches, first and last read
    x, y = jax_inputs.first_batch(py, "train", 100)
    assert x.shape == (100, 10) and y.shape == (100, 1)
    with pytest.raises(WorkloadError, match=r"one-shot iterator .*give a list of batches"):
        jax_inputs.load_source(workload(data="jax_test_workloads:generator_data"))
    with pytest.raises(WorkloadError, match="dataset function, TensorFlow's pattern"):
        jax_inputs.load_source(workload(data=None, dataset="m:fn"))


class _Model:
    """Records the batches ``evaluate`` saw; its loss is the mean of ``x``."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def evaluate(self, x: Any, y: Any, sample_weight: Any, batch_size: int, **_: Any) -> Any:
        assert len(x) % 2 == 0  # what DataParallel on two devices needs
        self.sizes.append(len(x))
        return {"loss": float(np.mean(x)), "accuracy": float(np.mean(x > 2))}


def test_a_validation_set_that_does_not_split_is_evaluated_exactly() -> None:
    from tuner.worker.backends.jax._session import evaluate_exactly

    x = np.arange(7, dtype=np.float64)
    model = _Model()
    logs: dict[str, float] = {}
    assert evaluate_exactly(model, (x, x), batch=4, replicas=2, logs=logs) == pytest.approx(3.0)
    assert model.sizes == [6, 2]  # six as they are, the seventh twice
    # The compiled metrics weighed alike: 4 of the 7 samples are above 2.
    assert logs == {"loss": pytest.approx(3.0), "accuracy": pytest.approx(4 / 7)}


def test_the_memory_cap_is_read_from_the_environment() -> None:
    assert jax_devices.apply_memory_cap({}) is None
    assert jax_devices.address_space_bytes() > 0


def test_the_backend_comes_from_the_request() -> None:
    assert backend_name(run_request(backend="jax")) == "jax"
    assert backend_name(inspect_request()) == "tensorflow"  # the spec's default
    with pytest.raises(ValueError, match="unknown backend 'torch'"):
        backend_name(inspect_request(backend="torch"))


NEUTRAL = (
    "trial",
    "probe",
    "validate",
    "determinism",
    "check",
    "session",
    "meters",
    "callbacks",
    "sources",
)
JAX = (
    "backends/jax/__init__",
    "backends/jax/_session",
    "backends/jax/_loop",
    "backends/jax/_inputs",
)


@pytest.mark.parametrize("name", [*NEUTRAL, "backends/__init__", *JAX])
def test_the_jax_path_imports_no_tensorflow_at_module_level(name: str) -> None:
    tree = ast.parse((WORKER / f"{name}.py").read_text())
    imported = [
        alias.name if isinstance(node, ast.Import) else f"{node.module}"
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [
        m for m in imported if m.startswith(("tensorflow", "tuner.worker.backends.tensorflow"))
    ]
