"""Shared helpers (run the real ``tuner`` CLI in a child process, write specs, hash files) and
the test tiers.

Tiers: ``-m "not slow"`` is the fast tier. It must start no trial child (``python -m
tuner.worker``: no TensorFlow training, no workload check); every fast test runs with a guard
that makes such a child fail at start and the test with it. Tests that use the real studies
(``small_study``, ``wide_study``) are marked slow here; any other test that starts a child carries
``@pytest.mark.slow`` itself. Tests marked ``gpu`` are skipped where no NVIDIA GPU is visible.

JAX in this process (and in every child that inherits its environment) sees two host CPU devices:
``XLA_FLAGS`` gains ``--xla_force_host_platform_device_count=2`` here, at import time, before any
test imports jax (the flag is read once, when jax starts its CPU backend).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tuner.core.protocol import FORK_SERVER_MODULE, WORKER_MODULE

TESTS = Path(__file__).resolve().parent

HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"


def _two_host_devices(flags: str) -> str:
    """``flags`` with two host CPU devices asked for, unless it already names a count."""
    return flags if HOST_DEVICES_FLAG in flags else f"{flags} {HOST_DEVICES_FLAG}=2".strip()


os.environ["XLA_FLAGS"] = _two_host_devices(os.environ.get("XLA_FLAGS", ""))


def _compile_once() -> None:
    """Write the bytecode of tuner's and the tests' modules, once per run (in the controller, not
    in each xdist worker). An editable install has none, and where ``PYTHONDONTWRITEBYTECODE`` is
    set (as on our machines) no process writes it: every child and every ``tuner`` command the
    suite starts (over a thousand) would compile tuner's ~200 modules from source again."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import compileall

    for folder in (TESTS.parent / "tuner", TESTS):
        compileall.compile_dir(folder, quiet=2, workers=1)


_compile_once()

# pytest-xdist's workers (and a pytest started in the background by a shell) run with SIGINT
# ignored, and a child inherits an ignored signal across exec: a search a test sends Ctrl-C to
# would never see it. A handled signal is reset to its default in the child instead.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SMALL_REGRESSION = """
[study]
name = "{name}"

[workload]
model = "tuner.workloads.regression:build_model"
data = "tuner_test_workloads:small_regression_data"
loss = "mse"
optimizer = "adam"

[search]
base_batch_size = {base}
batch_multipliers = {multipliers}
lr_rules = {rules}
base_lr = 1e-3
epochs = 2
seeds = 1
max_repeats = 1
"""


WIDE = """
[study]
name = "wide"

[workload]
model = "tuner_test_workloads:wide_model"
data = "tuner_test_workloads:wide_data"

[search]
base_batch_size = 512
batch_multipliers = [1, 2, 8, 16]
lr_rules = ["none", "sqrt"]
base_lr = 1e-3
epochs = 2
seeds = 1
max_repeats = 1
"""
"""A model wide enough to run out of memory under a 128 MiB cap at global batch 4096."""

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


STUDY_FIXTURES = frozenset({"small_study", "wide_study"})
"""Session fixtures that run real searches: a test that uses one (even indirectly) is slow."""

GUARD_ENV = "TUNER_TEST_CHILD_LOG"
COUNT_ENV = "TUNER_TEST_CHILD_COUNT"
SITECUSTOMIZE = f"""
# Written by tests/conftest.py and first on PYTHONPATH in every test. In a fast test a trial child
# must not start; in a slow one each child notes its start (the children the suite starts, by test).
import os, sys, time

_MODULES = ("{WORKER_MODULE}", "{FORK_SERVER_MODULE}")  # a trial child; a fork server (imports too)
_argv = list(getattr(sys, "orig_argv", sys.argv))
_worker = any(a == "-m" and b in _MODULES for a, b in zip(_argv, _argv[1:]))
if (_worker or any("-m" + m in _argv for m in _MODULES)) and os.environ.get("{GUARD_ENV}"):
    with open(os.environ["{GUARD_ENV}"], "a", encoding="utf-8") as _log:
        _log.write(" ".join(_argv) + "\\n")
    sys.stderr.write("refused by the fast-tier guard (tests/conftest.py): a trial child\\n")
    os._exit(97)
