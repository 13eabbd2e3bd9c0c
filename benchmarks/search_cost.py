"""Search cost: a 6-size grid with an out-of-memory boundary inside it, with and without --probe.

Workload: 64 -> Dense(8192) -> 1 (tests/tuner_test_workloads.py) on 2 CPU replicas under a
128 MiB-per-device cap; global batches 512, 1024, 1536, 2048, 3072, 4096; one LR rule.

Usage: python benchmarks/search_cost.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import optuna
from _common import tuner_cli

from tuner.core.record import decode

SPEC = """
[study]
name = "cost"
[workload]
model = "tuner_test_workloads:wide_model"
data = "tuner_test_workloads:wide_data"
[search]
base_batch_size = 512
batch_multipliers = [1, 2, 3, 4, 6, 8]
lr_rules = ["none"]
base_lr = 1e-3
epochs = 3
"""

for probe in (False, True):
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "cost.toml").write_text(SPEC)
        args = [
            "search",
            "--spec",
            "cost.toml",
            "--cpu-replicas",
            "2",
            "--memory-limit",
            "128MiB",
            "--storage",
            "sqlite:///cost.db",
            "--no-baseline",
        ]
        wall, _ = tuner_cli(*args, *(["--probe"] if probe else []), cwd=Path(tmp))
        study = optuna.load_study(study_name="cost", storage=f"sqlite:///{tmp}/cost.db")
        launched = [t for t in study.trials if decode(t).timings]
        feasible = [t for t in study.trials if decode(t).status == "ok"]
        line = (
            f"{'--probe' if probe else 'implied pruning only'}: wall {wall:.0f} s, full-length "
            f"launches {len(launched)} (feasible points {len(feasible)})"
        )
        if probe:
            (record,) = study.user_attrs["probes"].values()
            line += (
                f"; probe {record['launches']} launches, {record['wall_s']:.0f} s = "
                f"{record['wall_s'] / wall:.0%} of the search; boundary between "
                f"{record['largest_fitting_batch']} and {record['smallest_oom_batch']}"
            )
        print(line, flush=True)
