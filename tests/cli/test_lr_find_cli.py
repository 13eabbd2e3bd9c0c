"""``tuner lr-find``'s bad input: one error line, exit code 2, no traceback, before any child
starts (the app runs in this process); and ``tuner.lr_find``'s own refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_tuner

import tuner
from tuner.core.errors import ConfigError

CASES = {
    "unknown flag": (["--lr-max", "1"], "No such option: --lr-max"),
    "zero min": (["--min-lr", "0"], "--min-lr must be a positive learning rate"),
    "NaN max": (["--max-lr", "nan"], "--max-lr must be a positive learning rate"),
    "max below min": (["--min-lr", "1e-2", "--max-lr", "1e-3"], "must be above --min-lr"),
    "too few steps": (["--steps", "5"], "--steps must be at least 20"),
    "figure kind": (["--plot", "lr.pdf"], "give a .html or .png file name"),
    "figure folder": (["--plot", "missing/lr.html"], "does not exist"),
    "batch and replicas": (["--cpu-replicas", "2", "--base-batch-size", "33"], "divide"),
    "missing spec": (["--spec", "nope.toml"], "does not exist"),
    "not a number": (["--min-lr", "small"], "Invalid value for '--min-lr'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    args, expected = CASES[case]
    result = invoke_tuner("lr-find", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "rror" in line]
    assert len(errors) == 1, result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_api_refuses_an_unknown_option_with_the_nearest() -> None:
    with pytest.raises(ConfigError, match="unknown option max_rate=; did you mean max_lr="):
        tuner.lr_find(model="m:build", data="m:data", max_rate=1.0)


def test_the_api_needs_a_model_and_data() -> None:
    with pytest.raises(ConfigError, match="needs model= and data="):
        tuner.lr_find(cpu_replicas=2)


PYTHON_CASES = {
    "zero min": ({"min_lr": 0.0}, "min_lr= must be a positive learning rate"),
    "NaN max": ({"max_lr": float("nan")}, "max_lr= must be a positive learning rate"),
    "max below min": ({"min_lr": 1e-2, "max_lr": 1e-3}, "max_lr= (0.001) must be above min_lr="),
    "too few steps": ({"steps": 5}, "steps= must be at least 20"),
    "figure kind": ({"plot": "lr.pdf"}, "plot= lr.pdf: give a .html or .png file name"),
    "output folder": ({"output": "missing/lr.json"}, "output= missing/lr.json: folder"),
    "spec field": ({"base_batch_size": -1}, "base_batch_size= must be a positive integer"),
}


@pytest.mark.parametrize("case", sorted(PYTHON_CASES))
def test_the_api_names_the_keyword_not_the_flag(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same refusals from ``tuner.lr_find``: the keyword a Python user typed (``max_lr=``),
    not the CLI's flag (``--max-lr``), which the CLI cases above keep."""
    monkeypatch.chdir(tmp_path)
    options, expected = PYTHON_CASES[case]
    with pytest.raises(ConfigError) as raised:
        tuner.lr_find(model="m:build", data="m:data", cpu_replicas=2, **options)
    assert expected in str(raised.value)
    assert "--" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []
