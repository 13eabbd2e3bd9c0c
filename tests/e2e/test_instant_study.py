"""A whole ``tuner search`` of 40 grid points with the instant stand-in executor
(``TUNER_TEST_INSTANT_TRIALS=1``): the real CLI in a child process, a real SQLite file (and a
real PostgreSQL database), seeds, racing, the baseline and the export as by default; only the
children are replaced. What ``benchmarks/driver_scaling.py`` times must be a search that really
finishes, with every attribute stored (a handful of grouped attributes: ``tuner.core.record``)."""

from __future__ import annotations

import json

import optuna
import pytest
from conftest import run_tuner, tuner_env
from optuna.trial import TrialState
from test_postgres import pg_url  # noqa: F401  (the fixture)

from tuner.core.configurations import grid_point
from tuner.core.record import decode
from tuner.driver.children._instant import DEVICE_KIND, INSTANT_ENV

pytestmark = pytest.mark.slow  # some 50 trials through SQLite: seconds, though no child starts

MULTIPLIERS = range(1, 21)
RULES = ("none", "linear")


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_stand_in_study_of_40_points_completes_every_trial_with_its_attributes(
    tmp_path, request, kind
):
    url = request.getfixturevalue("pg_url") if kind == "postgres" else "sqlite:///instant.db"
    result = run_tuner(
        "search",
        "--cpu-replicas", "2",
        "--storage", url,
        "--batch-multipliers", ",".join(map(str, MULTIPLIERS)),
        "--lr-rules", ",".join(RULES),
        "--seeds", "3",
        "--max-repeats", "3",
        "--export", "rec.json",
        "--baseline",
        cwd=tmp_path,
        env=tuner_env(**{INSTANT_ENV: "1"}),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path}/instant.db"
    study = optuna.load_study(study_name="regression", storage=url)
    trials = study.get_trials()
    assert {t.state for t in trials} == {TrialState.COMPLETE}
    assert {grid_point(t) for t in trials} == {(64 * m, r) for m in MULTIPLIERS for r in RULES}
    for trial in trials:
        attrs = decode(trial).flat
        assert attrs["status"] == "ok" and attrs["device_kind"] == DEVICE_KIND
        assert attrs["throughput"] == trial.values[1] and attrs["final_loss"] == trial.values[0]
        assert attrs["training_key"] and attrs["global_batch_size"] == grid_point(trial)[0]
        assert "same_as" in attrs or "wall_s" in attrs["timings"]  # same_as: no child ran
    assert study.user_attrs["seed_noise"] and study.user_attrs["baselines"]
    assert json.loads((tmp_path / "rec.json").read_text())["global_batch_size"] in {
        64 * m for m in MULTIPLIERS
    }
