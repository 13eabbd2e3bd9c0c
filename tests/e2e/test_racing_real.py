"""Seeds and racing with real TensorFlow on two CPU replicas and real SQLite: the base
configuration trains with a second seed, the close candidates run again in fresh children, and
the recommendation carries the intervals, the tie (if any) and a verdict."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import optuna
import pytest
from conftest import run_tuner, write_spec

from tuner.core.record import decode

pytestmark = pytest.mark.slow


def test_seeds_and_repeats_decide_with_intervals(tmp_path: Path) -> None:
    # Two configurations (batch 256 and 512, rule none): a tie is possible, each gets a repeat.
    write_spec(tmp_path / "s.toml", name="race", base=256, rules='["none"]')
    searched = run_tuner(
        "search", "--spec", "s.toml", "--storage", "sqlite:///s.db", "--cpu-replicas", "2",
        "--no-noise-scale", "--seeds", "2", "--max-repeats", "2", "--export", "rec.json",
        "--baseline", cwd=tmp_path,
    )  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    study = optuna.load_study(study_name="race", storage=f"sqlite:///{tmp_path}/s.db")
    trials = study.get_trials()

    noise = study.user_attrs["seed_noise"]["2x cpu"]
    assert noise["seeds"] == [0, 1] and len(noise["final_losses"]) == 2
    assert noise["spread"] == pytest.approx(
        statistics.stdev(noise["final_losses"]) / statistics.fmean(noise["final_losses"])
    )

    baseline = study.user_attrs["baselines"]["2x cpu"]
    assert len(baseline["repeats"]) == 2 and baseline["throughput_ci"]

    repeats = [t for t in trials if decode(t).reuse.repeat_of is not None]
    assert repeats, "every candidate measured once gets a second run"
    by_number = {t.number: t for t in trials}
    for repeat in repeats:
        original = by_number[decode(repeat).reuse.repeat_of]
        assert repeat.params == original.params
        assert decode(repeat).reuse.repeat_index == 2
        runs = decode(repeat).result.repeats
        assert runs[0] == decode(original).result.run_throughput and len(runs) == 2
        assert runs[1] == decode(repeat).result.run_throughput
        assert repeat.values[1] == pytest.approx(statistics.median(runs))
        low, high = decode(repeat).result.throughput_ci
        assert low <= repeat.values[1] <= high
        assert decode(repeat).result.throughput_ci_method == "t over 2 runs"
    assert max(len(decode(t).flat.get("repeats", [])) for t in trials) == 2  # --max-repeats

    rec = json.loads((tmp_path / "rec.json").read_text())
    chosen = by_number[rec["trial_number"]]
    assert rec["runs"] == len(decode(chosen).result.repeats)
    assert rec["loss_tolerance_source"] in ("--tolerance", "seed noise")
    # The export rounds to 6 significant digits: 2 × spread may round down by up to 5e-7 of it.
    tolerance = rec["loss_tolerance"]
    assert tolerance >= 0.02 and tolerance >= 2 * noise["spread"] * (1 - 1e-6)
    assert isinstance(rec["tied_with"], list) and rec["verdict"]
    assert rec["speedup_ci"] and rec["speedup_ci"][0] <= rec["speedup_vs_single_device"]
    shown = searched.stdout
    assert "verdict" in shown and "95 % CI" in shown
