"""Soak: a study with 3 workers under random faults, on SQLite (15 grid points) and on PostgreSQL
(12).

Faults, chosen by a seeded RNG (the seed is printed; ``TUNER_SOAK_SEED`` replays one): faults
inside trial children at random grid points (``TUNER_TEST_FAULT``; on SQLite one of each kind:
segfault, abort, exit without a result, a result that is not JSON, an exception, and a hang past
``--trial-timeout``; on PostgreSQL two segfaults: the timeout is the driver's, whatever the
storage, and its 60 s would be most of that run), SIGKILLs of workers at random moments
mid-trial (each restarted at once, as a scheduler would), one SIGSTOP of a worker for longer than
the heartbeat grace, then SIGCONT, and two storage outages of ``OUTAGE_S``, longer than the
heartbeat grace, which the workers wait out (``[search] storage_wait``), each saying so: on
SQLite the file locked by another process, past the lock timeout the URL gives SQLite
(``?timeout=2``); on PostgreSQL the test's private server stopped and started again.
The study must end (if the workers left anything unsettled, a last ``tuner search`` after the
grace period settles it) with every grid point settled once (each fault classified by its kind,
every other point ok, none measured twice more than a claim race allows), nothing RUNNING, no
process or temp folder of any trial left, and an intact database; a result stored as finished
never changes or vanishes, whatever is killed (workers sharing SQLite at its default lock
timeout without an outage: tests/e2e/test_reliability.py). The figures go to stdout and, with
``TUNER_SOAK_REPORT=FILE``, as one JSON line appended to FILE.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy
from conftest import run_tuner, tuner_env, write_spec
from optuna.trial import TrialState
from procs import child_pids, finished_trials, load, wait_gone
from sqlalchemy import text
from test_storage_outages import PrivateServer, private_pg  # noqa: F401  (the fixture)

from tuner.core.configurations import grid_point, status_of, unique_trials
from tuner.core.record import decode
from tuner.core.trials import is_settled

pytestmark = pytest.mark.slow

RULES = ["none", "linear", "sqrt"]
SQLITE_SIZES = 5  # 15 grid points: 6 with a child fault, 9 ok ones for its 5 other faults to meet
POSTGRES_SIZES = 4  # 12: PostgreSQL's multi-worker path is also in test_postgres; CI's budget
FAULTS = {  # a fault injected into a trial child: the status and error its grid point ends with
    "segfault": ("crashed", "SIGSEGV"),
    "abort": ("crashed", "SIGABRT"),
    "exit": ("error", "without a result"),
    "garbage": ("error", "not JSON"),
    "raise": ("error", "fault injected"),
    "hang": ("timeout", "killed"),
}


def grid(sizes: int) -> set[tuple[int, str]]:
    """The soak's grid points: ``sizes`` global batches (256, 512, ...) × the rules."""
    return {(256 * k, r) for k in range(1, sizes + 1) for r in RULES}


HEARTBEAT_S = 1  # grace period: 3 heartbeats
OUTAGE_S = 6  # past the grace period: heartbeats fail, workers stop claiming trials and wait
SQLITE_LOCK_TIMEOUT_S = 2  # the URL's: a lock held longer reaches the guard (default 60 s)
TRIAL_TIMEOUT_S = int(os.environ.get("TUNER_SOAK_TRIAL_TIMEOUT", 60))
"""The injected hang's bound; the workload check honours it too: ~15 s in CI, twice that beside
another test's children (the suite's other worker), so 60 s leaves it room on a busy machine.
A machine busier than that needs more: ``TUNER_SOAK_TRIAL_TIMEOUT``."""
WORKERS = 3


