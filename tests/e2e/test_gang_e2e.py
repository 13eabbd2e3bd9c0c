"""Two real ranks of a gang on 127.0.0.1 whose JAX children train one global batch together
(issue 47), through what goes wrong: the follower SIGKILLed mid-trial (that trial fails, its
child goes with it, the launcher starts it again and the search goes on), a memory cap on the
follower alone (the batch it cannot fit is ``oom`` for the gang, larger ones ``oom-implied``);
and ``tuner validate --hosts 2``, which passes and catches the wrong reduction across hosts.
The happy path, three global batches end to end, is the Slurm recipe's test
(tests/e2e/test_gang_recipes.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import WIDE, tuner_env
from procs import descendants, free_port_pair, load, start_search, wait_gone, wait_until

from tuner.core.record import decode

pytestmark = pytest.mark.slow

SIGNATURE = "2 hosts × 2x cpu, jax"
TESTS = Path(__file__).resolve().parents[1]
PATH = os.pathsep.join([str(TESTS), str(TESTS / "worker"), os.environ.get("PYTHONPATH", "")])
"""The test workloads, the wide JAX model's too."""


def _wide_spec(folder: Path) -> Path:
    """A model 80,000 wide (320 kB of activations a sample) at global batch 64 to 4,096:
    ~10 MB a host at 64, one buffer of ~160 MB a device at 2,048; 4,096 implied."""
    spec = folder / "wide.toml"
    spec.write_text(
        WIDE.replace("tuner_test_workloads:wide_model", "jax_test_workloads:wide_model")
        .replace("tuner_test_workloads:wide_data", "tuner_test_workloads:small_regression_data")
        .replace("[workload]", '[workload]\nbackend = "jax"')
        .replace("base_batch_size = 512", "base_batch_size = 64")
        .replace("batch_multipliers = [1, 2, 8, 16]", "batch_multipliers = [1, 2, 32, 64]")
        .replace('lr_rules = ["none", "sqrt"]', 'lr_rules = ["none"]')
        .replace("epochs = 2", "train_samples = 24576")
    )
    return spec


def test_a_lost_follower_and_a_rank_out_of_memory(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gang.db'}"
    common = ["--spec", str(_wide_spec(tmp_path)), "--hosts", "2", "--cpu-replicas", "2"]
    common += ["--coordinator", f"127.0.0.1:{free_port_pair()}", "--storage", url]
    common += ["--study-name", "g", "--trial-timeout", "120"]
    # The follower's own cap, 150 MiB for its 2 devices: 2,048's first large buffer alone does
    # not fit it. (An address-space cap: when a smaller allocation of gloo's is the one to fail,
    # that rank stalls and rank 0 times out in the collective instead: far-apart sizes.)
    follows = [*common, "--rank", "1", "--memory-limit", "75MiB"]
    (tmp_path / "rank1").mkdir()
    follower = start_search(follows, tmp_path / "rank1", PYTHONPATH=PATH)
    leader = start_search([*common, "--rank", "0"], tmp_path, PYTHONPATH=PATH)
    try:
        # The first trial's child on the follower: its tuner killed once the child runs.
        assert wait_until(lambda: bool(descendants(follower.pid)), within_s=120), "no child"
        time.sleep(1.5)
        orphans = descendants(follower.pid)
        follower.send_signal(signal.SIGKILL)
        follower.wait()
        assert wait_gone(orphans, within_s=20), "the killed follower's child outlived it"
        # The launcher starts it again (a Job's pod, srun --kill-on-bad-exit=0 in a loop).
        follower = start_search(follows, tmp_path / "rank1", PYTHONPATH=PATH)
        _, leader_err = leader.communicate(timeout=400)
        _, follower_err = follower.communicate(timeout=60)
    finally:
        for proc in (leader, follower):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert (leader.returncode, follower.returncode) == (0, 0), (leader_err, follower_err)
    study = load(url, "g")
    found = {t.params["global_batch_size"]: decode(t).status for t in study.trials}
    assert sorted(found) == [64, 128, 2048, 4096], found  # each stored once
    assert found[64] not in ("ok", "oom"), found  # the trial the lost follower was in
    # Up the batches: what fits, then the first that does not (oom for the gang), then the
    # sizes it implies; never a size that fits above one that did not.
    statuses = [found[batch] for batch in sorted(found)[1:]]
    first = statuses.index("oom")
    assert statuses[0] == "ok" and set(statuses[:first]) == {"ok"}, found
    assert statuses[first + 1 :] == ["oom-implied"] * (len(statuses) - first - 1), found
    assert found[4096] == "oom-implied", found
    assert study.user_attrs["device_signatures"] == [SIGNATURE]
    oom = next(t for t in study.trials if decode(t).status == "oom")
    assert "(on rank 1 of 2)" in str(decode(oom).flat.get("error")), decode(oom).flat
    assert "rank 1/2: the search is over" in follower_err
    assert wait_gone([leader.pid, follower.pid], within_s=10)


def _validate(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    """``tuner validate`` on two ranks of the built-in workload; rank 0's run and report."""
    report = folder / "report.json"
    common = [sys.executable, "-m", "tuner", "validate", "--backend", "jax", "--hosts", "2"]
    common += ["--cpu-replicas", "2", "--coordinator", f"127.0.0.1:{free_port_pair()}", *args]
    follower = subprocess.Popen(
        [*common, "--rank", "1"], env=tuner_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        leader = subprocess.run(
            [*common, "--rank", "0", "--output", str(report)],
            env=tuner_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0, follower.returncode
    return leader, json.loads(report.read_text()) if report.exists() else {}


def test_validate_across_hosts_passes_and_catches_the_wrong_reduction(tmp_path: Path) -> None:
    done, report = _validate(tmp_path)
    assert done.returncode == 0, done.stderr
    assert report["passed"] and report["device_signature"] == SIGNATURE
    parity = report["checks"]["loss_parity"]
    assert parity["summary"].startswith("max relative difference"), parity  # compared, same data
    print("loss parity across hosts:", parity["summary"])
    sync = report["checks"]["weight_sync"]
    assert sync["copies_per_variable"] == 4 and sync["max_abs_difference"] == 0.0
    assert len(report["checks"]["device_use"]["replica_examples"]) == 4
    os.remove(tmp_path / "report.json")
    # The seed document's mistake across hosts: per-replica means summed.
    wrong, report = _validate(tmp_path, "--loss-reduction", "replica-mean")
    assert wrong.returncode == 1, wrong.stderr
    assert not report["checks"]["loss_parity"]["passed"]
