"""The architecture page is a true map: it names every module under ``tuner/``, and every module
it names exists (docs/design/architecture.md, section "Every module")."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tuner"
PAGE = ROOT / "docs" / "design" / "architecture.md"


def named_modules() -> set[str]:
    """The module paths (relative to ``tuner/``) in the first column of the page's module tables."""
    text = PAGE.read_text()
    section = text.split("## Every module", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([\w/]+\.py)` \|", section, flags=re.M))


def real_modules() -> set[str]:
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_the_page_names_every_module() -> None:
    assert sorted(real_modules() - named_modules()) == []


def test_every_module_the_page_names_exists() -> None:
    assert sorted(named_modules() - real_modules()) == []


def test_the_check_reads_the_tables() -> None:
    # A parse that found nothing would pass the two tests above only if tuner/ were empty too.
    names = named_modules()
    assert "worker/backends/__init__.py" in names and len(names) > 100
