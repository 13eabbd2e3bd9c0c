"""The library calls of ``tuner probe`` and ``tuner validate`` check their options themselves: a
Python caller gets the same refusals as the CLI, before any spec is read or child started."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.core.errors import ConfigError
from tuner.driver import study as driver_study
from tuner.driver.options import ProbeOptions, ValidateOptions
from tuner.driver.search import probe, validate
from tuner.driver.validate import run as driver_validate


@pytest.fixture(autouse=True)
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing may run: a call that got past its checks fails the test."""

    def ran(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(driver_study, "probe_study", ran)
    monkeypatch.setattr(driver_validate, "run_validation", ran)


@pytest.mark.parametrize("options", [ProbeOptions(steps=0), ProbeOptions(resolution=0)])
def test_probe_refuses_steps_or_resolution_below_one(options: ProbeOptions) -> None:
    with pytest.raises(ConfigError, match="--steps and --resolution must be positive"):
        probe(options)


@pytest.mark.parametrize("options", [ValidateOptions(steps=0), ValidateOptions(batch_size=0)])
def test_validate_refuses_steps_or_batch_size_below_one(options: ValidateOptions) -> None:
    with pytest.raises(ConfigError, match="--steps and --batch-size must be positive"):
        validate(options)


def test_validate_checks_the_output_path_before_the_spec(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--output"):
        validate(ValidateOptions(spec=tmp_path / "missing.toml", output=tmp_path))
