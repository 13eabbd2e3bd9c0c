"""The zoo (issue 28): setups written the way Keras's own examples and guides write them
(:mod:`workloads.setups`), each searched once on two CPU replicas with a tiny budget (no baseline,
one grid point), exported by that search, and the export trained by a fresh plain-Keras script
(``train_fresh.py``, one ``--serve`` process per backend for the module's setups: it imports
nothing of tuner's; not the ``keras.applications`` models: ``Setup.fresh_in_test``). A setup
tuner cannot train today is ``xfail(strict=True)`` with the one-line error it gives, so that a fix
flips it."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from workloads import zoo
from workloads.setups import SETUPS, Setup

pytestmark = pytest.mark.slow


def marks(setup: Setup) -> list[pytest.MarkDecorator]:
    found = []
    if setup.xfail:
        found.append(pytest.mark.xfail(strict=True, reason=f"issue 28: {setup.xfail}"))
    return found


def params() -> list[object]:
    every = os.environ.get("TUNER_ZOO_HEAVY") == "1"
    return [
        pytest.param(setup, id=setup.id, marks=marks(setup))
        for setup in SETUPS
        if setup.in_suite or every
    ]


@pytest.fixture(scope="module")
def trainers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zoo.FreshTrainers]:
    """The plain-Keras servers that train the exports (one per backend, per xdist worker)."""
    started = zoo.FreshTrainers(tmp_path_factory.mktemp("fresh"))
    yield started
    started.close()


@pytest.mark.parametrize("setup", params())
def test_a_keras_setup_searches_exports_and_trains_fresh(
    setup: Setup, tmp_path: Path, trainers: zoo.FreshTrainers
) -> None:
    outcome = zoo.run(setup, tmp_path, with_fresh=setup.fresh_in_test, trainers=trainers)

    assert outcome.search_rc == 0, outcome.search_error or outcome.search_stderr[-2000:]
    for line in setup.says:
        assert line in outcome.search_stderr, outcome.search_stderr[-2000:]
    assert outcome.trials, "no trial stored"
    for trial in outcome.trials:
        assert trial["state"] == "COMPLETE", trial.get("error")
        assert trial["status"] == "ok", trial.get("error")
        assert trial["throughput"] > 0
        # The noise scale is taken, or the trial stores why not (skipped, or a note).
        taken = trial.get("gradient_noise_scale") is not None
        assert taken or zoo.noise_reason(trial), f"no noise scale and no reason: {trial}"
        assert taken or not setup.noise_measured, f"noise scale not measured: {trial}"
        for key, value in setup.expect:
            assert trial.get(key) == value, (key, trial)
        for name in setup.metrics:  # the compiled metrics' final values, as evaluate logs them
            assert 0.0 <= (trial.get("val_metrics") or {}).get(name, -1.0) <= 1.0, trial
        for key, low, high in setup.within:
            assert low <= trial[key] <= high, (key, low, high, trial)
    for words in setup.quiet:
        assert words not in outcome.search_stderr, outcome.search_stderr[-2000:]

    assert outcome.export_rc == 0, outcome.export_error
    recommended = outcome.recommendation.get("recommended") or outcome.recommendation
    assert recommended["global_batch_size"] == setup.base_batch_size

    if not setup.fresh_in_test:
        assert outcome.fresh_rc is None
        return
    assert outcome.fresh_rc == 0, outcome.fresh_error
    report = outcome.fresh
    assert report["replicas"] == 2 and report["finite"], report
    assert report["batch_size"] == recommended["global_batch_size"]
    assert math.isclose(report["trained_learning_rate"], recommended["learning_rate"], rel_tol=1e-6)
    if setup.serialized_loss:  # the export's loss, deserialized: its settings came along
        assert report["trained_loss"] in setup.loss and report["from_logits"], report
    if setup.compiled:  # the export names the optimizer the build compiled, which trained
        assert report["exported_optimizer"] == report["built_optimizer"], report
