"""Opening storage when several workers create the same fresh database at once (pure predicate,
plus real SQLite files opened by concurrent processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy.exc

from tuner.storage import _is_schema_race


@pytest.mark.parametrize(
    ("error", "race"),
    [
        (
            sqlalchemy.exc.OperationalError(
                "CREATE", {}, Exception("table alembic_version already exists")
            ),
            True,
        ),
        (
            sqlalchemy.exc.ProgrammingError(
                "CREATE", {}, Exception('type "trialstate" already exists')
            ),
            True,
        ),
        (sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed")), True),
        (sqlalchemy.exc.OperationalError("SELECT", {}, Exception("database is locked")), False),
        (
            sqlalchemy.exc.OperationalError("OPEN", {}, Exception("unable to open database file")),
            False,
        ),
    ],
)
def test_a_schema_created_meanwhile_is_a_race_to_retry(error: Exception, race: bool) -> None:
    assert _is_schema_race(error) is race


def test_eight_processes_create_one_fresh_sqlite_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    code = f"from tuner.storage import open_storage; open_storage({url!r}, create=True)"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
