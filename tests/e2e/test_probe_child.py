"""The probe's children with real training on two CPU replicas: several sizes in one child
without a memory cap, one size per child under one, a fresh child after an out-of-memory or a
death by a signal, on TensorFlow and on JAX. ``tests/e2e/test_oom_study.py`` checks the boundary
a search's probe finds under a cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e.jax_collectives import xla_flags

from tuner.core.devices import DevicePlan
from tuner.core.spec import SearchSpec, StudySpec, WorkloadSpec
from tuner.driver.children._runner import ProcessRunner
from tuner.driver.setup.probing import run_probe

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]
RUNNER = ProcessRunner()


@pytest.fixture(autouse=True)
def workloads_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test workloads on the children's path (the process runner passes PYTHONPATH on)."""
    path = [str(TESTS), str(TESTS / "worker"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))


def _spec(backend: str = "tensorflow") -> StudySpec:
    return StudySpec(
        name="probe",
        workload=WorkloadSpec(
            model="tuner_test_workloads:wide_model",
            data="tuner_test_workloads:wide_data",
            backend=backend,
        ),
        search=SearchSpec.from_flat(
            dict(
                base_batch_size=1024,
                batch_multipliers=(1,),
                lr_rules=("none",),
                base_lr=1e-3,
                epochs=1,
            )
        ),
    )


def _tried(found: dict) -> list[tuple[int, bool]]:
    return [(a["batch"], a["fits"]) for a in found["attempts"]]


def test_a_child_killed_mid_probe_leaves_its_size_infeasible_and_a_fresh_child_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 3072 fits under this cap (test_oom_study), but the child dies by SIGABRT once it has
    # announced it, as a capped oneDNN allocator can.
    monkeypatch.setenv("TUNER_TEST_FAULT", "abort@probe:3072")
    plan = DevicePlan("cpu", 2, memory_limit_bytes=128 * 2**20)
    grid = (1024, 2048, 3072, 4096, 8192)
    found = run_probe(_spec(), plan, 16_384, runner=RUNNER, grid=grid, steps=2)
    # 3072 (killed), then 1024 and 2048 fit: one child each under a cap.
    assert _tried(found) == [(3072, False), (1024, True), (2048, True)], found
    assert "SIGABRT" in found["attempts"][0]["error"]
    assert found["launches"] == 3
    assert (found["largest_fitting_batch"], found["smallest_oom_batch"]) == (2048, 3072)


def test_jax_stops_a_child_at_an_oom_and_goes_on_in_a_fresh_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The wide model trains at 1024 and runs out of memory at 8192 under 224 MiB per device
    # (tests/e2e/test_jax_search.py); the out-of-memory is waited for 10 s.
    monkeypatch.setenv("XLA_FLAGS", xla_flags())
    plan = DevicePlan("cpu", 2, memory_limit_bytes=224 * 2**20, backend="jax")
    found = run_probe(_spec("jax"), plan, 16_384, runner=RUNNER, grid=(1024, 8192, 16384), steps=2)
    # Bisection: 8192 runs out of memory and ends the first child; the second tries 1024.
    assert _tried(found) == [(8192, False), (1024, True)], found
    assert found["launches"] == 2
    assert "memory" in found["attempts"][0]["error"].lower()
    assert (found["largest_fitting_batch"], found["smallest_oom_batch"]) == (1024, 8192)


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_without_a_cap_one_child_tries_several_sizes(backend: str) -> None:
    plan = DevicePlan("cpu", 2, backend=backend)
    found = run_probe(
        _spec(backend), plan, 16_384, runner=RUNNER, grid=(256, 512, 1024, 2048), steps=2
    )
    assert _tried(found) == [(512, True), (1024, True), (2048, True)], found
    assert found["launches"] == 1
    assert found["largest_fitting_batch"] == 2048 and found["smallest_oom_batch"] is None
