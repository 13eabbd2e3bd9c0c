"""Storage that must not be written: read commands never create, stamp or migrate a schema;
in-memory, damaged and read-only storages are refused with one line; and every check that needs
no TensorFlow comes before the first child process.

Real SQLite files, journal files and (``postgres``) a real PostgreSQL database; each test
compares the stored bytes (and modification time) before and after. The fast tier's guard
(tests/conftest.py) fails any of these tests that starts a trial child.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from conftest import GUARD_ENV, invoke_tuner, sha256, write_spec
from pg_databases import PG_ADMIN, fresh_database
from trials import write_small_study

from tuner.core.errors import ConfigError
from tuner.core.spec import check_study_name
from tuner.views.dashboard import serve

NOT_A_STUDY = "is not a tuner/Optuna study database"
READ_COMMANDS = [["show"], ["export"], ["report", "-o", "r.html"]]
IN_MEMORY = ["sqlite://", "sqlite:///:memory:", "sqlite:///file:mem?mode=memory&uri=true"]


@pytest.fixture(scope="module")
def study_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding study ``small`` with two finished trials (made once, no training)."""
    db = tmp_path_factory.mktemp("template") / "small.db"
    return write_small_study(db)


@pytest.fixture()
def study_db(study_template: Path, tmp_path: Path) -> Path:
    """A copy of :func:`study_template` for one test."""
    return Path(shutil.copy(study_template, tmp_path / "study.db"))


def fingerprint(path: Path) -> tuple[str, int, int]:
    """What must not change: the bytes, the size and the modification time."""
    stat = path.stat()
    return sha256(path), stat.st_size, stat.st_mtime_ns


