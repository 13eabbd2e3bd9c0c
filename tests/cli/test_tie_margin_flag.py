"""``--tie-margin`` on ``tuner export`` and ``tuner show`` (issue 30 item 7): candidates within it
of the best throughput are practically equal and the smaller batch wins; beyond it the faster is
picked, and a close call says how sure the runs are. A stored SQLite study, no training."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
from conftest import invoke_tuner
from trials import measured_trial

RUNS_64 = [980.0, 1000.0, 1020.0]
RUNS_128 = [950.0, 1080.0, 1150.0]  # 8 % faster on the median, within the noise


def stored(tmp_path: Path, **search: float) -> str:
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = optuna.create_study(study_name="ties", storage=url, directions=["minimize", "maximize"])
    study.set_user_attr("spec", {"search": {"base_lr": 0.001, "base_batch_size": 64, **search}})
    study.add_trial(measured_trial(0, 64, runs=RUNS_64))
    study.add_trial(measured_trial(1, 128, runs=RUNS_128))
    return url


def export(tmp_path: Path, *flags: str, **search: float) -> dict:
    tmp_path.mkdir()
    result = invoke_tuner("export", "--storage", stored(tmp_path, **search), *flags, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_margin_flag_decides_what_is_practically_equal(tmp_path: Path) -> None:
    default = export(tmp_path / "a")
    assert default["tie_margin"] == 0.05 and default["global_batch_size"] == 128
    (call,) = default["close_calls"]
    assert call["global_batch_size"] == 64 and call["ratio_ci"][0] < 1 < call["ratio_ci"][1]
    assert "batch 128 and batch 64 (trial 0) are not distinguishable" in default["verdict"]
    assert "more repeats would settle it (--max-repeats above 3)" in default["verdict"]
    wide = export(tmp_path / "b", "--tie-margin", "0.1")
    assert wide["tie_margin"] == 0.1 and wide["global_batch_size"] == 64
    assert wide["tied_with"] == [1] and wide["close_calls"] == []


def test_show_says_the_close_call_and_a_bad_margin_is_one_line(tmp_path: Path) -> None:
    url = stored(tmp_path)
    shown = invoke_tuner("show", "--storage", url, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Use global batch 128 (64 per replica)" in shown.stdout
    assert "more repeats would settle it" in " ".join(shown.stdout.split())
    for command in ("show", "export"):
        bad = invoke_tuner(command, "--storage", url, "--tie-margin", "1.5", cwd=tmp_path)
        assert bad.returncode == 2
        assert bad.stderr.strip() == "error: --tie-margin must be in [0, 1), got 1.5"


def test_the_margin_the_study_was_searched_with_stands_unless_export_says_otherwise(
    tmp_path: Path,
) -> None:
    """``[search] tie_margin`` (a ``tie_margin=`` keyword from Python) is stored with the spec:
    the export reads it, and ``--tie-margin`` on export still overrides it."""
    searched = export(tmp_path / "a", tie_margin=0.1)
    assert searched["tie_margin"] == 0.1 and searched["global_batch_size"] == 64
    overridden = export(tmp_path / "b", "--tie-margin", "0.05", tie_margin=0.1)
    assert overridden["tie_margin"] == 0.05 and overridden["global_batch_size"] == 128
