"""Running a zoo setup end to end, for ``test_zoo.py`` and ``benchmarks/zoo_table.py``: ``tuner
search`` on two CPU replicas with a tiny budget that also exports the recommended config
(``--export``), the export trained by a fresh script (``train_fresh.py``: plain Keras; in a process
of its own, or by one :class:`FreshTrainers` server per backend), and ``tuner validate``."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import OWNER_ENV, run_tuner, tuner_env

from tuner.core.record import decode
from workloads.setups import Setup

HERE = Path(__file__).resolve().parent
STORAGE = "sqlite:///zoo.db"


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` (a CLI's one-line error), ``""`` when none."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@dataclass
class Outcome:
    """What one setup's run gave: each step's exit code and last line, the trials' attributes,
    the fresh script's report, and the seconds each step took."""

    setup: Setup
    search_rc: int | None = None
    search_error: str = ""
    search_stderr: str = ""
    trials: list[dict[str, Any]] = field(default_factory=list)
    export_rc: int | None = None
    export_error: str = ""
    recommendation: dict[str, Any] | None = None
    fresh_rc: int | None = None
    fresh_error: str = ""
    fresh: dict[str, Any] | None = None
    validate_rc: int | None = None
    validate_line: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def search(setup: Setup, cwd: Path, outcome: Outcome) -> None:
    """``tuner search`` of the setup's spec (no baseline, one grid point) and its trials; the
    search exports the recommended config (``--export rec.json``: the same recommendation of the
    stored study that ``tuner export`` writes, without a second ``tuner`` process)."""
    (cwd / "s.toml").write_text(setup.spec(setup.id))
    start = time.monotonic()
    result = run_tuner(
        "search", "--spec", "s.toml", "--storage", STORAGE, "--cpu-replicas", "2",
        "--no-baseline", "--export", "rec.json", cwd=cwd,
    )  # fmt: skip
    outcome.seconds["search"] = time.monotonic() - start
    outcome.search_rc, outcome.search_stderr = result.returncode, result.stderr
    outcome.search_error = "" if result.returncode == 0 else last_line(result.stderr)
    outcome.trials = stored_trials(cwd, setup.id)
    if result.returncode == 0:
        exported = cwd / "rec.json"
        outcome.export_rc = 0 if exported.exists() else 1
        if exported.exists():
            outcome.recommendation = json.loads(exported.read_text())
        else:
            outcome.export_error = "the search exited 0 but wrote no rec.json"


