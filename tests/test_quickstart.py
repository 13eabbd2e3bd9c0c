"""The README's quickstart (issue 16): exactly two commands that work on a stock Debian/Ubuntu
Python (a virtual environment first, since such a Python refuses `pip install` outside one), the
second of which is what CI runs, word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the quickstart has no bash block"
    return [line.split("  #", 1)[0].strip() for line in block[1].splitlines() if line.strip()]


def test_the_quickstart_is_two_commands_in_a_virtual_environment() -> None:
    search, tests = quickstart_commands()
    venv = "python3 -m venv .venv && . .venv/bin/activate && "
    assert search.startswith(venv) and search.endswith("pip install -e . && tuner search")
    assert tests.startswith(venv) and tests.endswith("&& python3 -m pytest -q")


def test_ci_runs_the_readmes_test_command_word_for_word() -> None:
    _, tests = quickstart_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()


def test_every_install_line_uses_the_pypi_name() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for path in texts:
        for line in path.read_text(encoding="utf-8").splitlines():
            # `pip install "tuner[...]"` or `pip install tuner` would install PyPI's unrelated
            # project; a local path (".", "./[postgres]") installs this checkout.
            assert not re.search(r"pip install ['\"]?tuner\b", line), f"{path.name}: {line}"
