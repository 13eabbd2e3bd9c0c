"""Opening storage: reading a URL (in memory, a SQLite ``file:`` URI, read-only), the reason
behind Optuna's storage errors, and several workers creating the same fresh database at once
(pure predicate, plus real SQLite files opened by concurrent processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import sqlalchemy.exc

from tuner.storage import (
    _is_schema_race,
    describe_storage_error,
    open_storage,
    storage_read_only,
)
from tuner.storage.places import locate


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


@pytest.mark.slow  # eight interpreters: seconds, so out of the fast tier (CI runs it)
def test_eight_processes_create_one_fresh_sqlite_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    code = f"from tuner.storage import open_storage; open_storage({url!r}, create=True)"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite+pysqlite:///:memory:",
        "sqlite:///file::memory:?cache=shared&uri=true",
        "sqlite:///file:mem?mode=memory&uri=true",
    ],
)
def test_every_in_memory_form_is_seen_as_in_memory(url: str) -> None:
    place = locate(url)
    assert place.in_memory and place.path is None


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///studies/tuner.db", "studies/tuner.db"),
        ("sqlite:////abs/tuner.db", "/abs/tuner.db"),
        ("sqlite:///file:studies/my%20study.db?mode=ro&uri=true", "studies/my study.db"),
        ("sqlite:///file:///abs/x.db?uri=true", "/abs/x.db"),
        ("journal:studies/tuner.log", "studies/tuner.log"),
    ],
)
def test_a_storage_url_names_its_file(url: str, path: str) -> None:
    place = locate(url)
    assert not place.in_memory and place.path == Path(path)


def test_a_sqlite_uri_opened_read_only_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    db.touch()
    assert storage_read_only(f"sqlite:///{db}") is None
    assert "mode=ro" in (storage_read_only(f"sqlite:///file:{db}?mode=ro&uri=true") or "")
    assert "immutable=1" in (storage_read_only(f"sqlite:///file:{db}?immutable=1&uri=true") or "")


def test_the_reason_behind_optunas_storage_error_is_shown() -> None:
    # Optuna wraps every failed commit in StorageInternalError ("... e.g. exceeding max length");
    # the database's own message is its cause.
    cause = sqlalchemy.exc.OperationalError(
        "INSERT", {}, Exception("attempt to write a readonly database")
    )
    try:
        raise optuna.exceptions.StorageInternalError("exceeding max length") from cause
    except optuna.exceptions.StorageInternalError as wrapped:
        reason = describe_storage_error(wrapped)
    assert reason.startswith("the storage is read-only (attempt to write a readonly database")
    assert "max length" not in reason


def test_a_study_in_a_folder_whose_name_needs_escaping_is_read(tmp_path: Path) -> None:
    # The read-only look is a SQLite URI: a space, '%' or '#' in the path must reach SQLite
    # as the same file Optuna opens.
    folder = tmp_path / "my 100% #1 runs"
    folder.mkdir()
    url = f"sqlite:///{folder / 'study.db'}".replace("%", "%25")
    optuna.create_study(study_name="s", storage=url)
    names = optuna.get_all_study_names(open_storage(url, create=False))
    assert names == ["s"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://:hunter2@host/db", "postgresql+psycopg://:***@host/db"),
        ("postgresql://u:hun@ter2@host/db", "postgresql://u:***@host/db"),
        ("postgresql://u:hunter2@host", "postgresql://u:***@host"),
        ("sqlite:///studies/a@b.db", "sqlite:///studies/a@b.db"),
    ],
)
def test_every_password_is_masked(url, shown):
    from tuner.storage import mask_password

    assert mask_password(url) == shown
