"""The development loop on a plain machine (issue 30): the tests of a server the machine lacks
(PostgreSQL, docker-compose, Chromium) skip with what to set up; in CI (``CI=true``) they run,
and fail loudly when .ci/run did not start the server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SERVERS, _skip_missing_servers

ROOT = Path(__file__).resolve().parents[1]


class Item:
    """Just what the hook reads of a collected test."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.added: list[pytest.MarkDecorator] = []

    def get_closest_marker(self, name: str) -> object | None:
        return name if name == self.marker else None

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.added.append(mark)


@pytest.mark.parametrize("marker", sorted(SERVERS))
@pytest.mark.parametrize("ci", ["true", None])
def test_a_missing_server_skips_outside_ci_only(
    monkeypatch: pytest.MonkeyPatch, marker: str, ci: str | None
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no docker-compose, no chromium
    monkeypatch.delenv("TUNER_TEST_POSTGRES", raising=False)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    item = Item(marker)
    _skip_missing_servers([item])  # type: ignore[list-item]
    if ci == "true":
        assert item.added == []  # CI runs them: a missing server fails them
    else:
        (mark,) = item.added
        assert mark.mark.kwargs["reason"] == SERVERS[marker][1]


def test_the_postgres_tests_skip_on_a_machine_without_its_url() -> None:
    """A real pytest run of the PostgreSQL tests with neither TUNER_TEST_POSTGRES nor CI set:
    every one skips with the reason, none errors trying to connect."""
    env = {k: v for k, v in os.environ.items() if k not in ("TUNER_TEST_POSTGRES", "CI")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-m",
            "postgres",
            "tests/e2e/test_postgres.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert " skipped" in run.stdout and " passed" not in run.stdout and "error" not in run.stdout
    assert "needs a PostgreSQL server: set TUNER_TEST_POSTGRES" in run.stdout