def stored_trials(cwd: Path, name: str) -> list[dict[str, Any]]:
    """Each stored trial's state and user attributes (``[]`` when the study was never made)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if not (cwd / "zoo.db").exists():
        return []
    try:
        study = optuna.load_study(study_name=name, storage=f"sqlite:///{cwd}/zoo.db")
    except KeyError:
        return []
    return [{"state": t.state.name, **decode(t).flat} for t in study.get_trials()]


def export(setup: Setup, cwd: Path, outcome: Outcome) -> None:
    """``tuner export`` of the setup's stored study to ``rec.json`` (``run`` exports in the
    search instead)."""
    start = time.monotonic()
    result = run_tuner(
        "export", "--storage", STORAGE, "--study-name", setup.id, "--output", "rec.json", cwd=cwd
    )
    outcome.seconds["export"] = time.monotonic() - start
    outcome.export_rc = result.returncode
    if result.returncode == 0:
        outcome.recommendation = json.loads((cwd / "rec.json").read_text())
    else:
        outcome.export_error = last_line(result.stderr)


def fresh_argv(setup: Setup) -> list[str]:
    """``train_fresh.py``'s arguments for the setup's export ``rec.json``."""
    flags = ["--hypermodel"] if setup.hypermodel else []
    if setup.compiled:
        flags.append("--compiled")
    else:  # a serialized loss: as the export names it (compile.loss)
        flags.append("--loss=exported" if setup.serialized_loss else f"--loss={setup.loss}")
    return ["rec.json", f"workloads.{setup.model}", f"workloads.{setup.data}", *flags]


def fresh_env(backend: str) -> dict[str, str]:
    return tuner_env(KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")


def train_fresh(
    setup: Setup, cwd: Path, outcome: Outcome, trainers: FreshTrainers | None = None
) -> None:
    """The exported config trained one epoch by ``train_fresh.py``: in a fresh process of its
    own, or by ``trainers``' plain-Keras server for the setup's backend."""
    start = time.monotonic()
    if trainers is not None:
        outcome.fresh_rc, outcome.fresh, outcome.fresh_error = trainers.train(setup, cwd)
        outcome.seconds["fresh"] = time.monotonic() - start
        return
    result = subprocess.run(
        [sys.executable, str(HERE / "train_fresh.py"), *fresh_argv(setup)],
        cwd=cwd, env=fresh_env(setup.backend), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    outcome.seconds["fresh"] = time.monotonic() - start
    outcome.fresh_rc = result.returncode
    reports = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    if result.returncode == 0 and reports:
        outcome.fresh = json.loads(reports[-1].removeprefix("REPORT "))
    else:
        outcome.fresh_error = last_line(result.stderr)


class FreshTrainers:
    """One ``train_fresh.py --serve`` process per Keras backend, started when first asked: each
    setup's export is trained by plain Keras in a process that imports nothing of tuner's, and
    the zoo pays Python's start and the framework's import once per backend rather than once per
    setup. A server that fails to answer within ``timeout_s`` is killed (the next setup starts
    another). :meth:`close` ends them all."""

    def __init__(self, folder: Path, timeout_s: float = 600) -> None:
        self.folder = folder
        self.timeout_s = timeout_s
        self.servers: dict[str, subprocess.Popen[bytes]] = {}

    def server(self, backend: str) -> subprocess.Popen[bytes]:
        running = self.servers.get(backend)
        if running is not None and running.poll() is None:
            return running
        env = fresh_env(backend)
        env.pop(OWNER_ENV, None)  # outlives the test that starts it; close() ends it
        log = open(self.folder / f"fresh-{backend}.log", "ab")  # noqa: SIM115 (the child's)
        with log:
            started = subprocess.Popen(
                [sys.executable, str(HERE / "train_fresh.py"), "--serve"],
                cwd=self.folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log,
            )  # fmt: skip
        self.servers[backend] = started
        return started

    def train(self, setup: Setup, cwd: Path) -> tuple[int, dict[str, Any] | None, str]:
        """(exit code, report, error line) as the fresh script's own run gives them."""
        server = self.server(setup.backend)
        assert server.stdin is not None and server.stdout is not None
        request = {"cwd": str(cwd), "argv": fresh_argv(setup)}
        try:
            server.stdin.write((json.dumps(request) + "\n").encode())
            server.stdin.flush()
        except OSError as exc:
            self.stop(setup.backend)
            return 1, None, f"the fresh-training server is gone: {exc}"
        line = self.answer(server)
        if line is None:
            self.stop(setup.backend)
            return 1, None, f"no answer from the fresh-training server within {self.timeout_s} s"
        kind, _, body = line.partition(" ")
        if kind == "REPORT":
            return 0, json.loads(body), ""
        return 1, None, str(json.loads(body).get("error", body))

    def answer(self, server: subprocess.Popen[bytes]) -> str | None:
        """The server's next ``REPORT``/``FAILED`` line (other output skipped); ``None`` when it
        ends or runs past the timeout."""
        assert server.stdout is not None
        deadline = time.monotonic() + self.timeout_s
        fd = server.stdout.fileno()
        buffer = b""
        while True:
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                text = line.decode(errors="replace").strip()
                if text.startswith(("REPORT ", "FAILED ")):
                    return text
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            buffer += chunk

    def stop(self, backend: str) -> None:
        server = self.servers.pop(backend, None)
        if server is None:
            return
        with contextlib.suppress(OSError):
            server.kill()
        server.wait(timeout=30)
        for stream in (server.stdin, server.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        for backend in list(self.servers):
            self.stop(backend)


def validate(setup: Setup, cwd: Path, outcome: Outcome, steps: int = 8) -> None:
    """``tuner validate`` of the setup's spec on two CPU replicas, ``steps`` steps."""
    (cwd / "s.toml").write_text(setup.spec(setup.id))
    start = time.monotonic()
    result = run_tuner(
        "validate", "--spec", "s.toml", "--cpu-replicas", "2", "--steps", str(steps), cwd=cwd
    )
    outcome.seconds["validate"] = time.monotonic() - start
    outcome.validate_rc = result.returncode
    text = result.stdout + result.stderr
    summary = [line for line in text.splitlines() if "checks passed" in line or "FAIL" in line]
    outcome.validate_line = summary[-1].strip() if summary else last_line(result.stderr)


def run(
    setup: Setup,
    cwd: Path,
    *,
    with_validate: bool = False,
    with_fresh: bool = True,
    trainers: FreshTrainers | None = None,
) -> Outcome:
    """Search (which exports) and train fresh (only when the search and its export succeeded,
    and ``with_fresh``; by ``trainers`` when given, else in a process of its own)."""
    outcome = Outcome(setup)
    search(setup, cwd, outcome)
    if outcome.export_rc == 0 and with_fresh:
        train_fresh(setup, cwd, outcome, trainers)
    if with_validate and setup.validate:
        validate(setup, cwd, outcome)
    return outcome


def noise(trial: dict[str, Any]) -> str:
    """The noise scale as a trial stored it: its value, ``skipped: why`` (the meter could not
    measure), or ``no value: note`` (measured, no estimate; or not measured, and why)."""
    if trial.get("gradient_noise_scale") is not None:
        return f"{trial['gradient_noise_scale']:.3g}"
    if trial.get("noise_scale_skipped"):
        return f"skipped: {trial['noise_scale_skipped']}"
    if trial.get("noise_scale_note"):
        return f"no value: {trial['noise_scale_note']}"
    return "nothing stored"


def noise_reason(trial: dict[str, Any]) -> str:
    """Why a trial has no noise scale (``""`` when it has one or says nothing)."""
    return str(trial.get("noise_scale_skipped") or trial.get("noise_scale_note") or "")
