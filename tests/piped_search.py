"""One real search, piped at 80 columns, read by three e2e files: ``test_same_training.py``
(grid points that train alike run once; ``--no-noise-scale``), ``test_input_reuse_real.py`` (the
input pipeline timed once per batch) and ``test_progress_columns.py`` (the log: the plan first,
every line within 80 columns; the stored machine load).

Real TensorFlow on two CPU replicas (the baseline on one), real SQLite: base batch 64, rules
``none`` and ``linear``, batches 64 and 128. At 64 the two rules give one learning rate (one
child, the other point ``same_as`` it); at 128 they train apart (two children, the second sent
the first one's input figure). Children: the check, the baseline and three trainings.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import built_once, run_tuner, tuner_env, write_spec

NAME = "piped"
DB = "piped.db"


def _search(work: Path) -> None:
    write_spec(
        work / "s.toml", name=NAME, base=64, multipliers="[1, 2]", rules='["none", "linear"]'
    )
    result = run_tuner(
        "search", "--spec", "s.toml", "--storage", f"sqlite:///{DB}", "--cpu-replicas", "2",
        "--baseline", "--no-noise-scale", "--seeds", "1", "--max-repeats", "1",
        cwd=work, env=tuner_env(COLUMNS="80"),
    )  # fmt: skip
    (work / "stdout.txt").write_text(result.stdout)
    (work / "stderr.txt").write_text(result.stderr)
    assert result.returncode == 0, result.stderr


_BUILT: list[Path] = []
"""The folder this process built or copied (``built_once`` builds once per run across
pytest-xdist's workers, but again on each call without them)."""


def piped_search(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy of the search's folder for one module (its ``piped.db``, ``stdout.txt`` and
    ``stderr.txt``) and the database's absolute URL."""
    if not _BUILT:
        _BUILT.append(built_once(tmp_path_factory, "piped-search", _search))
    mine = tmp_path_factory.mktemp("piped")
    shutil.copytree(_BUILT[0], mine, dirs_exist_ok=True)
    return mine, f"sqlite:///{mine / DB}"