@dataclass
class Soak:
    """The workers of one soak run and what was done to them."""

    cwd: Path
    url: str
    args: list[str]
    env: dict[str, str]
    hang: tuple[int, str] | None
    workers: list[subprocess.Popen[str]] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    outputs: list[tuple[int, str]] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    logs: dict[int, Path] = field(default_factory=dict)
    outage: Callable[[], None] | None = None
    """Make the storage go away for ``OUTAGE_S`` and come back (``None``: no outages)."""
    finished: dict[int, tuple[str, object]] = field(default_factory=dict)
    """Every trial seen finished so far: number -> (state, values)."""

    def start(self) -> None:
        # Output to files, not pipes: nobody reads a pipe while the soak runs.
        log = self.cwd / f"worker-{len(self.workers) + len(self.outputs) + len(self.killed)}.log"
        with log.open("w") as handle:
            worker = subprocess.Popen(
                [sys.executable, "-m", "tuner", "search", *self.args],
                cwd=self.cwd,
                env=tuner_env(**self.env),
                stdout=handle,
                stderr=subprocess.STDOUT,
                text=True,
            )
        self.workers.append(worker)
        self.logs[worker.pid] = log

    def live(self) -> list[subprocess.Popen[str]]:
        return [w for w in self.workers if w.poll() is None]

    def mid_trial(
        self, rng: random.Random, spare_the_hang: bool = True
    ) -> subprocess.Popen[str] | None:
        """A live worker whose trial child is running, if any; with ``spare_the_hang``, none whose
        trial hangs (killed or stopped, its retry would hang ``TRIAL_TIMEOUT_S`` more: a killed
        worker's hung trial is tests/e2e/test_orphans.py's and test_reliability's)."""
        spared = self.hang_workers() if spare_the_hang else set()
        busy = [w for w in self.live() if w.pid not in spared and child_pids(w.pid)]
        return rng.choice(busy) if busy else None

    def hang_workers(self) -> set[int]:
        """The pids of the workers running a trial at the hang's grid point: after an outage
        longer than the grace, a worker that took the point over runs it beside the first one."""
        if self.hang is None:
            return set()
        try:
            running = load(self.url).get_trials(states=(TrialState.RUNNING,))
        except KeyError:
            return set()
        return {
            int(worker.rpartition(":")[2])
            for trial in running
            if grid_point(trial) == self.hang
            and (worker := decode(trial).configuration.worker) is not None
        }

    def kill(self, worker: subprocess.Popen[str]) -> None:
        children = child_pids(worker.pid)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        self.workers.remove(worker)
        self.killed.append(worker.pid)
        assert wait_gone(children, 5), "the killed worker's child survived as an orphan"

    def every_log(self) -> list[str]:
        """The output of every worker started, killed ones' too."""
        return [log.read_text() for log in self.logs.values()]

    def collect(self) -> None:
        """Keep the exit code and output of every worker that ended."""
        for worker in [w for w in self.workers if w.poll() is not None]:
            self.outputs.append((worker.returncode, self.logs[worker.pid].read_text()))
            self.workers.remove(worker)

    def check_finished(self) -> int:
        """Every trial seen finished is still stored as it was (a kill at any moment loses no
        finished result); how many are finished now."""
        now = finished_trials(self.url)
        changed = {n: (was, now.get(n)) for n, was in self.finished.items() if now.get(n) != was}
        assert not changed, f"finished trials changed or vanished: {changed}"
        self.finished = now
        return len(now)


def _schedule(rng: random.Random, points: int, outages: int) -> list[tuple[int, str]]:
    """(finished trials before it, fault): two worker kills, one long stop and ``outages``
    storage outages, at random (several may come at once), while at least 6 grid points are
    still to run."""
    kinds = ["worker-sigkill", "worker-sigkill", "worker-sigstop", *["storage-outage"] * outages]
    moments = sorted(rng.choices(range(2, points - 6), k=len(kinds)))
    rng.shuffle(kinds)
    return list(zip(moments, kinds, strict=True))


def _inject(soak: Soak, kind: str, rng: random.Random) -> bool:
    if kind == "worker-sigkill":
        # A random moment of the trial's start, its training or its write.
        time.sleep(rng.uniform(0.0, 3.0))
    worker = soak.mid_trial(rng, spare_the_hang=kind != "storage-outage")
    if worker is None:
        return False
    if kind == "storage-outage" and soak.outage is not None:  # a trial runs: its heartbeat meets it
        soak.outage()
    elif kind == "worker-sigkill":
        soak.kill(worker)
        soak.start()  # restarted at once, as a scheduler would
    else:
        worker.send_signal(signal.SIGSTOP)
        time.sleep(3 * HEARTBEAT_S + 3)  # past the heartbeat grace: another worker may take over
        worker.send_signal(signal.SIGCONT)
    soak.faults[kind] += 1
    return True


