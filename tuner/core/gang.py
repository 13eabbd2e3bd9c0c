"""Trials across hosts (pure): who is in the gang, read from the options or the launcher's
environment, and the one run that stands for a trial all ranks trained (:func:`combine`).

A gang is one tuner process per host. Rank 0 drives the study; the others follow it over the
``coordinator`` address (rank 0's ``HOST:PORT``); each trial's children join one JAX distributed
runtime on ``PORT + 1`` of the same host. How it runs: docs/guide/scaling-out.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tuner.core.errors import ConfigError
from tuner.core.oom import is_oom_message
from tuner.core.options import named
from tuner.core.outcome import ChildRun, read_result
from tuner.core.protocol import Result

MAX_HOSTS = 64
DEFAULT_PORT = 29470
"""The coordinator's port where the launcher names only a host (Slurm's first node)."""
KERAS_ISSUE = "keras-team/keras#20585"
"""Multi-worker TensorFlow under Keras 3: why a TensorFlow gang is refused."""


@dataclass(frozen=True)
class Gang:
    """This process's place in a gang: ``rank`` of ``hosts``, all reaching rank 0 at
    ``coordinator`` (``HOST:PORT``); ``source`` says where they were read."""

    hosts: int = 1
    rank: int = 0
    coordinator: str | None = None
    source: str = "options"

    @property
    def spans_hosts(self) -> bool:
        """Whether a trial spans more than this host."""
        return self.hosts > 1

    @property
    def leads(self) -> bool:
        """Rank 0: the one that opens the study and stores outcomes."""
        return self.rank == 0

    @property
    def address(self) -> tuple[str, int]:
        """The coordinator's host and port (the gang's control channel)."""
        host, _, port = (self.coordinator or "").rpartition(":")
        return host.strip("[]"), int(port)

    @property
    def runtime_address(self) -> str:
        """Where the trials' JAX distributed runtime meets: the coordinator's host, port + 1."""
        host, port = self.address
        return f"[{host}]:{port + 1}" if ":" in host else f"{host}:{port + 1}"


def read_gang(
    hosts: int | None,
    rank: int | None,
    coordinator: str | None,
    environ: Mapping[str, str],
    backend: str,
) -> Gang:
    """The gang the options say. Only ``--hosts`` (or Keras's own
    ``KERAS_DISTRIBUTION_NUM_PROCESSES``) asks for one: a launcher's variables then fill in what
    the options leave out (``KERAS_DISTRIBUTION_*``, then a multi-node Slurm step's ``SLURM_*``,
    then a Kubernetes Indexed Job's ``JOB_COMPLETION_INDEX`` for the rank); alone they never
    make one (``srun -N2 tuner search`` stays two workers sharing a study, as before). Raises
    :class:`ConfigError` for values that do not make one gang, and for TensorFlow across hosts."""
    keras = _from_keras(environ)
    count = hosts if hosts is not None else keras.get("hosts")
    found: dict[str, int | str] = {}
    source = "options"
    if count is not None and int(count) > 1:
        found, source = (keras, "KERAS_DISTRIBUTION_*") if keras else _from_launcher(environ)
    given = {"rank": rank, "coordinator": coordinator}
    values = {key: value if value is not None else found.get(key) for key, value in given.items()}
    if all(value is not None for value in given.values()):
        source = "options"
    gang = Gang(
        hosts=int(count or 1),
        rank=int(values["rank"] or 0),
        coordinator=None if values["coordinator"] is None else str(values["coordinator"]),
        source=source,
    )
    _check(gang)
    if gang.spans_hosts and backend != "jax":
        raise ConfigError(
            f"{named('hosts')} {gang.hosts} needs --backend jax: multi-worker TensorFlow "
            f"(MultiWorkerMirroredStrategy) does not train under Keras 3 ({KERAS_ISSUE}); a gang "
            "trains on JAX's distributed runtime"
        )
    return gang


def _check(gang: Gang) -> None:
    if not 1 <= gang.hosts <= MAX_HOSTS:
        raise ConfigError(f"{named('hosts')} must be 1 to {MAX_HOSTS}, got {gang.hosts}")
    if not 0 <= gang.rank < gang.hosts:
        raise ConfigError(
            f"{named('rank')} must be 0 to {gang.hosts - 1} for {gang.hosts} host(s), got "
            f"{gang.rank} ({gang.source})"
        )
    if not gang.spans_hosts:
        return
    if gang.coordinator is None:
        raise ConfigError(
            f"{named('hosts')} {gang.hosts} needs {named('coordinator')} HOST:PORT, rank 0's "
            "address that every rank reaches"
        )
    match = re.fullmatch(r"(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})", gang.coordinator)
    if match is None or not 1 <= int(match.group(2)) < 65535:
        raise ConfigError(
            f"{named('coordinator')} must be HOST:PORT with a port below 65535 (the trials' "
            f"runtime takes PORT+1), got {gang.coordinator!r}"
        )


def _from_keras(environ: Mapping[str, str]) -> dict[str, int | str]:
    """What Keras's own multi-process variables say (``keras.distribution.initialize`` reads
    them too)."""
    found: dict[str, int | str] = {}
    if environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES"):
        count = environ["KERAS_DISTRIBUTION_NUM_PROCESSES"]
        found["hosts"] = _integer(count, "KERAS_DISTRIBUTION_NUM_PROCESSES")
    if environ.get("KERAS_DISTRIBUTION_JOB_ADDRESSES"):
        found["coordinator"] = environ["KERAS_DISTRIBUTION_JOB_ADDRESSES"].split(",")[0].strip()
    if environ.get("KERAS_DISTRIBUTION_PROCESS_ID"):
        rank = environ["KERAS_DISTRIBUTION_PROCESS_ID"]
        found["rank"] = _integer(rank, "KERAS_DISTRIBUTION_PROCESS_ID")
    return found


def _from_launcher(environ: Mapping[str, str]) -> tuple[dict[str, int | str], str]:
    """A gang's rank and coordinator as a multi-node Slurm step or an Indexed Job gives them."""
    nodes = environ.get("SLURM_STEP_NUM_NODES")
    if nodes and _integer(nodes, "SLURM_STEP_NUM_NODES") > 1:
        return _from_slurm(environ), "SLURM_*"
    index = environ.get("JOB_COMPLETION_INDEX")
    if index:
        return {"rank": _integer(index, "JOB_COMPLETION_INDEX")}, "JOB_COMPLETION_INDEX"
    return {}, "options"