if _worker and os.environ.get("{COUNT_ENV}"):
    _test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    _args = " ".join(_argv[_argv.index("-m") + 1:])
    _line = "\\t".join([_test, f"{{time.time():.1f}}", _args])
    with open(os.environ["{COUNT_ENV}"], "a", encoding="utf-8") as _log:
        _log.write(_line + "\\n")
"""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark slow what uses a real study; skip ``gpu`` tests when no NVIDIA GPU is visible, and
    the tests of servers this machine lacks (:func:`_skip_missing_servers`). Slow tests run
    first: pytest-xdist's workers then steal the fast ones at the end, rather than one worker
    waiting out another's last long test."""
    for item in items:
        if STUDY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    _skip_missing_servers(items)
    needs_gpu = [item for item in items if item.get_closest_marker("gpu")]
    if needs_gpu:
        missing = _why_no_gpu()
        if missing:
            skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU visible to JAX: {missing}")
            for item in needs_gpu:
                item.add_marker(skip)


SERVERS = {
    "postgres": (
        lambda: bool(os.environ.get("TUNER_TEST_POSTGRES")),
        "needs a PostgreSQL server: set TUNER_TEST_POSTGRES to its URL "
        "(postgresql+psycopg://user:pass@host/db; .ci/run starts one)",
    ),
    "docker": (
        lambda: shutil.which("docker-compose") is not None,
        "needs docker-compose (apt-get install docker-compose; .ci/run does)",
    ),
    "browser": (
        lambda: shutil.which("chromium") is not None,
        "needs Debian's Chromium (apt-get install chromium; .ci/run does)",
    ),
}
"""Per marker: whether this machine has the server its tests use, and the reason to skip."""


def _skip_missing_servers(items: list[pytest.Item]) -> None:
    """On a development machine the tests of a server it lacks skip, saying what to set up; in
    CI (``CI=true``) they run, and fail loudly when the server is missing."""
    if os.environ.get("CI") == "true":
        return
    for marker, (present, reason) in SERVERS.items():
        marked = [item for item in items if item.get_closest_marker(marker)]
        if marked and not present():
            for item in marked:
                item.add_marker(pytest.mark.skip(reason=reason))


def _why_no_gpu() -> str:
    """Why JAX would see no NVIDIA GPU here (``""`` when it would), found cheaply: ``nvidia-smi``
    and the installed distributions, without importing jax into the pytest process."""
    from tuner.driver.setup.devices import visible_gpus

    if not visible_gpus():
        return "nvidia-smi shows none (or CUDA_VISIBLE_DEVICES hides them)"
    if not _jax_has_cuda():
        return "the installed jax has no CUDA plugin (jax-cudaNN-plugin)"
    return ""


def _jax_has_cuda() -> bool:
    """Whether a CUDA build of JAX is installed: a ``jax-cudaNN-plugin`` (JAX 0.4.30 on) or,
    before plugins, a ``jaxlib`` whose version names CUDA."""
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if re.fullmatch(r"jax-cuda\d+-(plugin|pjrt)", name):
            return True
        if name == "jaxlib" and "cuda" in (dist.version or ""):
            return True
    return False


@pytest.fixture(scope="session")
def _child_guard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the guard's ``sitecustomize.py``."""
    folder = tmp_path_factory.mktemp("child-guard")
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder


def children_log(basetemp: Path) -> Path:
    """The file every slow test's trial children note their start in, one per test run (shared
    by pytest-xdist's workers, whose own base folders lie inside the run's)."""
    root = basetemp.parent if "PYTEST_XDIST_WORKER" in os.environ else basetemp
    return root / "children.tsv"


