"""Real children of a trial across hosts (issue 47), both "hosts" on this machine: two JAX
children of one gang (2 CPU devices each, seats 0 and 1 on a free 127.0.0.1 port) train what one
child on 4 CPU devices trains — the same global batches, losses and validation loss — for NumPy
arrays and a user's ``tf.data`` pipeline; and a rank out of memory is reported ``oom`` by that
rank while the other ends, in bounded time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from child_requests import run_request
from procs import free_port_pair

from tuner.core.devices import CPU_CAP_ENV, DevicePlan
from tuner.core.protocol import decode_result, encode_request
from tuner.core.protocol._requests import GangSeat

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]
WAIT_S = 240
ARRAYS = "tuner_test_workloads:small_regression_data"
DATASETS = "tuner_test_workloads:regression_datasets"


def _start(request: Any, folder: Path, name: str, extra: dict[str, str]) -> subprocess.Popen[str]:
    """``python -m tuner.worker`` on ``request`` in a process group of its own."""
    (folder / f"{name}.request.json").write_text(encode_request(request))
    path = os.pathsep.join([str(TESTS), str(TESTS / "worker"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **request.plan.child_environment(), "PYTHONPATH": path, **extra}
    argv = [sys.executable, "-m", "tuner.worker", f"{name}.request.json", f"{name}.result.json"]
    log = (folder / f"{name}.log").open("w")
    return subprocess.Popen(
        argv, cwd=folder, env=env, stdout=log, stderr=log, text=True, start_new_session=True
    )


def _runs(requests: dict[str, Any], folder: Path, extra: dict[str, dict[str, str]]) -> dict:
    """Run every request at once; each one's (exit code, result fields, seconds it took)."""
    started = time.monotonic()
    children = {name: _start(r, folder, name, extra.get(name, {})) for name, r in requests.items()}
    try:
        done = {}
        for name, child in children.items():
            code = child.wait(timeout=max(1.0, WAIT_S - (time.monotonic() - started)))
            done[name] = (code, _result(folder, name), time.monotonic() - started)
        return done
    finally:
        for child in children.values():
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()


def _result(folder: Path, name: str) -> dict[str, Any]:
    path = folder / f"{name}.result.json"
    if not path.exists():
        return {"status": None, "log": (folder / f"{name}.log").read_text()[-3000:]}
    result = decode_result(path.read_text())
    return {"status": result.status, "error": result.error, **result.payload}


def _gang(data: str, port: int, **fields: Any) -> dict[str, Any]:
    """The two ranks' requests and one host's, same global batch and seed."""
    plan = DevicePlan("cpu", 2, backend="jax").across(2)
    seats = [GangSeat(process_id=i, address=f"127.0.0.1:{port}", join_timeout_s=60) for i in (0, 1)]
    given = {"data": data, "backend": "jax", "global_batch_size": 128, **fields}
    return {
        "one": run_request(plan=DevicePlan("cpu", 4, backend="jax"), **given),
        "rank0": run_request(plan=plan, gang=seats[0], **given),
        "rank1": run_request(plan=plan, gang=seats[1], **given),
    }


def test_a_gang_of_two_trains_what_one_host_trains(tmp_path: Path) -> None:
    # val_samples 1,002: a last global batch of 104 rows and 2 left over (each repeated): the
    # shares of every kind of evaluation batch.
    fields = {"steps_per_epoch": 8, "epochs": 2, "val_samples": 1002, "noise_scale": True}
    for data in (ARRAYS, DATASETS):
        runs = _runs(_gang(data, free_port_pair(), **fields), tmp_path, {})
        one, rank0, rank1 = (runs[name][1] for name in ("one", "rank0", "rank1"))
        assert [runs[name][0] for name in runs] == [0, 0, 0], runs
        assert one["status"] == rank0["status"] == rank1["status"] == "ok", runs
        assert rank0["num_replicas"] == rank1["num_replicas"] == 4
        assert rank0["final_loss"] == pytest.approx(one["final_loss"], rel=1e-5)
        assert rank1["final_loss"] == pytest.approx(rank0["final_loss"], rel=1e-6)
        assert rank0["epoch_losses"] == pytest.approx(one["epoch_losses"], rel=1e-5)
        # Every rank decides from rank 0's window times (the time-to-target stop).
        assert rank0["epoch_throughputs"] == rank1["epoch_throughputs"]
        assert rank0["input_throughput"] > 0 and rank0["throughput"] > 0
        assert rank0.get("gradient_noise_scale") is None
        assert "across hosts" in rank0["noise_scale_skipped"]
        print(data, {n: (r[1]["final_loss"], round(r[2], 1)) for n, r in runs.items()})


def test_a_rank_out_of_memory_is_reported_by_that_rank(tmp_path: Path) -> None:
    # Rank 1 alone is capped (150 MiB for its 2 devices): its 1,024 rows of the wide model's
    # activations (~330 MB) do not fit; rank 0 is left alone in the step's collectives.
    requests = _gang(
        ARRAYS,
        free_port_pair(),
        model="jax_test_workloads:wide_model",
        global_batch_size=2048,
        steps_per_epoch=2,
        epochs=1,
    )
    del requests["one"]
    capped = {CPU_CAP_ENV: str(150 * 2**20), "MALLOC_ARENA_MAX": "2"}
    runs = _runs(requests, tmp_path, {"rank1": capped})
    assert runs["rank1"][1]["status"] == "oom", runs["rank1"]
    assert runs["rank0"][1]["status"] != "ok", runs["rank0"]
    print({n: (r[0], r[1]["status"], round(r[2], 1)) for n, r in runs.items()})


def test_a_gangs_validation_run_sees_every_hosts_copies_and_counts(tmp_path: Path) -> None:
    # What `tuner validate --hosts 2` judges: each rank's copies of every variable gathered (4
    # copies, none drifted), every device's examples counted (G/N each), weights saved by rank 0.
    given = {"mode": "validate", "steps_per_epoch": 3, "epochs": 2}
    requests = _gang(ARRAYS, free_port_pair(), **given)
    del requests["one"]
    weights = tmp_path / "weights.npz"
    requests = {n: replace(r, weights_file=str(weights)) for n, r in requests.items()}
    runs = _runs(requests, tmp_path, {})
    rank0, rank1 = runs["rank0"][1], runs["rank1"][1]
    assert rank0["status"] == rank1["status"] == "ok", runs
    assert rank0["copies_per_variable"] == 4 and rank0["weight_max_abs_diff"] == 0.0
    assert rank0["replica_examples"] == rank1["replica_examples"] == [6 * 128 // 4] * 4
    assert rank0["step_losses"] == rank1["step_losses"] and len(rank0["step_losses"]) == 6
    assert weights.exists()
