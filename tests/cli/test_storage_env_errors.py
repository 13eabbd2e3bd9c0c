"""A bad ``TUNER_STORAGE`` or ``TUNER_STORAGE_FILE`` ends a command as any bad input does: one
line on stderr naming the variable, exit code 2, no usage block, nothing run or written."""

from __future__ import annotations

import pytest
from conftest import invoke_tuner, write_spec

from tuner.cli.options import STORAGE_ENV, STORAGE_FILE_ENV

COMMANDS = [["show"], ["export"], ["search", "--spec", "small.toml", "--cpu-replicas", "2"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("env", "content", "expected"),
    [
        ({STORAGE_FILE_ENV: "missing"}, None, f"cannot read {STORAGE_FILE_ENV}"),
        ({STORAGE_FILE_ENV: "secret"}, "", "is empty"),
        ({STORAGE_FILE_ENV: "secret"}, "hunter2\n", "does not hold a storage URL"),
        ({STORAGE_FILE_ENV: "secret", STORAGE_ENV: "sqlite:///x.db"}, "sqlite:///y.db", "not both"),
        ({STORAGE_ENV: "bogus://x"}, None, "unknown scheme"),
    ],
    ids=["file-missing", "file-empty", "file-no-url", "both-set", "env-bad-scheme"],
)
def test_a_bad_storage_variable_is_one_line_and_exit_2(
    tmp_path, monkeypatch, command, env, content, expected
):
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    write_spec(tmp_path / "small.toml")
    if content is not None:
        (tmp_path / "secret").write_text(content)
    for name, value in env.items():
        monkeypatch.setenv(name, str(tmp_path / value) if name == STORAGE_FILE_ENV else value)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = invoke_tuner(*command, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and expected in lines[0], lines
    assert "Usage:" not in result.stderr and "hunter2" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made
