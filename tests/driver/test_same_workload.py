"""A study resumes only on the workload it measured (issue 44, case 1): the same spec over an
edited model or other data is refused in one line naming what changed and a free study name,
before anything is stored; a study whose trials all failed, or one stored before the parts were
kept, opens as before. A real SQLite study; the workload check's parts given as it gives them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from fake_child import PLAN, make_spec

from tuner.core.errors import ConfigError
from tuner.core.record import decode_study
from tuner.driver.setup.opening import open_study

PARTS = {
    "model function": "a1",
    "model configuration": "b1",
    "data function": "c1",
    "data samples": "d1",
}


def info(**changed: str) -> dict[str, Any]:
    parts = {**PARTS, **{key.replace("_", " "): value for key, value in changed.items()}}
    return {"n_train": 512, "n_val": 128, "parameters": 9, "digest": "x", "digest_parts": parts}


def opened(url: str, found: dict[str, Any], state: str | None = "COMPLETE") -> optuna.Study:
    study = open_study(make_spec(), PLAN, url, None, found, None)
    if state is not None:
        trial = study.ask()
        study.tell(trial, [1.0, 2.0] if state == "COMPLETE" else None, state=getattr(
            optuna.trial.TrialState, state))  # fmt: skip
    return study


def test_an_edited_model_is_refused_naming_what_changed_and_a_free_name(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    opened(url, info())
    optuna.create_study(study_name="fake-2", storage=url)  # taken: the next free one is named
    with pytest.raises(ConfigError) as refused:
        open_study(
            make_spec(), PLAN, url, None, info(model_function="a2", model_configuration="b2"), None
        )
    line = str(refused.value)
    assert "study 'fake'" in line and "model function, model configuration changed" in line
    assert "(e.g. 'fake-3')" in line and "\n" not in line
    stored = decode_study(optuna.load_study(study_name="fake", storage=url)).workload
    assert stored is not None and stored["digest_parts"] == PARTS  # nothing stored


def test_other_samples_or_sizes_of_the_same_data_function_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    opened(url, info())
    with pytest.raises(ConfigError, match=r"data samples changed .*without a seed"):
        open_study(make_spec(), PLAN, url, None, info(data_samples="d2"), None)
    with pytest.raises(ConfigError, match="n_train 512 -> 1024"):
        open_study(make_spec(), PLAN, url, None, {**info(), "n_train": 1024}, None)


def test_the_same_workload_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    opened(url, info())
    assert len(open_study(make_spec(), PLAN, url, None, info(), None).trials) == 1


@pytest.mark.parametrize("state", [None, "FAIL"])
def test_a_study_without_a_finished_trial_takes_the_new_workload(tmp_path: Path, state) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    opened(url, info(), state)
    study = open_study(make_spec(), PLAN, url, None, info(model_function="a2"), None)
    stored = decode_study(study).workload
    assert stored is not None and stored["digest_parts"]["model function"] == "a2"


def test_a_study_stored_before_the_parts_were_kept_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/t.db"
    opened(url, {**info(), "digest_parts": None})
    assert open_study(make_spec(), PLAN, url, None, info(model_function="a2"), None)
