"""Real children on Keras's JAX backend (two host CPU devices): trials, a probe, a validation
run and the workload check run without TensorFlow; precision on both backends; an over-cap batch
is an out-of-memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from child_requests import inspect_request, run_request

from tuner.core.devices import DevicePlan
from tuner.core.protocol import decode_result, encode_request
from tuner.driver.children._runner import run_child

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]

# Runs each request in this one process, as the child's main does, then names the TensorFlow
# modules the process ended up with.
IN_PROCESS = """
import json, sys
from tuner.core.protocol import decode_request
from tuner.worker.__main__ import runners
requests = [decode_request(text) for text in json.loads(sys.argv[1])]
modes = runners("jax")
results = [modes.answer(r, lambda event: None) for r in requests]
flat = [{"status": r.status, "error": r.error, **r.payload} for r in results]
print("RESULTS " + json.dumps(flat, default=str))
print("TF " + json.dumps(sorted(m for m in sys.modules if m.startswith("tensorflow"))))
"""


def _plan(backend: str, memory_limit: int | None = None) -> DevicePlan:
    return DevicePlan("cpu", 2, memory_limit_bytes=memory_limit, backend=backend)


def _python_path() -> str:
    path = [str(TESTS), str(TESTS / "worker"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in path if p)


def _env(plan: DevicePlan) -> dict[str, str]:
    return {**plan.child_environment(), "PYTHONPATH": _python_path()}


@pytest.fixture
def workloads_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test workloads on the path of children started by ``run_child`` (it builds their
    PYTHONPATH from this process's)."""
    monkeypatch.setenv("PYTHONPATH", _python_path())


def _request(backend: str = "jax", mode: str = "trial", **fields: Any) -> Any:
    """A request of ``mode`` on ``backend`` (the iterable test data unless ``workload`` says)."""
    given = {"data": "jax_test_workloads:iterable_data", "backend": backend}
    given.update(fields.pop("workload", {}))
    if mode == "inspect":
        return inspect_request(**given, **fields)
    return run_request(mode, plan=_plan(backend), **given, **fields)


def _flat(text: str | None) -> dict[str, Any]:
    """A child's result with its status and error beside the payload's fields."""
    result = decode_result(text or "")
    return {"status": result.status, "error": result.error, **result.payload}


def test_jax_runs_every_mode_and_input_form_without_tensorflow() -> None:
    arrays = {"data": "tuner_test_workloads:small_regression_data"}
    requests = [
        _request(workload=arrays, noise_scale=True),
        _request(workload={"data": "jax_test_workloads:pydataset_data"}, train_samples=2048),
        _request(train_samples=2048, val_samples=200),
        _request(mode="probe", steps_per_epoch=2, epochs=1),
        _request(mode="validate", steps_per_epoch=3, epochs=1),
        _request(mode="inspect", workload=arrays),
    ]
    env = {**os.environ, **_env(_plan("jax"))}
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, json.dumps([encode_request(r) for r in requests])],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()}
    assert "RESULTS" in lines, done.stderr[-3000:]
    arrays_trial, pydataset, iterable, probe, validate, inspect = json.loads(lines["RESULTS"])
    assert json.loads(lines["TF"]) == []
    for trial in (arrays_trial, pydataset, iterable):
        assert trial["status"] == "ok", trial
        assert (trial["backend"], trial["device_kind"], trial["precision"]) == (
            "jax",
            "cpu",
            "float32",
        )
        assert set(trial["versions"]) == {"keras", "jax", "jaxlib"}
        assert trial["throughput"] > 0 and trial["input_throughput"] > 0
        assert trial["final_loss"] < trial["epoch_losses"][0] * 2
        assert trial["peak_memory_bytes"] is None  # the CPU keeps no allocator statistics
        assert trial["devices"] == ["cpu:0", "cpu:1"]
    assert arrays_trial["epoch_losses"][1] < arrays_trial["epoch_losses"][0]
    assert arrays_trial["gradient_noise_scale"] > 0
    assert (pydataset["input_form"], iterable["input_form"]) == ("pydatasets", "iterables")
    assert iterable["input_rebatched"] and iterable["val_samples_used"] == 200
    assert iterable["train_samples_used"] == 2048
    assert probe["status"] == "ok" and probe["probe"]
    assert validate["replica_examples"] == [3 * 64, 3 * 64]
    assert validate["weight_max_abs_diff"] == 0.0 and validate["copies_per_variable"] == 2
    assert len(validate["step_losses"]) == 3
    assert (inspect["status"], inspect["n_train"], inspect["backend"]) == ("ok", 4096, "jax")
    assert "tensorflow" not in inspect["versions"]


@pytest.mark.usefixtures("workloads_importable")
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_mixed_bfloat16_trains_on_both_backends(backend: str) -> None:
    arrays = {"data": "tuner_test_workloads:small_regression_data"}
    request = _request(backend, workload=arrays, precision="mixed_bfloat16", train_samples=2048)
    run = run_child(request, _env(_plan(backend)), timeout_s=600)
    result = _flat(run.result_text)
    assert result.get("status") == "ok", (result, run.stderr_tail[-2000:])
    assert (result["backend"], result["precision"]) == (backend, "mixed_bfloat16")
    assert result["final_loss"] < 1.0


@pytest.mark.usefixtures("workloads_importable")
def test_a_batch_beyond_the_cpu_memory_cap_is_an_out_of_memory() -> None:
    # 200 MiB for the two devices: room for the threads a run starts after the cap is set (each
    # reserves its stack: at 100 MiB a busy machine once saw "can't start new thread" at batch
    # 32), far below the 1024 batch's activations.
    plan = _plan("jax", memory_limit=100 * 2**20)
    wide = {"model": "jax_test_workloads:wide_model"}
    fits = _request(workload=wide, global_batch_size=32, steps_per_epoch=2, epochs=1)
    over = replace(fits, global_batch_size=1024)  # ~330 MB of activations alone
    results = []
    for request in (fits, over):
        run = run_child(replace(request, plan=plan), _env(plan), timeout_s=600)
        results.append(_flat(run.result_text))
    assert results[0].get("status") == "ok", results[0]
    assert results[1].get("status") == "oom", results[1]
    assert "Out of memory" in results[1]["error"]
