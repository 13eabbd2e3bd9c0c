"""Opening a storage out of reach (issue 29): an outage is waited for, bounded, with the guard's
two lines; what waiting cannot mend (a wrong password, host, database or URL) stays one line and
exit 2 at once. Real connections where a real error can be had without a server (a closed port,
an unknown host, a bad URL, a locked SQLite file); the driver's words for authentication
failures, which need a configured server, as the driver spells them."""

from __future__ import annotations

import logging
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc
from optuna.study import StudyDirection

import tuner.storage as reach_module
from tuner.core.errors import ConfigError
from tuner.storage import StorageFaultError, check_storage, open_storage
from tuner.storage.faults import classify_opening
from tuner.storage.guarded import guard_of, storage_call
from tuner.storage.places import locate


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once closed


def _refused_url() -> str:
    return f"postgresql+psycopg://tuner@127.0.0.1:{_closed_port()}/postgres"


def _driver_error(message: str) -> sqlalchemy.exc.OperationalError:
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception(message))


PG = locate("postgresql+psycopg://tuner@db.example:5432/studies")


@pytest.mark.parametrize(
    "message",
    [
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: Connection '
        "refused Is the server running on that host and accepting TCP/IP connections?",
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: timeout expired',
        'connection to server at "10.0.0.5", port 5432 failed: FATAL: the database system is '
        "starting up",
        "FATAL: the database system is shutting down",
        "FATAL: sorry, too many clients already",
        "database is locked",
    ],
)
def test_an_outage_at_opening_is_waited_for(message):
    assert classify_opening(_driver_error(message), PG).outage


@pytest.mark.parametrize(
    "message",
    [
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL: '
        'password authentication failed for user "tuner"',
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: '
        "fe_sendauth: no password supplied",
        "failed to resolve host 'db.exmaple': [Errno -2] Name or service not known",
        'could not translate host name "db.exmaple" to address: Name or service not known',
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL: '
        'database "studeis" does not exist',
        'connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL: '
        'role "tunr" does not exist',
        'invalid dsn: invalid connection option "sslmod"',
    ],
)
def test_a_wrong_url_user_password_host_or_database_is_not_waited_for(message):
    assert not classify_opening(_driver_error(message), PG).outage


def test_a_closed_port_is_waited_for_then_one_line(caplog):
    url = _refused_url()
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, "tuner.storage"),
        pytest.raises(StorageFaultError) as raised,
    ):
        check_storage(url, create=True, wait_s=1.5)
    assert time.monotonic() - started >= 1.5
    line = str(raised.value)
    assert f"storage {url} cannot be opened: it cannot be reached (" in line
    assert "Connection refused" in line and "still after waiting 2 s (--storage-wait)" in line
    assert "start the database server (or raise --storage-wait)" in line
    (waiting,) = [r.getMessage() for r in caplog.records]
    assert waiting.startswith(f"storage {url}: it cannot be reached (")
    assert waiting.endswith("; waiting up to 2 s for it (--storage-wait)")


def test_no_wait_with_storage_wait_zero():
    with pytest.raises(StorageFaultError, match="still after waiting 0 s"):
        check_storage(_refused_url(), create=True, wait_s=0)


def test_reading_waits_its_own_bound(monkeypatch, caplog):
    monkeypatch.setattr(reach_module, "READING_WAIT_S", 0.5)
    with (
        caplog.at_level(logging.WARNING, "tuner.storage"),
        pytest.raises(StorageFaultError) as raised,
    ):
        open_storage(_refused_url(), create=False)
    assert "--storage-wait" not in str(raised.value) + caplog.text  # show/export: no such flag
    assert str(raised.value).endswith("start the database server, then run the command again")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://tuner@no-such-host.invalid:5432/postgres",
        "postgresql+nosuchdriver://tuner@127.0.0.1/postgres",
        "postgresql+psycopg://tuner@127.0.0.1:notaport/postgres",
    ],
)
def test_a_wrong_host_or_url_fails_at_once(url):
    started = time.monotonic()
    with pytest.raises(ConfigError, match="cannot open storage"):
        check_storage(url, create=True, wait_s=60)
    assert time.monotonic() - started < 30  # not the 60 s bound


