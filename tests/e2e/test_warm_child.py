"""The warm child (tuner.driver.children._warm) with real children and real TensorFlow: a spare
started once the running trial's timed windows are over takes the next request and reports what a
fresh child reports, with its earlier import outside the wall, forked from the fork server (as on
Linux by default) or started;
a spare for another environment, or one that died while waiting, gives way to a fresh child; no
spare outlives its driver (SIGKILL, a normal exit, the end of the search's block) or leaves a
folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import OWNER_ENV, processes_of
from procs import alive, descendants, wait_gone, wait_until

from tuner.core.devices import DevicePlan, inspect_environment
from tuner.core.outcome import PHASES, classify
from tuner.core.protocol import FORK_SERVER_MODULE, TRIAL_DIR_PREFIX, decode_result
from tuner.driver.children import _warm as warm
from tuner.driver.children._forked import FORK_ENV
from tuner.driver.children._requests import inspect_request, trial_request
from tuner.driver.children._runner import run_child
from tuner.driver.setup.spec_file import load_spec

pytestmark = pytest.mark.slow

PLAN = DevicePlan(kind="cpu", num_replicas=2)
SPEC = load_spec(None, {"search.epochs": 2})


@pytest.fixture(autouse=True)
def own_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Trial folders in this test's own temp folder; the pool empty before and after."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv(warm.WARM_ENV, "1")
    monkeypatch.setattr("tempfile.tempdir", None)
    warm.release()
    with warm.spares():  # as a search holds the pool: spares start only then
        yield temp
    warm.release()


def folders(temp: Path) -> list[Path]:
    return list(temp.glob(f"{TRIAL_DIR_PREFIX}*"))


def waiting_spare() -> Any:
    assert wait_until(lambda: warm.POOL.spare() is not None, 30), "no spare was started"
    return warm.POOL.spare()


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("forked", [True, False], ids=["fork-server", "started"])
def test_a_warm_child_takes_the_request_and_reports_as_a_fresh_one(
    own_temp: Path, forked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FORK_ENV, "1" if forked else "0")
    request = trial_request(SPEC, PLAN, 128, SPEC.search.grid.base_lr)
    events: list[str] = []
    spares_in_windows: list[object] = []

    def note(event: Any) -> None:
        events.append(event.kind)
        if "windows_done" not in events:  # a window or probe of the running child is timed
            spares_in_windows.append(warm.POOL.spare())

    fresh = run_child(request, PLAN.child_environment(), 300, note)
    # The run said when its timed windows ended, no spare was started during them...
    assert events.index("epoch") < events.index("windows_done")
    assert set(spares_in_windows) == {None}
    spare = waiting_spare()  # ...and the next child was started then
    # Forked from the fork server (the driver is not its parent), or started by the driver.
    server = parent_of(spare.proc.pid)
    assert (server != os.getpid()) is forked
    if forked:
        assert FORK_SERVER_MODULE in Path(f"/proc/{server}/cmdline").read_text()
    warmed = run_child(request, PLAN.child_environment(), 300)
    assert not alive(spare.proc.pid) and not spare.folder.exists()
    first, second = decode_result(fresh.result_text), decode_result(warmed.result_text)
    assert first.status == second.status == "ok"
    assert set(first.payload) == set(second.payload)
    assert first.payload["final_loss"] == second.payload["final_loss"]  # same seed and training
    # A started spare imported before hand-over; a forked one imported nothing (its server did).
    assert "import_hidden_s" not in first.timings and first.timings["import_s"] > 0.5
    assert (second.timings["import_hidden_s"] == second.timings["import_s"] == 0) is forked
    for run in (fresh, warmed):
        timings = classify(run, memory_capped=False).attrs["timings"]
        assert all(timings[p] >= 0 for p in PHASES), timings
        assert sum(timings[p] for p in PHASES) + timings["unaccounted_s"] == pytest.approx(
            timings["wall_s"]
        )
    warm.release()
    # Only what this test started: the session's browser starts helpers of its own at any time
    # (CI: a pid below this worker that was not there before this test, and not a tuner child).
    assert wait_gone(processes_of(os.environ[OWNER_ENV]), 10) and folders(own_temp) == []
    # Nothing else either: TensorFlow's autograph sources (a child ends by os._exit, so their
    # atexit clean-up never runs) were written in each child's trial folder and went with it.
    assert list(own_temp.iterdir()) == []


def test_a_spare_for_another_environment_gives_way_to_a_fresh_child(own_temp: Path) -> None:
    env = PLAN.child_environment()
    warm.POOL.expect(env)  # the workload check starts a spare for env at once
    checked = run_child(inspect_request(SPEC), inspect_environment("tensorflow"), 300)
    assert decode_result(checked.result_text).status == "ok"
    spare = waiting_spare()
    other = run_child(inspect_request(SPEC), {**env, "TUNER_OTHER": "1"}, 300)
    assert "import_hidden_s" not in decode_result(other.result_text).timings
    assert wait_gone([spare.proc.pid], 10) and not spare.folder.exists()
    assert warm.POOL.spare() is None and folders(own_temp) == []


def test_a_spare_that_died_while_waiting_is_replaced(own_temp: Path) -> None:
    env = PLAN.child_environment()
    warm.POOL.expect(env)
    run_child(inspect_request(SPEC), inspect_environment("tensorflow"), 300)
    spare = waiting_spare()
    for pid in descendants(spare.proc.pid):  # the worker under the supervisor
        os.kill(pid, signal.SIGKILL)
    spare.proc.wait(10)  # the supervisor ends as its child ended
    run = run_child(inspect_request(SPEC), env, 300)
    result = decode_result(run.result_text)
    assert result.status == "ok" and "import_hidden_s" not in result.timings
    assert not spare.folder.exists() and folders(own_temp) == []


# A driver that leaves a spare waiting, says where it is, then ends as the test asks: killed,
# a normal exit (no release: the exit kills it), or the end of a search's block while it lives on.
DRIVER = """
import json, sys, time
from tuner.core.devices import DevicePlan, inspect_environment
from tuner.driver.children import _warm as warm
from tuner.driver.children._forked import FORK_ENV
from tuner.driver.children._requests import inspect_request
from tuner.driver.children._runner import run_child
from tuner.driver.setup.spec_file import load_spec

def leave_spare():
    run_child(inspect_request(load_spec(None, {})), inspect_environment("tensorflow"), 300)
    while warm.POOL.spare() is None:
        time.sleep(0.05)
    spare = warm.POOL.spare()
    print(json.dumps({"pid": spare.proc.pid, "folder": str(spare.folder)}), flush=True)

env = DevicePlan(kind="cpu", num_replicas=2).child_environment()
if sys.argv[1] == "block":
    with warm.spares(expect=env):
        leave_spare()
        sys.stdin.readline()
    print("released", flush=True)
    time.sleep(600)
warm.POOL.hold(True)  # a search in progress, which will not get to release it
warm.POOL.expect(env)
leave_spare()
sys.stdin.readline()  # "sigkill" is killed while here; "exit" then ends normally
"""


@pytest.mark.parametrize("ending", ["sigkill", "exit", "block"])
def test_no_spare_outlives_its_driver_or_its_search(own_temp: Path, ending: str) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, ending],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(own_temp)},
    )
    try:
        assert driver.stdout is not None and driver.stdin is not None
        where = json.loads(driver.stdout.readline())
        # Its supervisor and its worker (which the supervisor starts just after itself), and the
        # fork server it was forked from.
        assert wait_until(lambda: len(descendants(where["pid"])) == 1, 10)
        server = parent_of(where["pid"])
        assert server != driver.pid
        spare = [server, where["pid"], *descendants(where["pid"])]
        assert Path(where["folder"]).is_dir()
        if ending == "sigkill":
            driver.send_signal(signal.SIGKILL)
        else:
            driver.stdin.write("\n")
            driver.stdin.flush()
        if ending == "block":
            assert driver.stdout.readline().strip() == "released"
            assert driver.poll() is None  # the driver lives on; its search has ended
        if ending == "exit":
            assert driver.wait(30) == 0
        driver_ended = time.monotonic()
        assert wait_gone(spare, 10), "the spare or its server outlived its driver or its search"
        remaining = 10 - (time.monotonic() - driver_ended)
        assert wait_until(lambda: not Path(where["folder"]).exists(), max(remaining, 1))
        assert folders(own_temp) == []
    finally:
        driver.kill()
        driver.wait()