def tables(db: Path) -> set[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {name for (name,) in rows}


def assert_refused(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    """Exit code 2, and the fragment on the one error line (no traceback)."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr


def assert_no_child_started() -> None:
    """The fast tier's guard logs every trial child it stopped: there must be none."""
    assert not Path(os.environ[GUARD_ENV]).exists()


def refused_by_dashboard(url: str) -> str:
    """The ConfigError that ``tuner dashboard`` meets before it would serve ``url``."""

    def served(address: str) -> None:
        raise AssertionError(f"the dashboard served {url} at {address}")

    with pytest.raises(ConfigError) as refused:
        serve(url, "127.0.0.1", 0, on_ready=served)
    return str(refused.value)


def search(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return invoke_tuner("search", "--cpu-replicas", "2", *args, cwd=cwd)


# --- 1. Read commands never write ---------------------------------------------------------------


def test_read_commands_leave_another_applications_database_alone(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO customers VALUES (1, 'Ada')")
    connection.close()
    before = fingerprint(db)
    url = f"sqlite:///{db}"
    for command in READ_COMMANDS:
        assert_refused(invoke_tuner(*command, "--storage", url, cwd=tmp_path), NOT_A_STUDY)
    assert NOT_A_STUDY in refused_by_dashboard(url)
    assert fingerprint(db) == before
    assert tables(db) == {"customers"}
    assert not (tmp_path / "r.html").exists()


def test_search_refuses_to_add_its_tables_to_another_applications_database(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    connection.close()
    before = fingerprint(db)
    for command in ("search", "probe"):
        result = invoke_tuner(
            command, "--cpu-replicas", "2", "--storage", f"sqlite:///{db}", cwd=tmp_path
        )
        assert_refused(result, "another application's tables")
    assert fingerprint(db) == before and tables(db) == {"customers"}


@pytest.mark.parametrize(
    ("scheme", "name"), [("sqlite:///", "empty.db"), ("journal:", "empty.log")]
)
def test_read_commands_leave_an_empty_file_empty(scheme: str, name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.touch()
    before = fingerprint(path)
    for command in READ_COMMANDS:
        result = invoke_tuner(*command, "--storage", f"{scheme}{name}", cwd=tmp_path)
        assert_refused(result, f"{scheme}{name} {NOT_A_STUDY}")
    assert NOT_A_STUDY in refused_by_dashboard(f"{scheme}{path}")
    assert fingerprint(path) == before and path.stat().st_size == 0


def test_read_commands_refuse_a_file_that_is_not_a_journal(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    log.write_text("my notes, not a journal\n")
    before = fingerprint(log)
    for command in READ_COMMANDS:
        result = invoke_tuner(*command, "--storage", f"journal:{log}", cwd=tmp_path)
        assert_refused(result, NOT_A_STUDY)
    assert NOT_A_STUDY in refused_by_dashboard(f"journal:{log}")
    assert fingerprint(log) == before


def test_read_commands_do_not_upgrade_an_older_schema(study_db: Path, tmp_path: Path) -> None:
    # An Optuna 3.0 database: schema v3.0.0.d, before the trials.study_id index of v3.2.0.a and
    # the heartbeat table (which RDBStorage's create_all would add on opening).
    with sqlite3.connect(study_db) as connection:
        connection.execute("DROP TABLE trial_heartbeats")
        connection.execute("DROP INDEX ix_trials_study_id")
        connection.execute("UPDATE alembic_version SET version_num = 'v3.0.0.d'")
        connection.execute("UPDATE version_info SET library_version = '3.0.0'")
    connection.close()
    before = fingerprint(study_db)
    url = f"sqlite:///{study_db}"
    for command in READ_COMMANDS:
        result = invoke_tuner(*command, "--storage", url, "--study-name", "small", cwd=tmp_path)
        assert_refused(result, "holds the schema of another Optuna version")
        assert "optuna storage upgrade" in result.stderr
    assert "another Optuna version" in refused_by_dashboard(url)
    assert fingerprint(study_db) == before
    assert "trial_heartbeats" not in tables(study_db)


def test_showing_and_reporting_a_study_change_no_byte(study_db: Path, tmp_path: Path) -> None:
    before = fingerprint(study_db)
    url = f"sqlite:///{study_db}"
    shown = invoke_tuner("show", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Study small" in shown.stdout
    report = invoke_tuner(
        "report", "--storage", url, "--study-name", "small", "-o", "r.html", cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr
    assert fingerprint(study_db) == before


def kill_a_writer_mid_transaction(db: Path) -> None:
    """Leave ``db`` as a writer killed inside a transaction leaves it: with a hot journal."""
    code = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "for i in range(500):\n"
        "    c.execute('INSERT INTO study_user_attributes (study_id, key, value_json)'\n"
        "              ' VALUES (1, ?, ?)', (f'k{i}', 'x' * 4000))\n"
        "print('inside', flush=True)\n"
        "time.sleep(60)\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE)
    assert writer.stdout is not None and writer.stdout.readline().strip() == b"inside"
    writer.kill()
    writer.wait()
    assert Path(f"{db}-journal").stat().st_size > 0


def test_a_study_left_by_a_killed_writer_can_be_shown(study_db: Path, tmp_path: Path) -> None:
    kill_a_writer_mid_transaction(study_db)
    url = f"sqlite:///{study_db}"
    shown = invoke_tuner("show", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Study small" in shown.stdout
    assert "k0" not in optuna.load_study(study_name="small", storage=url).user_attrs


# --- 2. In-memory storage ------------------------------------------------------------------------


@pytest.mark.parametrize("url", IN_MEMORY)
@pytest.mark.parametrize("command", ["search", "probe"])
def test_in_memory_storage_is_refused_before_any_child(
    command: str, url: str, tmp_path: Path
) -> None:
    result = invoke_tuner(command, "--cpu-replicas", "2", "--storage", url, cwd=tmp_path)
    assert_refused(result, "is in memory, but a study's results must outlive the process")
    assert "sqlite:///studies/tuner.db" in result.stderr
    assert "journal:studies/tuner.log" in result.stderr
    assert_no_child_started()


@pytest.mark.parametrize("url", IN_MEMORY)
def test_read_commands_on_in_memory_storage_are_refused(url: str, tmp_path: Path) -> None:
    for command in READ_COMMANDS:
        result = invoke_tuner(*command, "--storage", url, cwd=tmp_path)
        assert_refused(result, "is in memory, so it holds no study")
    assert "is in memory" in refused_by_dashboard(url)


# --- 3. Damaged and read-only storage ------------------------------------------------------------


def damage_middle_pages(db: Path) -> None:
    """Overwrite four pages in the middle of a real study database (its header stays intact)."""
    raw = bytearray(db.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    first = len(raw) // page // 3
    for number in range(first, first + 4):
        raw[number * page : (number + 1) * page] = bytes((i * 37 + 11) % 256 for i in range(page))
    db.write_bytes(bytes(raw))


def test_a_damaged_database_is_named_malformed(study_db: Path, tmp_path: Path) -> None:
    damage_middle_pages(study_db)
    before = fingerprint(study_db)
    url = f"sqlite:///{study_db}"
    for command in [*READ_COMMANDS, ["search", "--cpu-replicas", "2"]]:
        result = invoke_tuner(*command, "--storage", url, "--study-name", "small", cwd=tmp_path)
        assert_refused(result, f"storage file {study_db} is damaged: database disk image is")
    assert "malformed" in refused_by_dashboard(url)
    assert_no_child_started()
    assert fingerprint(study_db) == before


def test_search_into_a_read_only_storage_is_refused_before_any_child(
    study_db: Path, tmp_path: Path
) -> None:
    before = fingerprint(study_db)
    url = f"sqlite:///file:{study_db}?mode=ro&uri=true"
    result = search("--storage", url, "--study-name", "small", cwd=tmp_path)
    assert_refused(result, f"storage {url} is read-only (its URL opens it with mode=ro)")
    assert_no_child_started()
    assert fingerprint(study_db) == before


@pytest.fixture()
def read_only_study(study_db: Path, tmp_path: Path) -> Iterator[Path]:
    """The study in a folder nobody may write: a read-only bind mount (as root, where file modes
    do not stop writes), or a folder and file without write permission (anyone else)."""
    if os.geteuid() != 0:
        study_db.chmod(0o444)
        study_db.parent.chmod(0o555)
        yield study_db
        study_db.parent.chmod(0o755)
        return
    mount = tmp_path / "read-only"
    mount.mkdir()
    bound = subprocess.run(["mount", "--bind", str(study_db.parent), str(mount)], check=False)
    if bound.returncode != 0:
        pytest.skip("root can write any file: a read-only mount is needed, and mount is refused")
    try:
        locked = subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], check=False)
        if locked.returncode != 0:
            pytest.skip("a read-only remount is refused here")
        yield mount / study_db.name
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_search_into_a_database_nobody_may_write_is_refused_before_any_child(
    read_only_study: Path, tmp_path: Path
) -> None:
    before = fingerprint(read_only_study)
    result = search(
        "--storage", f"sqlite:///{read_only_study}", "--study-name", "small", cwd=tmp_path
    )
    assert_refused(result, "is read-only")
    assert "not writable" in result.stderr
    assert_no_child_started()
    assert fingerprint(read_only_study) == before


def test_export_from_a_read_only_storage_warns_and_prints_the_json(
    study_db: Path, tmp_path: Path
) -> None:
    before = fingerprint(study_db)
    url = f"sqlite:///file:{study_db}?mode=ro&uri=true"
    plain = invoke_tuner("export", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "warning" not in plain.stderr  # it writes nothing, so nothing is refused
    result = invoke_tuner(
        "export", "--storage", url, "--study-name", "small", "--update-note", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert '"global_batch_size": 512' in result.stdout
    assert "warning: the dashboard note and plots were not updated: the storage is read-only" in (
        result.stderr
    )
    assert "max length" not in result.stderr
    assert fingerprint(study_db) == before


# --- 4. Bad --output and --study-name ------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        (".", "is a directory"),
        ("missing/rec.json", "folder missing does not exist"),
        ("afile/rec.json", "afile is not a folder"),
    ],
)
@pytest.mark.parametrize("command", ["export", "report"])
def test_a_bad_output_is_refused_before_the_study_is_touched(
    command: str, output: str, fragment: str, study_db: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("a file, not a folder\n")
    before = fingerprint(study_db)
    url = f"sqlite:///{study_db}"
    result = invoke_tuner(
        command, "--storage", url, "--study-name", "small", "--output", output, cwd=tmp_path
    )
    assert_refused(result, fragment)
    assert fingerprint(study_db) == before  # export would have rewritten the note first
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("name", ["", "two words", "../up"])
def test_a_study_name_obeys_the_specs_rule(name: str, study_db: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must use letters, digits"):
        check_study_name(name, "--study-name")
    before = fingerprint(study_db)
    url = f"sqlite:///{study_db}"
    rule = "--study-name must use letters, digits, '.', '_' or '-' only"
    for command in ("search", "probe"):
        result = invoke_tuner(
            command, "--cpu-replicas", "2", "--storage", url, "--study-name", name, cwd=tmp_path
        )
        assert_refused(result, f"{rule}, got {name!r}")
    for command in READ_COMMANDS:  # no study can have that name
        result = invoke_tuner(*command, "--storage", url, "--study-name", name, cwd=tmp_path)
        assert_refused(result, rule)
    write_spec(tmp_path / "named.toml", name=name)
    result = search("--spec", "named.toml", "--storage", url, cwd=tmp_path)
    assert_refused(result, "study.name in named.toml must")
    assert_no_child_started()
    assert fingerprint(study_db) == before


# --- 5. Flag errors before any child -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--base-batch-size", "33"], "does not divide by 2 replicas"),
        (["--storage", "mongodb://host/db"], "unknown scheme"),
        (["--storage", "sqlite://"], "is in memory"),
        (["--storage", "journal:."], "needs a file path"),
        (["--storage", "journal:folder"], "storage path folder is not a file"),
        (["--storage", "journal:notes.txt"], "not an Optuna journal file"),
        (["--storage", "sqlite:///notes.txt"], NOT_A_STUDY),
        (["--export", "folder"], "--export folder is a directory"),
        (["--study-name", ""], "--study-name must use letters"),
    ],
)
def test_flag_errors_come_before_validate_starts_a_child(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("my notes\n")
    result = search("--validate", *args, cwd=tmp_path)
    assert_refused(result, fragment)
    assert "validating" not in result.stderr
    assert_no_child_started()
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"
    assert not (tmp_path / "studies").exists()


# --- PostgreSQL ----------------------------------------------------------------------------------


@pytest.fixture
def fresh_pg() -> Iterator[str]:
    """A new, empty database on the test server (tests/pg_databases.py)."""
    with fresh_database("tuner_ro") as url:
        yield url


def pg_objects(url: str) -> tuple[list[str], list[str]]:
    """The tables and the enum types (Optuna creates both) in the database at ``url``."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as connection:
            names = sqlalchemy.inspect(connection).get_table_names()
            enums = connection.exec_driver_sql("SELECT typname FROM pg_type WHERE typtype = 'e'")
            return names, [name for (name,) in enums]
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_read_commands_create_no_table_in_a_fresh_postgres_database(
    fresh_pg: str, tmp_path: Path
) -> None:
    for command in READ_COMMANDS:
        assert_refused(invoke_tuner(*command, "--storage", fresh_pg, cwd=tmp_path), NOT_A_STUDY)
    assert NOT_A_STUDY in refused_by_dashboard(fresh_pg)
    assert pg_objects(fresh_pg) == ([], [])


@pytest.mark.postgres
def test_a_refused_postgres_login_is_reported_before_any_child(tmp_path: Path) -> None:
    url = PG_ADMIN.replace("tuner:tuner@", "tuner:wrong-secret@")
    result = search("--storage", url, cwd=tmp_path)
    assert_refused(result, "password authentication failed")
    assert "wrong-secret" not in result.stderr and "tuner:***@" in result.stderr
    assert_no_child_started()