def _from_slurm(environ: Mapping[str, str]) -> dict[str, int | str]:
    """A multi-node step: one tuner per node (``srun --ntasks-per-node=1``)."""
    tasks = _integer(environ.get("SLURM_NTASKS", ""), "SLURM_NTASKS")
    nodes = _integer(environ["SLURM_STEP_NUM_NODES"], "SLURM_STEP_NUM_NODES")
    if tasks != nodes:
        raise ConfigError(
            f"this Slurm step runs {tasks} tasks on {nodes} nodes: a gang is one tuner per host "
            "(srun --nodes=N --ntasks-per-node=1)"
        )
    nodelist = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST", "")
    first = first_node(nodelist)
    return {
        "rank": _integer(environ.get("SLURM_PROCID", ""), "SLURM_PROCID"),
        "coordinator": f"{first}:{DEFAULT_PORT}",
    }


def first_node(nodelist: str) -> str:
    """The first host of a Slurm node list: ``gpu[03-06,9],login1`` -> ``gpu03``."""
    match = re.match(r"\s*([^,\[\s]+)(?:\[([^\]]+)\])?", nodelist)
    if match is None:
        raise ConfigError(f"cannot read the first host of SLURM_STEP_NODELIST {nodelist!r}")
    prefix, ranges = match.groups()
    if ranges is None:
        return prefix
    return prefix + re.split(r"[-,]", ranges)[0]


def _integer(text: str, name: str) -> int:
    if not re.fullmatch(r"\s*\d+\s*", text):
        raise ConfigError(f"{name} must be a whole number, got {text!r}")
    return int(text)


def combine(runs: Sequence[ChildRun], aborted: Sequence[bool]) -> ChildRun:
    """The one run a trial's outcome is decided from, of every rank's (rank order; ``aborted``:
    the ranks the leader ended because another failed). All ended with one result (``ok``, or
    ``diverged`` and ``dominated``, which every rank decides from the same loss): rank 0's. Else
    the first cause, its ``rank`` set: a rank out of memory (its result, or its ``stderr``:
    ``std::bad_alloc`` under a rank's own cap), else one that failed or timed out on its own; a
    run the leader ended is a consequence unless it ran out of memory."""
    statuses = [run_status(run) for run in runs]
    if len(set(statuses)) == 1 and statuses[0] in ("ok", "diverged", "dominated"):
        return runs[0]
    failed = [i for i, status in enumerate(statuses) if status != "ok"]
    causes = [i for i in failed if not aborted[i]] or failed
    # Out of memory anywhere is the cause, even on a rank the leader ended: a rank stuck short
    # of memory leaves the others to time out in a collective, which is only the consequence.
    oom = [i for i in failed if statuses[i] == "oom"]
    rank = (oom or causes)[0]
    return replace(runs[rank], rank=f"rank {rank} of {len(runs)}")


def run_status(run: ChildRun) -> str:
    """``ok``, ``oom``, or another word for a run that did not end well (its result's, as
    :func:`result_status` reads it, else the remains of a child that left none)."""
    if run.timed_out:
        return "timeout"
    read = read_result(run.result_text)
    if not isinstance(read, Result):
        return "oom" if is_oom_message(run.stderr_tail) else "died"
    return result_status(read)


def result_status(result: Result) -> str:
    """A rank's result as the gang reads it: its status, but ``oom`` for a probe whose size did
    not fit (its status is ``ok``: the other ranks only died of it, and this one leaves the
    runtime at once)."""
    attempts = result.payload.get("attempts") or []
    if result.status == "ok" and any(not attempt.get("fits", True) for attempt in attempts):
        return "oom"
    return result.status
