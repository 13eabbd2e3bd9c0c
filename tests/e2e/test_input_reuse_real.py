"""The input pipeline measured once per batch, with real TensorFlow children on two CPU replicas
and real SQLite: at batch 128 the rules none and linear train apart (two children), and the
second is sent the first one's ``input_throughput`` — it does not time the pipeline again
(``input_probe_s`` ~0) and names the trial it came from; batch 64 measures its own. The search is
:mod:`piped_search`'s, shared with ``test_same_training.py`` and ``test_progress_columns.py``."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from piped_search import NAME, piped_search

from tuner.core.record import decode


@pytest.fixture(scope="module")
def piped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return piped_search(tmp_path_factory)


@pytest.mark.slow
def test_the_second_rule_at_a_batch_reuses_the_first_ones_input_figure(
    piped: tuple[Path, str],
) -> None:
    _, url = piped
    study = optuna.load_study(study_name=NAME, storage=url)
    children = [t for t in study.get_trials() if decode(t).reuse.same_as is None]
    by_batch: dict[int, list[optuna.trial.FrozenTrial]] = {}
    for trial in sorted(children, key=lambda t: t.number):
        by_batch.setdefault(trial.params["global_batch_size"], []).append(trial)
    (base,) = by_batch[64]
    first, second = by_batch[128]
    for measured in (base, first):
        assert decode(measured).reuse.input_throughput_from is None
        assert decode(measured).result.input_throughput > 0
        assert decode(measured).timings["input_probe_s"] > 0.05
    assert decode(base).reuse.input_key != decode(first).reuse.input_key
    reused = decode(second).flat
    assert reused["input_throughput_from"] == first.number
    assert reused["input_key"] == decode(first).reuse.input_key
    assert reused["input_throughput"] == decode(first).result.input_throughput
    assert reused["timings"]["input_probe_s"] < 0.01
    # Whether training is input-bound is still judged against this trial's own throughput.
    assert reused["input_bound"] is (reused["throughput"] >= 0.8 * reused["input_throughput"])
