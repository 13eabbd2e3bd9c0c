"""``tuner dashboard``'s first step (issue 46): a tuner study made without the ``dashboard``
extra gets its note and plots before the page is served, or, where the storage cannot be
written, the one command that writes them."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tuner.storage import open_storage
from tuner.views import refresh as refresh_module
from tuner.views.refresh import unpublished, write_missing


def make(url: str, name: str, *, spec: bool = True) -> optuna.Study:
    study = optuna.create_study(study_name=name, storage=url, directions=["minimize", "maximize"])
    if spec:
        study.set_user_attr("spec", {"search": {"base_lr": 1e-3, "base_batch_size": 64}})
    return study


def test_the_missing_note_and_plots_are_written_once(tmp_path: Path) -> None:
    pytest.importorskip("optuna_dashboard")
    from optuna_dashboard import get_note

    url = f"sqlite:///{tmp_path / 'views.db'}"
    study = make(url, "bare")
    make(url, "not-tuners", spec=False)  # another tool's study: no tuner note on it
    storage = open_storage(url, create=False)
    assert unpublished(storage) == ["bare"]
    said: list[str] = []
    warned: list[str] = []
    write_missing(storage, url, say=said.append, warn=warned.append)
    assert said == ["wrote the dashboard note and plots of study bare"] and not warned
    assert "## tuner study `bare`" in get_note(study)
    assert unpublished(storage) == []
    write_missing(storage, url, say=said.append, warn=warned.append)
    assert len(said) == 1  # written once: a later dashboard leaves them as they are


def test_a_read_only_storage_says_the_one_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'views.db'}"
    make(url, "bare")
    import tuner.storage

    monkeypatch.setattr(tuner.storage, "storage_read_only", lambda url: "file mode r--r--r--")
    monkeypatch.setattr(refresh_module, "refresh", lambda *a, **k: pytest.fail("wrote"))
    warned: list[str] = []
    storage = open_storage(url, create=False)
    write_missing(storage, url, say=lambda line: None, warn=warned.append)
    (line,) = warned
    assert "\n" not in line and line.startswith("study bare has no tuner note or plots")
    assert line.endswith(
        f"tuner export --storage {url} --study-name bare --update-note writes them"
    )