@pytest.fixture(scope="session", autouse=True)
def _children_noted(_child_guard: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every trial child the run starts, the session fixtures' searches included, notes its start
    in :func:`children_log` (the suite's summary counts them): the guard's ``sitecustomize.py``
    is first on every child's ``PYTHONPATH``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(_child_guard), prepend=os.pathsep)
        patch.setenv(COUNT_ENV, str(children_log(tmp_path_factory.getbasetemp())))
        yield


@pytest.fixture(autouse=True)
def _fast_tests_start_no_trial_child(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, _child_guard: Path
) -> Iterator[None]:
    """In a test not marked slow, a trial child (inherited environment) refuses to start, and the
    test errors naming the child; slow tests run unguarded."""
    if request.node.get_closest_marker("slow"):
        yield
        return
    log = _child_guard / f"{uuid.uuid4().hex}.log"
    monkeypatch.setenv(GUARD_ENV, str(log))
    yield
    if log.exists():
        pytest.fail(
            "a test not marked slow started a trial child (mark it @pytest.mark.slow):\n"
            + log.read_text(),
            pytrace=False,
        )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """How many trial children the run started, and the tests that started the most."""
    if "PYTEST_XDIST_WORKER" in os.environ or not hasattr(config, "_tmp_path_factory"):
        return
    log = children_log(config._tmp_path_factory.getbasetemp())
    if not log.exists():
        return
    by_test: dict[str, int] = {}
    for line in log.read_text().splitlines():
        test = line.split("\t", 1)[0]
        by_test[test] = by_test.get(test, 0) + 1
    most = sorted(by_test.items(), key=lambda item: -item[1])[:10]
    terminalreporter.write_sep("=", f"{sum(by_test.values())} trial children started ({log})")
    for test, count in most:
        terminalreporter.write_line(f"{count:5d}  {test}")


def tuner_env(**extra: str) -> dict[str, str]:
    """The environment for a ``tuner`` child: test workloads importable, no GPU."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["COLUMNS"] = "200"
    env.update(extra)
    return env


ONE_RUN_EACH = ("--seeds", "1", "--max-repeats", "1")
"""Flags that turn off seed runs and racing: each costs real children, so a search in a test
runs without them unless the test names ``--seeds`` or ``--max-repeats`` itself."""
BASELINE_FLAGS = frozenset({"--baseline", "--no-baseline", "--quick", "--budget"})
"""A search that names none of these runs without the single-device baseline (``--no-baseline``):
a child of its own in every search, which only the tests that read it (``--baseline``) pay for."""


def one_run_each(args: tuple[str, ...] | list[str]) -> list[str]:
    """``args`` with :data:`ONE_RUN_EACH` added to a ``search`` that does not set them, and
    ``--no-baseline`` to one that names none of :data:`BASELINE_FLAGS`."""
    args = list(args)
    if "search" not in args:
        return args
    if not {"--seeds", "--max-repeats"} & set(args):
        args += ONE_RUN_EACH
    if not BASELINE_FLAGS & set(args):
        args.append("--no-baseline")
    return args


def run_tuner(
    *args: str, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tuner ARGS`` and return the completed process (text output); a search
    runs without seeds and racing unless ``args`` set them (:func:`one_run_each`)."""
    return subprocess.run(
        [sys.executable, "-m", "tuner", *one_run_each(args)],
        cwd=cwd,
        env=env or tuner_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def invoke_tuner(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the ``tuner`` app in this process (no interpreter start: the fast tier's way) in the
    environment of :func:`tuner_env`, and return what :func:`run_tuner` would: the exit code,
    stdout, and stderr with the traceback of an uncaught exception, as Python would print it."""
    from typer.testing import CliRunner

    from tuner.cli.app import app

    env = {key: tuner_env()[key] for key in ("PYTHONPATH", "CUDA_VISIBLE_DEVICES", "COLUMNS")}
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(app, one_run_each(args), env=env)
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["tuner", *args], result.exit_code, result.stdout, stderr)


def write_spec(
    path: Path,
    name: str = "small",
    base: int = 256,
    multipliers: str = "[1, 2]",
    rules: str = '["none", "linear", "sqrt"]',
    **search: object,
) -> Path:
    """Write the small regression spec with the given grid, and ``search``'s keys set in its
    ``[search]`` table (``heartbeat=1``: the options ``tuner search`` takes from the spec only)."""
    text = SMALL_REGRESSION.format(name=name, base=base, multipliers=multipliers, rules=rules)
    path.write_text(
        text + "".join(f"{key} = {toml_value(value)}\n" for key, value in search.items())
    )
    return path


def toml_value(value: object) -> str:
    """``value`` as TOML: a bool, a number, a string or a list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def sha256(path: Path) -> str:
    """The file's SHA-256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


OWNER_ENV = "TUNER_TEST_OWNER"
"""Set for the length of each test to a token of its own: every process the test starts inherits
it (``tuner_env`` copies this process's environment), a trial child orphaned by a killed driver
included, so that the test's end can find them all."""


@pytest.fixture(autouse=True)
def _ends_what_it_started(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every process a test started is gone when the test ends, passed or failed: a test that
    times out waiting for a search must not leave the search and its children (~900 MB each)
    running beside the rest of the suite. Session and module fixtures are set up before this
    one, so the servers and browsers they start do not carry the token."""
    token = uuid.uuid4().hex
    monkeypatch.setenv(OWNER_ENV, token)
    yield
    left = processes_of(token)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = processes_of(token)


def processes_of(token: str) -> list[int]:
    """The living processes (not zombies) whose environment carries ``token`` as
    :data:`OWNER_ENV`, this one excepted."""
    wanted = f"{OWNER_ENV}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """A folder that ``make`` fills, built once per test run even when pytest-xdist's workers
    each ask for it (CI runs two): the first builds it under a lock, every worker gets its own
    copy, so that a test that writes to it cannot disturb another worker's tests."""
    mine = tmp_path_factory.mktemp(name)
    if "PYTEST_XDIST_WORKER" not in os.environ:
        make(mine)
        return mine
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / f"built-once-{name}"
    with FileLock(f"{shared}.lock"):
        if not (shared / ".built").exists():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            make(shared)
            (shared / ".built").touch()
    shutil.copytree(shared, mine, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".built"))
    return mine


@pytest.fixture(scope="session")
def small_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real finished study (2 batch sizes × 3 rules, 2 CPU replicas) in SQLite: (dir, url)."""

    def make(work: Path) -> None:
        write_spec(work / "small.toml")
        result = run_tuner(
            "search",
            "--spec",
            "small.toml",
            "--cpu-replicas",
            "2",
            "--storage",
            "sqlite:///small.db",
            "--export",
            "rec.json",
            "--baseline",
            cwd=work,
        )
        assert result.returncode == 0, result.stderr

    return built_once(tmp_path_factory, "small-study", make), "sqlite:///small.db"


def search_wide(cwd: Path, db: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``tuner search`` of ``cwd/wide.toml`` on 2 CPU replicas capped at 128 MiB each."""
    return run_tuner(
        "search",
        "--spec",
        "wide.toml",
        "--cpu-replicas",
        "2",
        "--memory-limit",
        "128MiB",
        "--storage",
        f"sqlite:///{db}",
        *extra,
        cwd=cwd,
    )


@pytest.fixture(scope="session")
def wide_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real study with out-of-memory trials (cap 128 MiB per device, 2 CPU replicas):
    512 and 1024 train, 4096 runs out of memory, 8192 is implied; no single-device baseline (what
    its tests read is the grid's trials). Returns (dir, url)."""

    def make(work: Path) -> None:
        (work / "wide.toml").write_text(WIDE)
        result = search_wide(work, "wide.db", "--export", "rec.json", "--no-baseline")
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr

    return built_once(tmp_path_factory, "wide-study", make), "sqlite:///wide.db"


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright (``.ci/run`` installs both)."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


def save_screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """Screenshot the page into ``tmp_path``; also into ``$TUNER_SCREENSHOTS`` when set (the
    README's images are made this way)."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000, "a blank screenshot"
    if os.environ.get("TUNER_SCREENSHOTS"):
        target = Path(os.environ["TUNER_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target / name), full_page=False)
    return path
