"""How heavy the house is: the figures issue 43 ("a lighter house") sets targets for.

Counted from the source tree and from the command itself:

- lines in ``tuner/`` (every ``.py`` file, blank lines and docstrings included);
- the flags of ``tuner search`` (its ``--help``, less ``--help``);
- the modules that name one option's key (``lr_sweep_full``): the options table and its consumer;
- the stored attribute keys of a trial (``tuner.core.record.STORED_KEYS``) and the modules that
  read or write ``user_attrs``;
- imports of Optuna's private modules;
- the top-level modules of ``tuner/driver/``.

With ``--trace`` it also runs one default ``tuner search`` (the built-in workload, into a
temporary SQLite file) with a profile hook in every process (the driver, the fork server and the
trial children: a ``sitecustomize`` on ``PYTHONPATH``) and counts the tuner modules whose
functions ran: in the driver, in all processes, and those on the path a reader follows, the
modules that call into another tuner module (a leaf, called and returned from, is read by its
name). ``--quick`` passes ``--quick`` to the search (the same code path, fewer trainings).

Usage: python benchmarks/house.py [--trace] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUNER = ROOT / "tuner"

_HOOK = """
import os, sys, threading
_dir = os.environ["HOUSE_TRACE_DIR"]
_seen = set()

def _module(path):
    i = path.rfind("/tuner/")
    return path[i + 1:] if i >= 0 and "/site-packages/" not in path[:i] else None

def _hook(frame, event, arg):
    if event != "call" or frame.f_code.co_name == "<module>":
        return
    callee = _module(frame.f_code.co_filename)
    if callee is None:
        return
    caller = frame.f_back and _module(frame.f_back.f_code.co_filename)
    key = (os.getpid(), caller if caller != callee else None, callee)
    if key in _seen:
        return
    _seen.add(key)
    with open(os.path.join(_dir, "edges-%d.tsv" % os.getpid()), "a") as out:
        out.write("%s\\t%s\\n" % (key[1] or "", callee))

sys.setprofile(_hook)
threading.setprofile(_hook)
"""


def _python_files() -> list[Path]:
    return sorted(TUNER.rglob("*.py"))


def static_figures() -> dict[str, object]:
    files = _python_files()
    texts = {path: path.read_text() for path in files}
    help_text = subprocess.run(
        [sys.executable, "-m", "tuner", "search", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "TERM": "dumb"},
        check=True,
    ).stdout
    flags = set(re.findall(r"^\W*(?:-\w, )?(--[a-z][a-z-]*)", help_text, re.M)) - {"--help"}
    sys.path.insert(0, str(ROOT))
    from tuner.core.record import STORED_KEYS

    def naming(pattern: str) -> list[str]:
        return [str(p.relative_to(ROOT)) for p, text in texts.items() if re.search(pattern, text)]

    return {
        "lines in tuner/": sum(text.count("\n") for text in texts.values()),
        "modules in tuner/": len(files),
        "tuner search flags": len(flags),
        "modules naming lr_sweep_full": naming(r"lr_sweep_full"),
        "stored trial attribute keys": len(STORED_KEYS),
        "modules touching user_attrs": naming(r"user_attrs|set_user_attr"),
        "imports of Optuna private modules": naming(r"(from|import) optuna(\.\w+)*\._"),
        "driver/ top-level modules": len(
            [p for p in (TUNER / "driver").glob("*.py") if p.name != "__init__.py"]
        ),
    }


def traced_figures(quick: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(_HOOK)
        env = {
            **os.environ,
            "HOUSE_TRACE_DIR": tmp,
            "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT)]),
        }
        command = [sys.executable, "-m", "tuner", "search", "--storage", f"sqlite:///{tmp}/t.db"]
        search = subprocess.Popen(
            [*command, *(["--quick"] if quick else [])],
            env=env,
            cwd=tmp,
            stdout=subprocess.DEVNULL,
        )
        if search.wait() != 0:
            raise SystemExit(f"the search failed (exit {search.returncode})")
        edges: dict[int, set[tuple[str, str]]] = {}
        for path in Path(tmp).glob("edges-*.tsv"):
            pid = int(path.stem.split("-")[1])
            lines = path.read_text().splitlines()
            edges[pid] = {(a, b) for a, b in (line.split("\t") for line in lines)}
    driver = edges.get(search.pid, set())
    everywhere = set().union(*edges.values())

    def run(pairs: set[tuple[str, str]]) -> set[str]:
        return {callee for _, callee in pairs}

    def path(pairs: set[tuple[str, str]]) -> set[str]:
        return {caller for caller, _ in pairs if caller}

    return {
        "modules run by the driver": len(run(driver)),
        "modules run in any process": len(run(everywhere)),
        "modules on the reader's path (driver)": sorted(path(driver)),
        "modules on the reader's path (all processes)": len(path(everywhere)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true", help="also trace one default search")
    parser.add_argument("--quick", action="store_true", help="trace a --quick search")
    args = parser.parse_args()
    figures = static_figures()
    if args.trace:
        figures.update(traced_figures(args.quick))
    for name, value in figures.items():
        shown = f"{len(value)}: {', '.join(value)}" if isinstance(value, list) else value
        print(f"{name:45} {shown}")


if __name__ == "__main__":
    main()
