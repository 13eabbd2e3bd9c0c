"""tuner.search's bad input: one line (ConfigError, the CLI's exit-2 class) naming the keyword the
user typed (``epochs=``, not the CLI's ``--epochs``), before anything is written — no database,
no shipped function."""

from __future__ import annotations

from pathlib import Path

import pytest

import tuner
from tuner.core.errors import ConfigError
from tuner.core.options import named, naming
from tuner.workloads import regression


def storage(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/s.db"


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            {"max_repeat": 1},
            r"^tuner.search got an unknown option max_repeat=; did you mean max_repeats=\?$",
        ),
        ({"cpu_replicas": 2, "epochs": 1}, r"^epochs= must be at least 2, got 1"),
        ({"base_batch_size": -1}, r"^base_batch_size= must be a positive integer, got -1$"),
        (
            {"loss": object()},
            r"^loss= takes a Keras name such as 'mse'; .* compile it in your model",
        ),
        ({"batch_multipliers": "1,x"}, r"^batch_multipliers= "),
        # Each keyword's type checked as the CLI checks its flag: never a bare TypeError, and
        # never "no" taken for True.
        ({"cpu_replicas": "two"}, r"^cpu_replicas= takes an integer, got str 'two'$"),
        ({"quick": "no"}, r"^quick= takes True or False, got str 'no'$"),
        ({"baseline": "no"}, r"^baseline= takes True or False, got str 'no'$"),
        ({"heartbeat": "x"}, r"^heartbeat= takes a number, got str 'x'$"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(
    tmp_path: Path, options: dict[str, object], line: str
) -> None:
    with pytest.raises(ConfigError, match=line) as raised:
        tuner.search(
            model=lambda: None, data=regression.load_data, storage=storage(tmp_path), **options
        )
    assert "--" not in str(raised.value)  # the keyword the user typed, never the CLI's flag
    assert list(tmp_path.iterdir()) == []


def test_each_front_end_names_an_option_its_own_way() -> None:
    assert named("base_lr") == "--base-lr"  # the CLI's, and a library caller's by default
    with naming("search", keywords=True):
        assert named("base_lr") == "base_lr=" and named("heartbeat") == "heartbeat="
    with naming("search"):  # a flag, or the spec key of an option set in the spec only
        assert named("base_lr") == "--base-lr" and named("heartbeat") == "search.heartbeat"
    with naming(None, keywords=True, renamed={"storage": "storage_url"}):
        assert named("storage") == "storage_url="


def test_a_model_without_data_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs model= and data= \(or dataset=\)"):
        tuner.search(model=regression.build_model, storage=storage(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_load_study_names_its_keywords(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^storage_wait= must be 0 or a positive number"):
        tuner.load_study(storage(tmp_path), "s", storage_wait=-1)
    with pytest.raises(ConfigError, match=r"does not exist; .* or give storage_url=$") as missing:
        tuner.load_study(storage(tmp_path), "s")
    assert "--" not in str(missing.value) and list(tmp_path.iterdir()) == []


def test_an_outage_from_python_names_storage_wait() -> None:
    url = "postgresql+psycopg://u:p@127.0.0.1:9/db"  # nothing listens on port 9
    with pytest.raises(tuner.TunerError) as raised:
        tuner.load_study(url, "s", storage_wait=0)
    line = str(raised.value)
    assert "still after waiting 0 s (storage_wait=)" in line and "raise storage_wait=" in line
    assert "--" not in line and type(raised.value).__name__ == "StorageFaultError"


def test_a_refused_call_leaves_no_shipped_function_and_names_its_keyword(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused after its functions were shipped (an in-memory storage is known bad only when
    the search opens it): the folder it made is gone, and the line names ``storage=``."""
    monkeypatch.setenv("HOME", str(tmp_path))  # a server's shipments live in ~/.cache/tuner
    with pytest.raises(ConfigError, match=r"^storage= sqlite:///:memory: is in memory") as raised:
        tuner.search(model=lambda: None, data=lambda: None, storage="sqlite:///:memory:")
    assert "--" not in str(raised.value)
    assert not (tmp_path / ".cache" / "tuner" / "shipped").exists() or not any(
        (tmp_path / ".cache" / "tuner" / "shipped").rglob("*.pkl")
    )


def test_a_path_keyword_takes_a_str_as_everyone_passes_it() -> None:
    from tuner.api._search import checked

    assert checked("search", "export", "rec.json") == Path("rec.json")
    assert checked("lr-find", "plot", Path("lr.html")) == Path("lr.html")
    assert checked("search", "batch_multipliers", [1, 2]) == [1, 2]
    assert checked("search", "base_lr", 1) == 1  # an int is a number
