"""Overhead: wall time of a default `tuner search` vs the training time of its trials.

Runs the README's first command (built-in workload, default settings: 6 trials plus the
single-device baseline) in a fresh folder and reads the per-trial time breakdown from the study.

Usage: python benchmarks/overhead.py
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import optuna
from _common import tuner_cli

from tuner.core.outcome import PHASES
from tuner.core.record import decode

with tempfile.TemporaryDirectory() as tmp:
    wall, _ = tuner_cli("search", cwd=Path(tmp))
    study = optuna.load_study(study_name="regression", storage=f"sqlite:///{tmp}/studies/tuner.db")
    timings = [decode(t).timings for t in study.trials]
    baselines = [b["timings"] for b in study.user_attrs["baselines"].values()]
runs = timings + baselines
fit = sum(t["tracing_s"] + t["training_s"] for t in runs)
steady = sum(t["training_s"] for t in runs)
print(f"search wall {wall:.1f} s; {len(timings)} trials + {len(baselines)} baseline")
print(f"sum of training time (fit, tracing included) {fit:.1f} s -> ratio {wall / fit:.2f}")
print(f"sum of steady training (tracing excluded) {steady:.1f} s -> ratio {wall / steady:.2f}")
phases = [*PHASES, "unaccounted_s", "wall_s"]
for phase in phases:
    print(f"  {phase:16s} median {statistics.median(t[phase] for t in timings):6.2f} s per trial")
