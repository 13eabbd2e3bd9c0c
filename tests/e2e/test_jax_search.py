"""A real ``tuner search --backend jax --cpu-replicas 2`` study: Keras 3 on JAX under
``keras.distribution.DataParallel`` over two host CPU devices, real SQLite through Optuna, an
export; a batch that trains, a real out-of-memory under JAX's CPU memory cap and a larger batch
implied by it, in one search."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from conftest import WIDE, run_tuner, tuner_env
from e2e.jax_collectives import xla_flags
from optuna.trial import TrialState

from tuner.core.record import decode

pytestmark = pytest.mark.slow

CAP = "224MiB"
"""Per device, so 448 MiB of address space over what the child holds once JAX is up (RLIMIT_AS).
Measured here with the wide model on 2 host devices: global batch 1024 trains under 192 MiB,
8192 runs out of memory under 256 MiB (and trains under 512 MiB); 224 MiB sits between both."""


def test_a_jax_study_trains_prunes_the_oom_under_the_cap_implies_larger_and_exports(
    tmp_path: Path,
) -> None:
    (tmp_path / "wide.toml").write_text(
        WIDE.replace("base_batch_size = 512", "base_batch_size = 1024")
        .replace("batch_multipliers = [1, 2, 8, 16]", "batch_multipliers = [1, 8, 16]")
        .replace('lr_rules = ["none", "sqrt"]', 'lr_rules = ["none"]')
    )
    result = run_tuner(
        "search",
        "--spec",
        "wide.toml",
        "--backend",
        "jax",
        "--cpu-replicas",
        "2",
        "--memory-limit",
        CAP,
        "--no-baseline",
        "--no-noise-scale",
        "--storage",
        "sqlite:///wide.db",
        "--export",
        "rec.json",
        cwd=tmp_path,
        env=tuner_env(XLA_FLAGS=xla_flags()),  # the out-of-memory waited for 10 s
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "on 2 cpu replicas (jax)" in result.stderr
    study = optuna.load_study(study_name="wide", storage=f"sqlite:///{tmp_path}/wide.db")
    signature = "2x cpu, jax, cap 224 MiB per device"
    assert study.user_attrs["backend"] == "jax"
    assert study.user_attrs["device_signatures"] == [signature]
    versions = study.user_attrs["versions"]
    assert "tensorflow" not in versions
    assert {"jax", "jaxlib", "keras"} <= set(versions)
    by_batch = {t.params["global_batch_size"]: t for t in study.get_trials()}
    assert sorted(by_batch) == [1024, 8192, 16384]
    fits, oom, implied = by_batch[1024], by_batch[8192], by_batch[16384]

    attrs = decode(fits).flat
    assert fits.state == TrialState.COMPLETE, attrs
    assert attrs["status"] == "ok"
    assert attrs["backend"] == "jax"
    assert attrs["device_kind"] == "cpu"
    assert attrs["device_signature"] == signature
    assert attrs["throughput"] > 0
    assert attrs["num_replicas"] == 2
    assert attrs["per_replica_batch_size"] == 512
    assert "tensorflow" not in attrs.get("versions", {})

    assert oom.state == TrialState.PRUNED and decode(oom).status == "oom", oom.user_attrs
    assert decode(oom).error
    assert implied.state == TrialState.PRUNED
    assert decode(implied).status == "oom-implied"
    assert f"global batch 8192 already ran out of memory on {signature}" in (decode(implied).error)

    rec = json.loads((tmp_path / "rec.json").read_text())
    assert rec["global_batch_size"] == 1024
    assert rec["num_replicas"] == 2
    assert "tensorflow" not in rec["versions"]
