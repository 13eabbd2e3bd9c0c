"""The guarded storage on a real PostgreSQL server: a database dropped or a table removed while a
search runs is one line naming what happened (StorageFaultError), not an outage waited out."""

from __future__ import annotations

import optuna
import psycopg
import pytest
from pg_databases import PG_ADMIN, fresh_database

from tuner.storage import StorageFaultError, open_storage
from tuner.storage.guarded import attach, storage_call

pytestmark = pytest.mark.postgres


def _admin() -> psycopg.Connection:
    libpq = PG_ADMIN.replace("postgresql+psycopg://", "postgresql://")
    return psycopg.connect(libpq, autocommit=True, connect_timeout=10)


def _study(url: str) -> optuna.Study:
    storage = open_storage(url, create=True, wait_s=5)
    study = optuna.create_study(study_name="s", storage=storage, directions=["minimize"])
    attach(study, storage)  # as tuner's opening does
    return study


def test_a_dropped_database_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNER_SPOOL_DIR", str(tmp_path))
    with fresh_database() as url:
        study = _study(url)
        name = url.rsplit("/", 1)[1]
        with _admin() as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            try:
                with pytest.raises(StorageFaultError, match="the database was dropped") as raised:
                    storage_call(study, study.ask)
            finally:
                admin.execute(f'CREATE DATABASE "{name}"')  # fresh_database drops it on leaving
        assert "still after waiting" not in str(raised.value)  # a fault, not an outage


def test_a_removed_table_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNER_SPOOL_DIR", str(tmp_path))
    with fresh_database() as url:
        study = _study(url)
        trial = storage_call(study, study.ask)
        libpq = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(libpq, autocommit=True) as db:
            db.execute("DROP TABLE trial_values")
        with pytest.raises(StorageFaultError, match="its tables were changed or removed"):
            storage_call(study, study.tell, trial, 1.0)
