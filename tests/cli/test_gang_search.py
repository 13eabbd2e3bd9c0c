"""Two ``tuner search`` processes as one gang on 127.0.0.1, trials answered by the instant
stand-in: the wiring (rank 0 stores, rank 1 follows and never opens the storage, both exit 0)
without a framework (issue 47; the real children: tests/e2e/test_gang_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import optuna
from procs import free_port_pair, start_search


def test_two_ranks_run_one_study(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'gang.db'}"
    gang = ["--hosts", "2", "--coordinator", f"127.0.0.1:{free_port_pair()}"]
    common = [*gang, "--backend", "jax", "--cpu-replicas", "2", "--batch-multipliers", "1,2,4"]
    common += ["--lr-rules", "none", "--quick", "--storage", url, "--study-name", "g"]
    instant = {"TUNER_TEST_INSTANT_TRIALS": "1", "TUNER_TEST_INSTANT_SECONDS": "0.2"}
    follower_dir = tmp_path / "rank1"
    follower_dir.mkdir()
    ranks = [
        start_search(
            [*common, "--rank", str(rank)], tmp_path if rank == 0 else follower_dir, **instant
        )
        for rank in (1, 0)  # the follower first: it waits for rank 0
    ]
    ends = [proc.communicate(timeout=120) for proc in ranks]
    (_, follower_err), (leader_out, leader_err) = ends
    assert [proc.returncode for proc in ranks] == [0, 0], (follower_err, leader_err)
    assert "rank 1/2: trial run at global batch 256 ok" in follower_err
    assert "rank 1/2: the search is over" in follower_err
    assert not list(follower_dir.iterdir())  # no storage, nothing else either
    study = optuna.load_study(study_name="g", storage=url)
    batches = sorted(t.params["global_batch_size"] for t in study.get_trials())
    assert batches == [64, 128, 256]  # each once
    assert study.user_attrs["device_signatures"] == ["2 hosts × 2x cpu, jax"]
    assert "2 hosts give" in leader_out
