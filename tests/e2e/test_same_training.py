"""Each configuration trains once, with real TensorFlow on two CPU replicas and real SQLite: at
the base batch the rules none and linear give one learning rate, so one child trains it and the
other grid point is recorded ``same_as`` it (three rules at once: ``e2e/test_search.py``'s
``small_study``); with ``--no-noise-scale`` no child measures the noise scale, and arrays in
memory do not make a trial input-bound. The search is :mod:`piped_search`'s, shared with
``test_input_reuse_real.py`` and ``test_progress_columns.py``."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from piped_search import NAME, piped_search

from tuner.core.record import decode
from tuner.core.windows import INPUT_BOUND_RATIO


@pytest.fixture(scope="module")
def piped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return piped_search(tmp_path_factory)


@pytest.mark.slow
def test_the_base_batch_points_of_two_rules_train_once(piped: tuple[Path, str]) -> None:
    work, url = piped
    log = (work / "stderr.txt").read_text() + (work / "stdout.txt").read_text()
    study = optuna.load_study(study_name=NAME, storage=url)
    trials = study.get_trials()
    assert len(trials) == 4 and all(t.state.name == "COMPLETE" for t in trials)
    # A child leaves its phase timings on the trial; a same_as trial ran none.
    children = [t for t in trials if decode(t).timings]
    assert len(children) == 3  # batch 64 once, batch 128 once per rule
    for child in children:  # --no-noise-scale: no measurement taken, none of its time spent
        assert decode(child).result.gradient_noise_scale is None
        assert decode(child).timings["noise_scale_s"] == 0.0
    base = [t for t in trials if t.params["global_batch_size"] == 64]
    (original,) = [t for t in base if decode(t).reuse.same_as is None]
    (twin,) = [t for t in base if t is not original]
    # The pipeline was measured alone and the flag follows the figures (whether arrays in memory
    # outrun the model is a race on a busy machine: a slow pipeline is input-bound in
    # tests/e2e/test_real_inputs.py).
    result = decode(original).result
    assert result.input_throughput is not None and result.input_throughput > 0
    bound = decode(original).throughput >= INPUT_BOUND_RATIO * result.input_throughput
    assert result.input_bound is bound, original.user_attrs
    assert sorted(t.params["lr_rule"] for t in base) == ["linear", "none"]
    assert decode(twin).reuse.same_as == original.number
    assert twin.values == original.values
    assert decode(twin).configuration.training_key == decode(original).configuration.training_key
    # The note, on one line of the 80-column log or broken between its parts.
    assert f"same training as #{original.number}" in " ".join(log.split()), log
    wide = {
        decode(t).configuration.training_key for t in trials if t.params["global_batch_size"] == 128
    }
    assert len(wide) == 2 and not any(decode(t).reuse.same_as is not None for t in children)
    assert decode(original).result.repeats == [original.values[1]]
    # Two epochs are one warm-up window and one timed one: no interval from a single window.
    assert decode(original).result.run_throughput == original.values[1]
    assert decode(original).result.throughput_ci is None