def _lock_for(path: Path, seconds: float) -> threading.Thread:
    """Another connection holds ``path``'s lock for ``seconds`` (from now on)."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")

    def release() -> None:
        time.sleep(seconds)
        holder.execute("COMMIT")
        holder.close()

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def test_a_lock_longer_than_the_urls_timeout_is_waited_for_at_opening(tmp_path, caplog):
    url = f"sqlite:///{tmp_path}/l.db?timeout=0.2"  # SQLite gives up after 0.2 s, tuner does not
    open_storage(url, create=True).engine.dispose()
    holder = _lock_for(tmp_path / "l.db", 1.5)
    with caplog.at_level(logging.WARNING, "tuner.storage"):
        check_storage(url, create=True, wait_s=30)
    holder.join()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert "database is locked" in said[0] and "waiting up to 30 s" in said[0]
    assert said[1].startswith(f"storage {url} is back after ")


def test_a_lock_longer_than_the_urls_timeout_is_waited_for_mid_search(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db?timeout=0.2"
    storage = open_storage(url, create=True, wait_s=30)
    said: list[str] = []
    guard_of(storage).notify = said.append
    holder = _lock_for(tmp_path / "l.db", 1.5)
    # a write, one of tuner's storage calls: waits for the lock
    storage_call(storage, storage.create_new_study, [StudyDirection.MINIMIZE], "s")
    holder.join()
    assert len(said) == 2 and "database is locked" in said[0], said
    assert " is back after " in said[1]


def test_a_lock_past_the_bound_names_what_to_do(tmp_path):
    url = f"sqlite:///{tmp_path}/l.db?timeout=0.2"
    open_storage(url, create=True).engine.dispose()
    holder = _lock_for(tmp_path / "l.db", 2)
    with pytest.raises(StorageFaultError) as raised:
        check_storage(url, create=False, wait_s=0.5)
    holder.join()
    assert "database is locked" in str(raised.value)
    assert f"end the process that holds it locked (`fuser {tmp_path}/l.db` names it)" in str(
        raised.value
    )


@pytest.mark.parametrize("timeout", ["abc", "-1", "inf"])
def test_a_bad_lock_timeout_is_bad_input(tmp_path, timeout):
    with pytest.raises(ConfigError, match=f"timeout={timeout} is not a number of seconds"):
        check_storage(f"sqlite:///{tmp_path}/l.db?timeout={timeout}", create=True)


def test_a_config_error_of_tuners_own_is_not_waited_for(tmp_path):
    (tmp_path / "notes.db").write_text("not a database")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="is not a tuner/Optuna study database"):
        check_storage(f"sqlite:///{tmp_path}/notes.db", create=False, wait_s=60)
    assert time.monotonic() - started < 30


def _failing_commit(cause: Exception) -> type:
    """An RDB storage class whose opening fails as Optuna's does when a commit fails (the version
    row): a StorageInternalError raised from the driver's error."""
    import optuna

    class Storage:
        def __init__(self, *args: object, **kwargs: object) -> None:
            try:
                raise cause
            except Exception as exc:
                raise optuna.exceptions.StorageInternalError("the commit failed") from exc

    return Storage


def test_a_commit_cut_by_an_outage_while_opening_is_waited_for(tmp_path, monkeypatch):
    # The PostgreSQL soak: a worker restarted while the server shut down met Optuna's
    # StorageInternalError from its version-row commit, and said "internal error".
    import optuna

    locked = sqlalchemy.exc.OperationalError("INSERT", {}, Exception("database is locked"))
    monkeypatch.setattr(optuna.storages, "RDBStorage", _failing_commit(locked))
    started = time.monotonic()
    with pytest.raises(StorageFaultError, match=r"database is locked.*still after waiting"):
        open_storage(f"sqlite:///{tmp_path}/l.db", create=True, wait_s=1)
    assert time.monotonic() - started >= 1  # waited, as for any outage


def test_a_commit_cut_by_a_schema_race_while_opening_is_tried_again(tmp_path, monkeypatch):
    import optuna

    raced = sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("duplicate key"))
    opened: list[int] = []
    real = optuna.storages.RDBStorage

    def storage_class(*args: Any, **kwargs: Any) -> Any:
        opened.append(1)
        return (_failing_commit(raced) if len(opened) == 1 else real)(*args, **kwargs)

    monkeypatch.setattr(optuna.storages, "RDBStorage", storage_class)
    storage = open_storage(f"sqlite:///{tmp_path}/r.db", create=True)
    assert len(opened) == 2
    storage.engine.dispose()


def test_a_call_answered_without_the_server_does_not_say_it_is_back(tmp_path):
    """While one call waits out an outage, a call Optuna answers from its cache (a finished
    trial) runs no statement and says nothing: "is back after 3 s" came while PostgreSQL was
    still down, then "cannot be reached" again (issue 44). A statement the server runs does say
    it, once (and clears the outage for every thread)."""
    url = f"sqlite:///{tmp_path}/l.db?timeout=0.2"
    storage = open_storage(url, create=True, wait_s=30)
    said: list[str] = []
    guard_of(storage).notify = said.append
    holder = _lock_for(tmp_path / "l.db", 1.5)
    waiting = threading.Thread(
        target=storage_call,
        args=(storage, storage.create_new_study, [StudyDirection.MINIMIZE], "s"),
    )
    waiting.start()
    while not said:
        time.sleep(0.05)
    storage_call(storage, lambda: None)  # no statement: the server may still be down
    assert len(said) == 1, said
    holder.join()
    waiting.join()
    assert len(said) == 2 and " is back after " in said[1], said
