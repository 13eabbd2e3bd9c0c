"""What the test suite spends its time on: the costliest test files and tests of one pytest run,
with the trial children each started.

Reads the run's JUnit XML (``pytest --junitxml=FILE``; ``.ci/run`` passes ``PYTEST_ADDOPTS``
through) and, where given, the children log the suite writes (``children.tsv`` in pytest's base
temporary folder: one line per trial child started, by test; see ``tests/conftest.py``), and
prints Markdown tables: the files and the tests by seconds, each with its children, and the
totals. With ``--before FILE`` a second JUnit XML is set beside the first (its file seconds in a
column of their own).

Usage: python benchmarks/suite_costs.py JUNIT.xml [--children children.tsv] [--before OLD.xml]
       [--top 30]
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET
from pathlib import Path


def durations(junit: Path) -> dict[str, float]:
    """Seconds per test id (``path::name``; setup, call and teardown together)."""
    found: dict[str, float] = collections.defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        path = path.rsplit("/", 1)[0] if "/Test" in path else path
        found[f"{path}.py::{case.get('name')}"] += float(case.get("time", 0))
    return dict(found)


def children(log: Path | None) -> collections.Counter[str]:
    """Trial children started per test id (``children.tsv``'s first column, ``path::name``)."""
    counts: collections.Counter[str] = collections.Counter()
    if log is None:
        return counts
    for line in log.read_text().splitlines():
        counts[line.split("\t", 1)[0]] += 1
    return counts


def by_file(per_test: dict[str, float]) -> dict[str, float]:
    files: dict[str, float] = collections.defaultdict(float)
    for test, seconds in per_test.items():
        files[test.split("::", 1)[0]] += seconds
    return dict(files)


def table(
    rows: dict[str, float], kids: collections.Counter[str], top: int, before: dict[str, float]
) -> list[str]:
    head = "| seconds | children |" + (" before (s) |" if before else "") + " |"
    lines = [head, "|---:|---:|" + ("---:|" if before else "") + "---|"]
    for name, seconds in sorted(rows.items(), key=lambda item: -item[1])[:top]:
        count = sum(n for test, n in kids.items() if test == name or test.startswith(name + "::"))
        old = f" {before[name]:.0f} |" if name in before else (" - |" if before else "")
        lines.append(f"| {seconds:.0f} | {count} |{old} `{name}` |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("--children", type=Path)
    parser.add_argument("--before", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    per_test = durations(args.junit)
    kids = children(args.children)
    before = durations(args.before) if args.before else {}
    print(f"{len(per_test)} tests, {sum(per_test.values()) / 60:.1f} test-minutes", end="")
    print(f", {sum(kids.values())} trial children" if kids else "")
    print("\n## Files\n")
    print("\n".join(table(by_file(per_test), kids, args.top, by_file(before))))
    print("\n## Tests\n")
    print("\n".join(table(per_test, kids, args.top, before)))


if __name__ == "__main__":
    main()
