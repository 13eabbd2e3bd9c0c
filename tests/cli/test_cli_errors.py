"""Bad input: one clear line on stderr, exit code 2, no traceback, stored data untouched.

The fast cases run the app in this process (:func:`conftest.invoke_tuner`: an interpreter start
costs seconds); ``--debug`` and the slow cases run the real ``python -m tuner``
(:func:`conftest.run_tuner`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import optuna
import pytest
from conftest import invoke_tuner, run_tuner, sha256, write_spec
from trials import write_small_study

FAST_CASES = {
    "missing GPU": (["--gpus", "0,1"], "not present"),
    "malformed gpus (empty item)": (["--gpus", "0,,1"], "--gpus"),
    "malformed gpus (letter)": (["--gpus", "a"], "--gpus"),
    "malformed gpus (negative)": (["--gpus", "-1"], "--gpus"),
    "gpus and cpu replicas": (["--gpus", "0", "--cpu-replicas", "2"], "either"),
    "batch not divisible": (["--cpu-replicas", "2", "--base-batch-size", "33"], "divide"),
    "zero batch": (["--base-batch-size", "0"], "positive integer"),
    "negative epochs": (["--epochs", "-1"], "positive integer"),
    "one epoch": (["--epochs", "1"], "at least 2"),
    "unknown rule": (["--lr-rules", "none,cubic"], "unknown learning-rate rule"),
    "duplicate multipliers": (["--batch-multipliers", "1,2,2"], "more than once"),
    "bad multipliers": (["--batch-multipliers", "1,,2"], "--batch-multipliers"),
    "bad memory limit": (["--memory-limit", "12XB"], "--memory-limit"),
    "unknown storage scheme": (["--storage", "mongodb://localhost/x"], "unknown scheme"),
    "missing spec file": (["--spec", "nope.toml"], "does not exist"),
    "zero timeout": (["--trial-timeout", "0"], "--trial-timeout"),
    "NaN timeout": (["--trial-timeout", "nan"], "--trial-timeout"),
    "zero seeds": (["--seeds", "0"], "--seeds must be a positive integer"),
    "zero repeats": (["--max-repeats", "0"], "--max-repeats must be a positive integer"),
}
CHILD_CASES: set[str] = set()
"""Cases that the driver rejects only after the workload check (a child process): none since
the storage is checked first."""


@pytest.fixture(scope="session")
def stored_template(tmp_path_factory):
    """A SQLite file holding a study named ``small`` with finished trials, made without training
    (once: creating the schema takes a second)."""
    db = tmp_path_factory.mktemp("stored") / "small.db"
    return write_small_study(db)


@pytest.fixture()
def stored(stored_template, tmp_path):
    """A copy of :func:`stored_template` for one test, and its URL."""
    db = tmp_path / "copy.db"
    shutil.copy(stored_template, db)
    return db, f"sqlite:///{db}"


def _assert_clean_error(result, fragment: str, code: int = 2) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert fragment in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error:") or "Usage" in result.stderr


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(case, marks=pytest.mark.slow) if case in CHILD_CASES else case
        for case in sorted(FAST_CASES)
    ],
)
def test_bad_search_input_is_rejected_and_storage_untouched(case, stored, tmp_path):
    db, url = stored
    digest = sha256(db)
    args, fragment = FAST_CASES[case]
    if "--storage" not in args:
        args = [*args, "--storage", url, "--study-name", "small"]
    result = invoke_tuner("search", *args, cwd=tmp_path)
    _assert_clean_error(result, fragment)
    assert sha256(db) == digest


SPEC_CASES = {
    "NaN heartbeat": ({"heartbeat": float("nan")}, "search.heartbeat in s.toml must be 0 or a"),
    "tolerance of 1": ({"tolerance": 1}, "search.tolerance in s.toml must be in [0, 1)"),
    "cadence without a target": ({"eval_every_samples": 1024}, "give a target_loss"),
    "cadence a batch does not divide": (
        {"target_loss": 0.1, "eval_every_samples": 1000},
        "search.eval_every_samples 1000 is not a multiple of global batch 64",
    ),
}
"""Options ``tuner search`` takes from the spec only, refused as its flags were: one line naming
the spec key, before any child."""


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_bad_spec_only_options_are_rejected_and_storage_untouched(case, stored, tmp_path):
    db, url = stored
    digest = sha256(db)
    keys, fragment = SPEC_CASES[case]
    write_spec(tmp_path / "s.toml", base=64, **keys)
    args = ["--spec", "s.toml", "--cpu-replicas", "2", "--storage", url, "--study-name", "small"]
    result = invoke_tuner("search", *args, cwd=tmp_path)
    _assert_clean_error(result, fragment)
    assert sha256(db) == digest


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("this is [not toml", "not valid TOML"),
        ('[study]\nname = "x"\nbogus = 1\n', "unknown key study.bogus"),
        (
            '[study]\nname = "x"\n[workload]\nmodel = "a:b"\ndata = "a:c"\n[search]\n'
            'base_batch_size = "64"\nbatch_multipliers = [1]\nlr_rules = ["none"]\nbase_lr = 0.1\n'
            "epochs = 2\n",
            "positive integer",
        ),
        ("[nonsense]\n", "unknown section"),
    ],
)
def test_bad_spec_files(text, fragment, stored, tmp_path):
    db, url = stored
    digest = sha256(db)
    (tmp_path / "bad.toml").write_text(text)
    result = invoke_tuner("search", "--spec", "bad.toml", "--storage", url, cwd=tmp_path)
    _assert_clean_error(result, fragment)
    assert sha256(db) == digest


@pytest.mark.slow
@pytest.mark.parametrize(
    ("data", "model", "flags", "fragment"),
    [
        ("tuner_test_workloads:small_regression_data", "no_such_module:build", (), "no module"),
        # With --validate the validate checks' first child meets the broken data function, before
        # the workload check: the search stops there, nothing stored.
        (
            "tuner_test_workloads:raising_data",
            "tuner.workloads.regression:build_model",
            ("--validate",),
            "FileNotFoundError",
        ),
        (
            "tuner_test_workloads:mismatched_data",
            "tuner.workloads.regression:build_model",
            (),
            "does not fit",
        ),
    ],
)
def test_broken_workloads_are_bad_input(data, model, flags, fragment, stored, tmp_path):
    db, url = stored
    digest = sha256(db)
    spec = write_spec(tmp_path / "w.toml", name="small")
    spec.write_text(
        spec.read_text()
        .replace("tuner_test_workloads:small_regression_data", data)
        .replace("tuner.workloads.regression:build_model", model)
    )
    result = run_tuner(
        "search", "--spec", "w.toml", "--cpu-replicas", "2", "--storage", url, *flags,
        cwd=tmp_path,
    )  # fmt: skip
    _assert_clean_error(result, fragment)
    if flags:
        assert "validating the multi-replica training first" in result.stderr
    assert sha256(db) == digest


@pytest.mark.slow
def test_batch_larger_than_training_set(stored, tmp_path):
    db, url = stored
    digest = sha256(db)
    write_spec(tmp_path / "big.toml", base=4096, multipliers="[1, 2]")
    result = run_tuner(
        "search", "--spec", "big.toml", "--cpu-replicas", "2", "--storage", url, cwd=tmp_path
    )
    _assert_clean_error(result, "larger than the training set")
    assert sha256(db) == digest


def test_a_file_that_is_not_a_database(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a database\n")
    digest = sha256(db)
    for command in (["show"], ["export"]):
        result = invoke_tuner(*command, "--storage", f"sqlite:///{db}", cwd=tmp_path)
        _assert_clean_error(result, "is not a tuner/Optuna study database")
    assert sha256(db) == digest


def test_show_and_export_on_missing_storage_or_study(stored, tmp_path):
    db, url = stored
    digest = sha256(db)
    for command in ("show", "export"):
        missing_file = invoke_tuner(command, "--storage", "sqlite:///absent.db", cwd=tmp_path)
        _assert_clean_error(missing_file, "does not exist")
        assert not (tmp_path / "absent.db").exists()
        missing_study = invoke_tuner(
            command, "--storage", url, "--study-name", "nope", cwd=tmp_path
        )
        _assert_clean_error(missing_study, "no study named 'nope'")
    assert sha256(db) == digest


def test_export_without_a_complete_trial_is_a_runtime_failure(tmp_path):
    url = f"sqlite:///{tmp_path}/empty.db"
    study = optuna.create_study(
        study_name="empty", storage=url, directions=["minimize", "maximize"]
    )
    study.set_user_attr("spec", {"search": {"base_lr": 0.001, "base_batch_size": 64}})
    result = invoke_tuner("export", "--storage", url, "--study-name", "empty", cwd=tmp_path)
    _assert_clean_error(result, "no COMPLETE trial", code=1)


def test_the_real_command_is_one_clean_line_and_debug_shows_the_traceback(tmp_path):
    plain = run_tuner("show", "--storage", "sqlite:///absent.db", cwd=tmp_path)
    _assert_clean_error(plain, "does not exist")
    result = run_tuner("--debug", "show", "--storage", "sqlite:///absent.db", cwd=tmp_path)
    assert result.returncode == 2  # bad input, with or without the traceback
    assert "Traceback" in result.stderr and "does not exist" in result.stderr


def _corrupt(db):
    raw = bytearray(db.read_bytes())
    raw[:100] = b"\x00garbage" * 12 + b"\x00" * 4
    db.write_bytes(bytes(raw))


def test_a_corrupt_sqlite_file(stored, tmp_path):
    db, url = stored
    _corrupt(db)
    digest = sha256(db)
    for command in (["show"], ["export"]):
        result = invoke_tuner(*command, "--storage", url, "--study-name", "small", cwd=tmp_path)
        _assert_clean_error(result, "is not a tuner/Optuna study database")
    assert sha256(db) == digest


def test_search_into_a_corrupt_sqlite_file(stored, tmp_path):
    db, url = stored
    _corrupt(db)
    digest = sha256(db)
    result = invoke_tuner(
        "search", "--epochs", "2", "--storage", url, "--study-name", "small", cwd=tmp_path
    )
    _assert_clean_error(result, "is not a tuner/Optuna study database")
    assert sha256(db) == digest


def test_search_into_a_file_that_is_not_a_database(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a database\n")
    digest = sha256(db)
    write_spec(tmp_path / "s.toml")
    result = invoke_tuner(
        "search",
        "--spec",
        "s.toml",
        "--cpu-replicas",
        "2",
        "--storage",
        f"sqlite:///{db}",
        cwd=tmp_path,
    )
    _assert_clean_error(result, "is not a tuner/Optuna study database")
    assert sha256(db) == digest


@pytest.mark.parametrize("command", [["show"], ["search", "--cpu-replicas", "2"]])
def test_a_journal_that_is_not_a_journal(command, tmp_path):
    log = tmp_path / "study.log"
    log.write_text("not json at all\n")
    digest = sha256(log)
    result = invoke_tuner(*command, "--storage", f"journal:{log}", cwd=tmp_path)
    _assert_clean_error(result, "not an Optuna journal file")
    assert sha256(log) == digest


def test_an_unreachable_database_masks_the_password(tmp_path):
    url = "postgresql+psycopg://tuner:s3cret-pw@127.0.0.1:9/studies"
    for command in ("show", "export"):
        # A server out of reach is waited for: here a fifth of a second.
        result = invoke_tuner(command, "--storage", url, "--storage-wait", "0.2", cwd=tmp_path)
        _assert_clean_error(result, "cannot be opened: it cannot be reached", code=1)
        assert "s3cret-pw" not in result.stderr and "***" in result.stderr


@pytest.mark.parametrize("command", ["show", "export", "report", "dashboard"])
def test_the_reading_commands_wait_as_long_as_told(command, tmp_path):
    url = "postgresql+psycopg://tuner@127.0.0.1:9/studies"  # nothing listens on port 9
    started = time.monotonic()
    result = invoke_tuner(command, "--storage", url, "--storage-wait", "0", cwd=tmp_path)
    assert time.monotonic() - started < 25  # not the default 30 s
    _assert_clean_error(result, "still after waiting 0 s (--storage-wait)", code=1)
    assert "(or raise --storage-wait), then run the command again" in result.stderr
    refused = invoke_tuner(command, "--storage", url, "--storage-wait", "-1", cwd=tmp_path)
    _assert_clean_error(refused, "--storage-wait must be 0 or a positive number of seconds, got -1")


@pytest.mark.parametrize("url", ["sqlite:///afile/x.db", "journal:afile/x.log"])
def test_show_from_a_storage_folder_that_cannot_be_made(url, tmp_path):
    (tmp_path / "afile").write_text("a file, not a folder\n")
    result = invoke_tuner("show", "--storage", url, cwd=tmp_path)
    _assert_clean_error(result, "does not exist")


def test_search_into_a_storage_folder_that_cannot_be_made(tmp_path):
    (tmp_path / "afile").write_text("a file, not a folder\n")
    for url in ("sqlite:///afile/x.db", "journal:afile/x.log"):
        result = invoke_tuner(
            "search",
            "--cpu-replicas",
            "2",
            "--storage",
            url,
            "--batch-multipliers",
            "1",
            "--lr-rules",
            "none",
            cwd=tmp_path,
        )
        _assert_clean_error(result, "cannot create the folder")


@pytest.mark.slow
def test_resuming_on_other_devices_is_refused(small_study, tmp_path):
    work, _ = small_study
    db = tmp_path / "copy.db"
    shutil.copy(work / "small.db", db)
    url = f"sqlite:///{db}"
    digest = sha256(db)
    write_spec(tmp_path / "small.toml")
    result = run_tuner(
        "search",
        "--spec",
        "small.toml",
        "--cpu-replicas",
        "2",
        "--memory-limit",
        "512MiB",
        "--storage",
        url,
        cwd=tmp_path,
    )
    _assert_clean_error(result, "this run is on 2x cpu, cap 512 MiB per device")
    assert sha256(db) == digest


def test_the_users_text_is_printed_literally(tmp_path: Path) -> None:
    # Square brackets are rich markup: unescaped, "[search]" or "[b]" would vanish from the line.
    result = invoke_tuner("search", "--spec", "my[b]spec[search].toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "spec file my[b]spec[search].toml does not exist" in result.stderr
