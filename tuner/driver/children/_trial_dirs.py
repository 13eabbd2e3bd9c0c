"""Trial folders (``tuner-trial-*`` in the temp folder): who owns each, and removing the ones whose
owner died. A folder is left behind when its worker and supervisor die at once (power loss, a
kill of the whole process group), so every worker sweeps the temp folder once, before its first
child. Each folder records its owner's pid, start time (a process that reuses the pid is not the
owner) and pid namespace (a worker in another container sharing the temp folder is not dead).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tuner.core.protocol import TRIAL_DIR_PREFIX

OWNER_FILE = "owner.json"
UNOWNED_MAX_AGE_S = 86_400.0
"""A folder with no owner record (an older tuner, or one killed while creating it) is removed
once it is a day old; until then it may belong to a worker that is just starting."""


@dataclass(frozen=True)
class Owner:
    """A process as recorded in a trial folder: pid, start time (clock ticks after boot,
    ``/proc/<pid>/stat`` field 22) and pid namespace; ``None`` where the system does not say."""

    pid: int
    started: int | None = None
    namespace: str | None = None


def is_abandoned(
    recorded: Owner | None, running: Owner | None, age_s: float, namespace: str | None
) -> bool:
    """Whether a trial folder's owner is dead, so the folder can go: ``recorded`` is its owner
    record (``None``: none readable), ``running`` the process now at that pid (``None``: none),
    ``namespace`` the sweeping process's pid namespace."""
    if recorded is None:
        # Tuner's folders from before owner records, or one whose worker is writing it now.
        return age_s > UNOWNED_MAX_AGE_S
    if recorded.namespace != namespace:
        # Another container's worker: its pid means nothing here, and its trial may run for days.
        return False
    if running is None:
        return True
    if recorded.started is None or running.started is None:
        return False  # a process holds the pid and nothing tells it apart: assume the owner
    return running.started != recorded.started


def this_process() -> Owner:
    """This process as an owner record."""
    found = process(os.getpid())
    return found if found is not None else Owner(os.getpid(), None, pid_namespace())


def process(pid: int) -> Owner | None:
    """The living process at ``pid`` (``None``: none, or a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        # Where /proc works the pid is gone; without it, a signal 0 tells.
        alive = not Path("/proc/self/stat").exists() and pid_alive(pid)
        return Owner(pid) if alive else None
    if fields[0] == b"Z":
        return None
    return Owner(pid, int(fields[19]), pid_namespace())


def pid_alive(pid: int) -> bool:
    """Whether a process holds ``pid`` (someone else's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def pid_namespace() -> str | None:
    """This process's pid namespace (``pid:[4026531836]``), ``None`` without ``/proc``."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def write_owner(folder: Path) -> None:
    """Record this process as the owner of ``folder``."""
    (folder / OWNER_FILE).write_text(json.dumps(asdict(this_process())))


def read_owner(folder: Path) -> Owner | None:
    """The owner recorded in ``folder`` (``None``: no readable record)."""
    try:
        record = json.loads((folder / OWNER_FILE).read_text())
        return Owner(int(record["pid"]), record.get("started"), record.get("namespace"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def owned_folder(kind: str) -> Iterator[Path]:
    """A temporary folder of this process (``tuner-trial-<kind>-*``, with its owner record),
    removed when the block ends; if the process is killed first, the next run sweeps it as it
    sweeps a dead worker's trial folder (:func:`sweep`)."""
    folder = Path(tempfile.mkdtemp(prefix=f"{TRIAL_DIR_PREFIX}{kind}-"))
    try:
        write_owner(folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the trial folders in ``root`` (default: the temp folder) whose owner is dead; the
    folders removed. Never raises: a sweep that fails leaves litter, not a failed search."""
    removed = []
    base = Path(root if root is not None else tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for folder in base.glob(f"{TRIAL_DIR_PREFIX}*"):
            if _is_abandoned_folder(folder):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


def _is_abandoned_folder(folder: Path) -> bool:
    try:
        if not folder.is_dir() or folder.is_symlink():
            return False
        age_s = time.time() - folder.stat().st_mtime
    except OSError:
        return False
    recorded = read_owner(folder)
    running = process(recorded.pid) if recorded is not None else None
    return is_abandoned(recorded, running, age_s, pid_namespace())
