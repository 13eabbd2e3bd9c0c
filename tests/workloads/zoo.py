"""Running a zoo setup end to end, for ``test_zoo.py`` and ``benchmarks/zoo_table.py``: ``tuner
search`` on two CPU replicas with a tiny budget, ``tuner export``, the exported config trained by
a fresh script (``train_fresh.py``: plain Keras), and ``tuner validate``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import run_tuner, tuner_env

from workloads.setups import Setup

HERE = Path(__file__).resolve().parent
STORAGE = "sqlite:///zoo.db"


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` (a CLI's one-line error), ``""`` when none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@dataclass
class Outcome:
    """What one setup's run gave: each step's exit code and last line, the trials' attributes,
    the fresh script's report, and the seconds each step took."""

    setup: Setup
    search_rc: int | None = None
    search_error: str = ""
    search_stderr: str = ""
    trials: list[dict[str, Any]] = field(default_factory=list)
    export_rc: int | None = None
    export_error: str = ""
    recommendation: dict[str, Any] | None = None
    fresh_rc: int | None = None
    fresh_error: str = ""
    fresh: dict[str, Any] | None = None
    validate_rc: int | None = None
    validate_line: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def search(setup: Setup, cwd: Path, outcome: Outcome) -> None:
    """``tuner search`` of the setup's spec (no baseline, one grid point) and its trials."""
    (cwd / "s.toml").write_text(setup.spec(setup.id))
    start = time.monotonic()
    result = run_tuner(
        "search", "--spec", "s.toml", "--storage", STORAGE, "--cpu-replicas", "2",
        "--no-baseline", cwd=cwd,
    )  # fmt: skip
    outcome.seconds["search"] = time.monotonic() - start
    outcome.search_rc, outcome.search_stderr = result.returncode, result.stderr
    outcome.search_error = "" if result.returncode == 0 else last_line(result.stderr)
    outcome.trials = stored_trials(cwd, setup.id)


def stored_trials(cwd: Path, name: str) -> list[dict[str, Any]]:
    """Each stored trial's state and user attributes (``[]`` when the study was never made)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if not (cwd / "zoo.db").exists():
        return []
    try:
        study = optuna.load_study(study_name=name, storage=f"sqlite:///{cwd}/zoo.db")
    except KeyError:
        return []
    return [{"state": t.state.name, **t.user_attrs} for t in study.get_trials()]


def export(setup: Setup, cwd: Path, outcome: Outcome) -> None:
    start = time.monotonic()
    result = run_tuner(
        "export", "--storage", STORAGE, "--study-name", setup.id, "--output", "rec.json", cwd=cwd
    )
    outcome.seconds["export"] = time.monotonic() - start
    outcome.export_rc = result.returncode
    if result.returncode == 0:
        outcome.recommendation = json.loads((cwd / "rec.json").read_text())
    else:
        outcome.export_error = last_line(result.stderr)


def train_fresh(setup: Setup, cwd: Path, outcome: Outcome) -> None:
    """The exported config trained one epoch by ``train_fresh.py`` in a fresh process."""
    flags = ["--hypermodel"] if setup.hypermodel else []
    flags.append("--compiled" if setup.compiled else f"--loss={setup.loss}")
    env = tuner_env(KERAS_BACKEND=setup.backend, TF_CPP_MIN_LOG_LEVEL="2")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(HERE / "train_fresh.py"), "rec.json", f"workloads.{setup.model}",
         f"workloads.{setup.data}", *flags],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    outcome.seconds["fresh"] = time.monotonic() - start
    outcome.fresh_rc = result.returncode
    reports = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    if result.returncode == 0 and reports:
        outcome.fresh = json.loads(reports[-1].removeprefix("REPORT "))
    else:
        outcome.fresh_error = last_line(result.stderr)


def validate(setup: Setup, cwd: Path, outcome: Outcome, steps: int = 8) -> None:
    """``tuner validate`` of the setup's spec on two CPU replicas, ``steps`` steps."""
    (cwd / "s.toml").write_text(setup.spec(setup.id))
    start = time.monotonic()
    result = run_tuner(
        "validate", "--spec", "s.toml", "--cpu-replicas", "2", "--steps", str(steps), cwd=cwd
    )
    outcome.seconds["validate"] = time.monotonic() - start
    outcome.validate_rc = result.returncode
    text = result.stdout + result.stderr
    summary = [line for line in text.splitlines() if "checks passed" in line or "FAIL" in line]
    outcome.validate_line = summary[-1].strip() if summary else last_line(result.stderr)


def run(
    setup: Setup, cwd: Path, *, with_validate: bool = False, with_fresh: bool = True
) -> Outcome:
    """Search, export and train fresh (each only when the step before succeeded; the fresh
    training only ``with_fresh``)."""
    outcome = Outcome(setup)
    search(setup, cwd, outcome)
    if outcome.search_rc == 0:
        export(setup, cwd, outcome)
        if outcome.export_rc == 0 and with_fresh:
            train_fresh(setup, cwd, outcome)
    if with_validate and setup.validate:
        validate(setup, cwd, outcome)
    return outcome


def noise(trial: dict[str, Any]) -> str:
    """The noise scale as a trial stored it: its value, ``skipped: why`` (the meter could not
    measure), or ``no value: note`` (measured, no estimate; or not measured, and why)."""
    if trial.get("gradient_noise_scale") is not None:
        return f"{trial['gradient_noise_scale']:.3g}"
    if trial.get("noise_scale_skipped"):
        return f"skipped: {trial['noise_scale_skipped']}"
    if trial.get("noise_scale_note"):
        return f"no value: {trial['noise_scale_note']}"
    return "nothing stored"


def noise_reason(trial: dict[str, Any]) -> str:
    """Why a trial has no noise scale (``""`` when it has one or says nothing)."""
    return str(trial.get("noise_scale_skipped") or trial.get("noise_scale_note") or "")
