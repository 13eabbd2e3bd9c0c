"""The driver of a ``--backend jax`` study never imports TensorFlow (nor JAX, nor Keras): a whole
``tuner search`` runs in a fresh interpreter whose every import is audited, and what the driver
loaded is read at its end. The children (the workload check, the trials) are separate processes
with their own test (tests/e2e/test_jax_trial.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
from conftest import ONE_RUN_EACH, tuner_env, write_spec

from tuner.core.record import decode

AUDITED = ("tensorflow", "jax", "jaxlib", "keras")

AUDIT = textwrap.dedent(
    """
    import json, sys

    AUDITED = {audited!r}
    tried = []

    class Recorder:
        # Every import statement of an audited package reaches the meta path finders first.
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in AUDITED:
                tried.append(name)
            return None

    sys.meta_path.insert(0, Recorder())
    sys.argv = ["tuner", *{args!r}]
    from tuner.cli import main
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    loaded = sorted({{m.partition(".")[0] for m in sys.modules}} & set(AUDITED))
    print("AUDIT " + json.dumps({{"exit": code, "loaded": loaded, "tried": sorted(set(tried))}}))
    """
)


@pytest.mark.slow
def test_a_jax_search_driver_imports_no_framework(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "s.toml", name="nojax", base=128, multipliers="[1]", rules='["none"]'
    )
    args = [
        "search",
        "--spec",
        str(spec),
        "--backend",
        "jax",
        "--cpu-replicas",
        "2",
        "--epochs",
        "2",
        "--train-samples",
        "1024",
        "--no-baseline",
        "--no-noise-scale",
        *ONE_RUN_EACH,
        "--storage",
        "sqlite:///nojax.db",
        "--export",
        "rec.json",
    ]
    done = subprocess.run(
        [sys.executable, "-c", AUDIT.format(audited=AUDITED, args=args)],
        cwd=tmp_path,
        env=tuner_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("AUDIT ")]
    assert lines, (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
    audit = json.loads(lines[-1].removeprefix("AUDIT "))
    assert audit["exit"] == 0, done.stderr[-4000:]
    assert audit["loaded"] == [], audit
    # TensorFlow is not even looked for; jax and keras are looked for (never imported) by the
    # check that names the extra to install when they are missing.
    assert not [name for name in audit["tried"] if name.startswith("tensorflow")], audit
    assert set(audit["tried"]) <= {"jax", "keras"}, audit
    # The study really ran on JAX: its trial came from a JAX child.
    study = optuna.load_study(study_name="nojax", storage=f"sqlite:///{tmp_path / 'nojax.db'}")
    assert study.user_attrs["backend"] == "jax"
    [trial] = study.get_trials()
    assert decode(trial).status == "ok", trial.user_attrs
    assert decode(trial).result.backend == "jax"
    assert (tmp_path / "rec.json").exists()