def _drive(soak: Soak, rng: random.Random, points: int, within_s: float = 1500) -> None:
    """Run the workers to the end, injecting the scheduled faults on the way."""
    schedule = _schedule(rng, points, 0 if soak.outage is None else 2)
    for _ in range(WORKERS):
        soak.start()
    deadline = time.monotonic() + within_s
    while soak.live():
        assert time.monotonic() < deadline, "the soak did not end in time"
        done = soak.check_finished()
        if schedule and done >= schedule[0][0] and _inject(soak, schedule[0][1], rng):
            schedule.pop(0)
        time.sleep(0.5)
    soak.collect()


def _settled(url: str, points: set[tuple[int, str]]) -> bool:
    """Whether every grid point is settled and no trial runs or waits: nothing left for a search."""
    trials = load(url).get_trials()
    if any(t.state in (TrialState.RUNNING, TrialState.WAITING) for t in trials):
        return False
    shown = unique_trials(trials)
    return {grid_point(t) for t in shown} == points and all(is_settled(t) for t in shown)


def _marked_processes(marker: str) -> list[int]:
    """Processes whose environment carries the soak's marker (inherited by every descendant)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"TUNER_SOAK_MARKER={marker}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _no_process_left(marker: str, within_s: float = 10) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := _marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _figures(
    study, soak: Soak, wall_s: float, storage: str, seed: int, points: int
) -> dict[str, object]:
    trials = study.get_trials()
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    return {
        "storage": storage,
        "seed": seed,
        "grid_points": points,
        "trials": len(trials),
        "states": dict(Counter(t.state.name for t in trials)),
        "statuses": dict(Counter(status_of(t) for t in trials)),
        "faults": dict(soak.faults),
        "retries": sum("failed_trial" in t.system_attrs for t in trials),
        "lost": 0,  # asserted: every grid point settled, each fault's status as injected
        "duplicates": sum(n - 1 for n in Counter(map(grid_point, complete)).values()),
        "waits_said": sum(log.count("waiting up to") for log in soak.every_log()),
        "waited_out": sum(log.count(" is back after ") for log in soak.every_log()),
        "spooled_recorded": sum(log.count("is recorded now") for log in soak.every_log()),
        "wall_s": round(wall_s),
    }


def _lock_sqlite(path: Path) -> Callable[[], None]:
    """An outage of a SQLite file: another process holds its write lock for ``OUTAGE_S``."""

    def outage() -> None:
        import sqlite3

        with contextlib.closing(sqlite3.connect(path, timeout=60, isolation_level=None)) as db:
            # Exclusive: every worker's statement, read or write, waits the URL's timeout, then
            # the guard waits (its heartbeat thread first: it beats every second).
            db.execute("BEGIN EXCLUSIVE")
            time.sleep(OUTAGE_S)
            db.execute("COMMIT")

    return outage


def _soak(
    tmp_path: Path,
    url: str,
    storage: str,
    sizes: int,
    child_faults: list[str],
    outage: Callable[[], None] | None = None,
) -> None:
    seed = int(os.environ.get("TUNER_SOAK_SEED", random.randrange(10_000)))
    print(f"soak seed {seed} (TUNER_SOAK_SEED={seed} replays it)")
    rng = random.Random(seed)
    points = grid(sizes)
    # Not at the base batch: there every rule's rate is the base rate, so a point can be answered
    # by another rule's run (same_as) without a child, and its fault never fires (seed 4751's
    # hang at (256, sqrt) ended ok as (256, linear)'s twin). The hang at the next batch, among
    # the first trials, so that its TRIAL_TIMEOUT_S passes while the other points run (an outage
    # longer than the heartbeat grace hands it to another worker, which starts it again).
    hang = (512, rng.choice(RULES)) if "hang" in child_faults else None
    others = sorted(p for p in points if p[0] > 256 and p != hang)
    kinds = [kind for kind in child_faults if kind != "hang"]
    faulted = dict(zip(rng.sample(others, len(kinds)), kinds, strict=True))
    if hang is not None:
        faulted[hang] = "hang"
    faults = [f"{kind}@{b}/{r}" for (b, r), kind in faulted.items()]
    spec = {"rules": json.dumps(RULES), "heartbeat": HEARTBEAT_S}
    write_spec(tmp_path / "small.toml", multipliers=str(list(range(1, sizes + 1))), **spec)
    (tmp_path / "tmp").mkdir()
    marker = uuid.uuid4().hex
    env = {
        "TUNER_TEST_FAULT": ",".join(faults),
        "TUNER_SOAK_MARKER": marker,
        "TMPDIR": str(tmp_path / "tmp"),
    }
    args = [
        "--spec",
        "small.toml",
        "--cpu-replicas",
        "2",
        "--storage",
        url,
        "--no-baseline",
        "--no-noise-scale",
    ]
    args += ["--trial-timeout", str(TRIAL_TIMEOUT_S)]
    soak = Soak(tmp_path, url, args, env, hang, outage=outage)
    started = time.monotonic()
    _drive(soak, rng, len(points))
    # The last worker may have ended while a killed one's trial still looked alive: after the
    # grace period, the user's next `tuner search` settles what is left. Only then: a search of
    # a settled study would pay a workload check (~10 s) to find nothing to run.
    ended = []
    if not _settled(url, points):
        time.sleep(3 * HEARTBEAT_S + 1)
        final = run_tuner("search", *args, cwd=tmp_path, env=tuner_env(**env))
        ended.append((final.returncode, final.stderr))
    print(f"soak: {'a last search settled what the workers left' if ended else 'all settled'}")
    wall_s = time.monotonic() - started
    soak.faults.update(Counter(faulted.values()))

    for code, err in [*soak.outputs, *ended]:
        assert code == 0 and "Traceback" not in err, err
        assert "internal error" not in err and "error: storage" not in err, err
    assert soak.faults["worker-sigkill"] >= 1, soak.faults  # killed with finished results to lose
    if outage is not None:  # each outage reached the guard of a worker whose trial ran
        said = "".join(soak.every_log())
        assert soak.faults["storage-outage"] == 2
        assert said.count("waiting up to") >= 2 and said.count(" is back after ") >= 2, said
    assert _no_process_left(marker) == [], "processes of the study outlived it"
    assert list((tmp_path / "tmp").glob("tuner-trial-*")) == []
    study = load(url)
    trials = study.get_trials()
    figures = _figures(study, soak, wall_s, storage, seed, len(points))
    print("soak:", json.dumps(figures))
    stuck = [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert not stuck, [(t.number, t.state.name, t.user_attrs, t.system_attrs) for t in stuck]
    for number, before in soak.finished.items():  # no finished result changed or vanished
        assert (trials[number].state.name, trials[number].values) == before
    shown = unique_trials(trials)
    assert sorted(grid_point(t) for t in shown) == sorted(points)  # each grid point once
    assert all(is_settled(t) for t in shown)
    by_point = {grid_point(t): t for t in shown}
    for point, kind in faulted.items():  # each fault classified; the study went on after it
        status, fragment = FAULTS[kind]
        trial = by_point[point]
        assert trial.state == TrialState.FAIL and status_of(trial) == status, (kind, trial)
        assert fragment in decode(trial).error, (kind, trial.user_attrs)
    statuses = {p: status_of(t) for p, t in by_point.items()}
    assert sum(s == "ok" for s in statuses.values()) == len(points) - len(faulted), statuses
    assert figures["duplicates"] <= WORKERS - 1, figures  # only a claim race measures twice
    listed = run_tuner("show", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sum(" ok " in line for line in listed.stdout.splitlines()) == len(points) - len(faulted)
    exported = run_tuner("export", "--storage", url, "--study-name", "small", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    if report := os.environ.get("TUNER_SOAK_REPORT"):
        with open(report, "a") as handle:
            handle.write(json.dumps(figures) + "\n")


# Optuna's tables that name a trial, and those that name a study (foreign keys SQLite does not
# enforce: Optuna does not turn them on).
_OF_A_TRIAL = (
    "trial_params",
    "trial_values",
    "trial_intermediate_values",
    "trial_user_attributes",
    "trial_system_attributes",
    "trial_heartbeats",
)
_OF_A_STUDY = ("trials", "study_directions", "study_user_attributes", "study_system_attributes")


def _damage(url: str) -> list[str]:
    """What is wrong with the database under the study at ``url`` (nothing: ``[]``), on SQLite
    and PostgreSQL alike: rows of a trial or study that is not there, trial numbers other than
    0, 1, ... in a study, a trial that ended through tuner (COMPLETE or PRUNED) without its
    outcome (``status``) stored with its state, a COMPLETE trial without one value per objective,
    an attribute that is not JSON; on SQLite also what its own check finds in the file."""
    engine = sqlalchemy.create_engine(url)
    found: list[str] = []
    try:
        with engine.connect() as db:
            if engine.dialect.name == "sqlite":
                verdict = db.execute(text("PRAGMA integrity_check")).scalar_one()
                if verdict != "ok":
                    found.append(f"SQLite integrity_check: {verdict}")
            for table in _OF_A_TRIAL:
                found += _orphans(db, table, "trials", "trial_id")
            for table in _OF_A_STUDY:
                found += _orphans(db, table, "studies", "study_id")
            found += _trials_damage(db)
    finally:
        engine.dispose()
    return found


def _orphans(db: sqlalchemy.Connection, table: str, parent: str, key: str) -> list[str]:
    """Rows of ``table`` whose ``key`` names no row of ``parent``."""
    query = f"SELECT COUNT(*) FROM {table} c LEFT JOIN {parent} p ON c.{key} = p.{key}"
    orphans = db.execute(text(f"{query} WHERE p.{key} IS NULL")).scalar_one()
    return [f"{orphans} rows of {table} name no row of {parent}"] if orphans else []


def _trials_damage(db: sqlalchemy.Connection) -> list[str]:
    """:func:`_damage`'s checks of each stored trial, read with SQL, not through Optuna."""
    found = []
    trials = db.execute(text("SELECT trial_id, study_id, number, state FROM trials")).all()
    by_study: dict[int, list[int]] = {}
    for _, study_id, number, _ in trials:
        by_study.setdefault(study_id, []).append(number)
    for study_id, numbers in by_study.items():
        if sorted(numbers) != list(range(len(numbers))):
            found.append(f"study {study_id} numbers its trials {sorted(numbers)}")
    statuses = dict(
        db.execute(
            text("SELECT trial_id, value_json FROM trial_user_attributes WHERE key = 'status'")
        ).all()
    )
    objectives = dict(
        db.execute(text("SELECT study_id, COUNT(*) FROM study_directions GROUP BY study_id")).all()
    )
    values = dict(
        db.execute(text("SELECT trial_id, COUNT(*) FROM trial_values GROUP BY trial_id")).all()
    )
    for trial_id, study_id, number, state in trials:
        # A FAIL may be Optuna's (a dead worker's trial, failed by the heartbeat): no status.
        if state in ("COMPLETE", "PRUNED") and trial_id not in statuses:
            found.append(f"trial {number} is {state} without its status")
        if state == "COMPLETE" and values.get(trial_id, 0) != objectives.get(study_id):
            found.append(f"trial {number} is COMPLETE with {values.get(trial_id, 0)} values")
    for table in ("trial_user_attributes", "trial_system_attributes"):
        for key, value_json in db.execute(text(f"SELECT key, value_json FROM {table}")):
            try:
                json.loads(value_json)
            except ValueError:
                found.append(f"{table} {key!r} holds no JSON: {value_json[:80]!r}")
    return found


def test_soak_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'soak.db'}?timeout={SQLITE_LOCK_TIMEOUT_S}"
    child_faults = list(FAULTS)  # one of each, the hang included
    _soak(tmp_path, url, "sqlite", SQLITE_SIZES, child_faults, _lock_sqlite(tmp_path / "soak.db"))
    assert _damage(url) == []


def _stop_server(server: PrivateServer) -> Callable[[], None]:
    """An outage of a PostgreSQL server: stopped (fast: sessions cut) for ``OUTAGE_S``, then
    started again; pooled connections die with it."""

    def outage() -> None:
        server.stop()
        time.sleep(OUTAGE_S)
        server.start()

    return outage


@pytest.mark.postgres
def test_soak_postgres(tmp_path, private_pg):  # noqa: F811
    url = private_pg.url
    _soak(tmp_path, url, "postgresql", POSTGRES_SIZES, ["segfault"] * 2, _stop_server(private_pg))
    assert _damage(url) == []
