"""The gang's launch recipes in docs/guide/recipes/, checked without a cluster.

The Kubernetes manifests are validated offline against Kubernetes 1.30's schemas
(``kubernetes-validate``, strict: an unknown key is an error); the JobSet, which those schemas do
not hold, has its Job template validated as a ``batch/v1`` Job. What the schemas cannot see is
asserted here: rank 0's DNS name in ``--coordinator``, ``completions`` = ``parallelism`` =
``--hosts``, a headless Service that selects the pods, and that tuner's own reader of the gang
(:func:`tuner.core.gang.read_gang`) makes of a pod's arguments and environment the gang meant.

The Slurm script runs for real on this machine under a stand-in ``srun`` and ``scontrol``
(``bin/`` in a temporary folder): ``srun`` starts its command once per rank with the ``SLURM_*``
variables a 2-node step sets, everything on localhost. A fast test puts a stand-in ``tuner`` under
it that records what each rank was given; the slow one runs a real 2-rank search on JAX.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import kubernetes_validate
import optuna
import pytest
import yaml
from conftest import tuner_env
from optuna.trial import TrialState
from procs import alive, free_port_pair

from tuner.core.gang import read_gang
from tuner.core.record import decode

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "docs" / "guide" / "recipes"
SBATCH = RECIPES / "gang.sbatch"
KUBERNETES = "1.30"
"""The oldest Kubernetes the recipes are meant for: Indexed Jobs and pod ``subdomain`` are GA."""


def documents(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((RECIPES / name).read_text(encoding="utf-8")))


def of_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in docs if doc["kind"] == kind]
    return found


def validate(resource: dict[str, Any]) -> None:
    kubernetes_validate.validate(resource, KUBERNETES, strict=True)


def jobset_job(jobset: dict[str, Any]) -> dict[str, Any]:
    """The JobSet's one replicated Job as the ``batch/v1`` Job the controller makes of it."""
    (replicated,) = jobset["spec"]["replicatedJobs"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{jobset['metadata']['name']}-{replicated['name']}-0"},
        "spec": replicated["template"]["spec"],
    }


def options(args: list[str]) -> dict[str, str]:
    """``--flag value`` pairs of a container's arguments (every tuner flag here takes a value)."""
    assert args[0] == "search", args
    flags = args[1:]
    assert all(flag.startswith("--") for flag in flags[::2]), flags
    return dict(zip(flags[::2], flags[1::2], strict=True))


def the_container(job: dict[str, Any]) -> dict[str, Any]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


def check_the_gang(job: dict[str, Any], rank_0: str) -> None:
    """What the schemas cannot see: one pod per host, all at once, meeting at rank 0's name."""
    spec, container = job["spec"], the_container(job)
    given = options(container["args"])
    assert container["command"] == ["tuner"]
    assert given["--backend"] == "jax"
    hosts = int(given["--hosts"])
    assert hosts >= 2
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == hosts
    host, _, port = given["--coordinator"].rpartition(":")
    assert host == rank_0
    ports = {p["containerPort"] for p in container["ports"]}
    assert ports == {int(port), int(port) + 1}, "the gang's PORT and the JAX runtime's PORT+1"
    assert "--storage" not in given, "the URL holds a password: it comes from the Secret"
    (storage,) = [env for env in container["env"] if env["name"] == "TUNER_STORAGE"]
    assert storage["valueFrom"]["secretKeyRef"]["name"]
    # What tuner makes of every pod: its options, and its JOB_COMPLETION_INDEX for the rank.
    for rank in range(hosts):
        index = {"JOB_COMPLETION_INDEX": str(rank)}
        gang = read_gang(hosts, None, given["--coordinator"], index, "jax")
        assert (gang.hosts, gang.rank, gang.coordinator) == (hosts, rank, given["--coordinator"])
        assert gang.runtime_address == f"{rank_0}:{int(port) + 1}"


# --- Kubernetes ----------------------------------------------------------------------------------


def test_the_indexed_job_and_its_service_pass_the_kubernetes_schemas() -> None:
    docs = documents("gang-job.yaml")
    assert sorted(doc["kind"] for doc in docs) == ["Job", "Service"]
    for doc in docs:
        validate(doc)


def test_the_schema_check_rejects_an_unknown_key_and_a_wrong_type() -> None:
    # Guards the check above: the validator is strict and reads the Job's pod template.
    job = of_kind(documents("gang-job.yaml"), "Job")
    unknown = copy.deepcopy(job)
    the_container(unknown)["argz"] = ["search"]
    with pytest.raises(kubernetes_validate.ValidationError, match="argz"):
        validate(unknown)
    wrong = copy.deepcopy(job)
    wrong["spec"]["completions"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError, match="two"):
        validate(wrong)


def test_the_indexed_job_meets_at_rank_0_through_a_headless_service() -> None:
    docs = documents("gang-job.yaml")
    job, service = of_kind(docs, "Job"), of_kind(docs, "Service")
    pod = job["spec"]["template"]
    name = service["metadata"]["name"]
    assert pod["spec"]["subdomain"] == name
    assert service["spec"]["clusterIP"] == "None", "headless: one DNS record per pod"
    selector = service["spec"]["selector"]
    assert selector and selector.items() <= pod["metadata"]["labels"].items()
    # Indexed pods are named <job>-<index>: rank 0 is <job>-0 under the Service's subdomain.
    check_the_gang(job, f"{job['metadata']['name']}-0.{name}")
    assert pod["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 0


def test_the_jobset_is_not_in_the_schemas_so_its_job_is_validated() -> None:
    (jobset,) = documents("gang-jobset.yaml")
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        validate(jobset)
    validate(jobset_job(jobset))


def test_the_jobset_meets_at_its_first_pod_and_wraps_the_indexed_jobs_template() -> None:
    (jobset,) = documents("gang-jobset.yaml")
    spec = jobset["spec"]
    assert spec["network"]["enableDNSHostnames"] is True
    (replicated,) = spec["replicatedJobs"]
    assert replicated["replicas"] == 1, "one Job: its pods are the gang's ranks"
    name = jobset["metadata"]["name"]
    subdomain = spec["network"].get("subdomain", name)
    # JobSet names a pod <jobset>-<replicated job>-<job index>-<pod index>.
    check_the_gang(jobset_job(jobset), f"{name}-{replicated['name']}-0-0.{subdomain}")
    job = of_kind(documents("gang-job.yaml"), "Job")
    wrapped, plain = the_container(jobset_job(jobset)), the_container(job)
    for key in ("image", "command", "env", "ports", "resources"):
        assert wrapped[key] == plain[key], key
    assert options(wrapped["args"]).keys() == options(plain["args"]).keys()


# --- Slurm ---------------------------------------------------------------------------------------

FAKE_SRUN = """#!/bin/bash
# Stands in for srun on one machine: srun's own options (--opt or --opt=value) are dropped, the
# command starts once per rank with what a multi-node step sets, and srun waits for all of them.
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
tasks=$FAKE_SLURM_TASKS
pids=()
for ((rank = 0; rank < tasks; rank++)); do
  SLURM_PROCID=$rank SLURM_NTASKS=$tasks SLURM_STEP_NUM_NODES=$tasks \\
    SLURM_STEP_NODELIST=$SLURM_JOB_NODELIST "$@" >"$FAKE_SLURM_LOGS/rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
"""
FAKE_SCONTROL = """#!/bin/bash
# scontrol show hostnames LIST, for a plain comma-separated LIST.
[[ $1 == show && $2 == hostnames ]] || exit 2
tr ',' '\\n' <<<"$3"
"""
FAKE_TUNER = """#!/usr/bin/env python3
# Stands in for tuner: records its arguments and its Slurm environment.
import json, os, sys
seen = {k: v for k, v in os.environ.items() if k.startswith("SLURM_")}
path = os.path.join(os.environ["FAKE_SLURM_LOGS"], "seen-" + os.environ["SLURM_PROCID"])
with open(path, "w") as f:
    json.dump({"argv": sys.argv[1:], "env": seen}, f)
"""


def slurm_machine(tmp_path: Path, port: int, tuner: str | None = None) -> dict[str, str]:
    """``bin/`` with the stand-ins, and the environment of a 2-node batch job on localhost."""
    bin_dir, logs = tmp_path / "bin", tmp_path / "logs"
    bin_dir.mkdir()
    logs.mkdir()
    stand_ins = {"srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL}
    if tuner is not None:
        stand_ins["tuner"] = tuner
    for name, text in stand_ins.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    # The real tuner is the one installed beside this Python.
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    slurm = {k: v for k, v in tuner_env().items() if not k.startswith("SLURM_")}
    return {
        **slurm,
        "PATH": path,
        "FAKE_SLURM_TASKS": "2",
        "FAKE_SLURM_LOGS": str(logs),
        "SLURM_JOB_NODELIST": "localhost,localhost",
        "SLURM_JOB_NUM_NODES": "2",
        "TUNER_GANG_PORT": str(port),
    }


def run_script(args: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> str:
    """Run gang.sbatch as sbatch would (bash, on the first node); its exit status must be 0.

    Everything it started is ended before this returns, found by a mark in the environment that
    every descendant inherits: a child in a session of its own, or one whose parent died, too."""
    mark = f"TUNER_GANG_TEST={uuid.uuid4().hex}"
    script = subprocess.Popen(
        ["bash", str(SBATCH), *args],
        cwd=cwd,
        env={**env, "TUNER_GANG_TEST": mark.partition("=")[2]},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = script.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        output = f"(still running after {timeout_s:.0f} s: ended)"
    finally:
        end_everything(script, mark)
    logs = "".join(
        f"--- {log.name}\n{log.read_text()[-3000:]}\n"
        for log in sorted(Path(env["FAKE_SLURM_LOGS"]).glob("rank*.log"))
    )
    assert script.returncode == 0, f"gang.sbatch exited {script.returncode}\n{output}\n{logs}"
    return output


def marked(mark: str) -> list[int]:
    """The living processes whose environment holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark.encode() in environ and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def end_everything(script: subprocess.Popen[str], mark: str) -> None:
    """SIGTERM first (tuner ends its trial's children on it), SIGKILL what is left after 10 s."""
    for sig, grace_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        left = marked(mark)
        if script.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(script.pid, sig)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not marked(mark):
            break
    script.communicate(timeout=10)
    assert not marked(mark), f"processes left behind: {marked(mark)}"


def test_the_slurm_script_is_valid_bash() -> None:
    result = subprocess.run(["bash", "-n", str(SBATCH)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    text = SBATCH.read_text(encoding="utf-8")
    assert "#SBATCH --nodes=2" in text and "#SBATCH --ntasks-per-node=1" in text


def test_the_slurm_script_starts_one_tuner_per_node_meeting_at_the_first(tmp_path: Path) -> None:
    port = free_port_pair()
    env = slurm_machine(tmp_path, port, tuner=FAKE_TUNER)
    run_script(["--study-name", "bert-2x2"], tmp_path, env, timeout_s=60)
    for rank in range(2):
        seen = json.loads((tmp_path / "logs" / f"seen-{rank}").read_text())
        argv = seen["argv"]
        assert argv[:3] == ["search", "--backend", "jax"]
        assert argv[-2:] == ["--study-name", "bert-2x2"], "the script's arguments, passed on"
        coordinator = argv[argv.index("--coordinator") + 1]
        assert coordinator == f"localhost:{port}"
        # What the real tuner makes of it: the script's hosts and coordinator, srun's rank.
        hosts = int(argv[argv.index("--hosts") + 1])
        gang = read_gang(hosts, None, coordinator, seen["env"], "jax")
        assert (gang.hosts, gang.rank, gang.coordinator) == (2, rank, coordinator)
        assert gang.source == "SLURM_*"


@pytest.mark.slow
def test_the_slurm_script_runs_a_two_host_search_on_this_machine(tmp_path: Path) -> None:
    # Needs the gang's worker and driver (issue 47); each "host" is 2 CPU devices here.
    port = free_port_pair()
    env = slurm_machine(tmp_path, port)
    database = tmp_path / "gang.db"
    exported = tmp_path / "recommended.json"
    args = [
        "--cpu-replicas", "2",
        "--quick",
        "--batch-multipliers", "1,2,4",
        "--lr-rules", "none",
        "--train-samples", "3072",
        "--study-name", "gang",
        "--storage", f"sqlite:///{database}",
        "--export", str(exported),
    ]  # fmt: skip
    run_script(args, tmp_path, env, timeout_s=300)
    study = optuna.load_study(study_name="gang", storage=f"sqlite:///{database}")
    signature = "2 hosts × 2x cpu, jax"
    assert study.user_attrs["device_signatures"] == [signature]
    trials = study.get_trials()
    assert sorted(t.params["global_batch_size"] for t in trials) == [64, 128, 256]  # once each
    # The verdict against one host at the same batch per device (the one-host baseline).
    baseline = next(iter(study.user_attrs["baselines"].values()))
    assert baseline["hosts"] == 2 and baseline["global_batch_size"] == 32
    answer = json.loads(exported.read_text())
    assert answer["speedup_over"] == "one host", answer
    assert "2 hosts" in answer["verdict"], answer["verdict"]
    for trial in trials:
        attrs = decode(trial).flat
        assert trial.state == TrialState.COMPLETE, attrs
        assert attrs["device_signature"] == signature
        assert attrs["num_replicas"] == 4, "every host's devices"
        assert attrs["per_replica_batch_size"] * 4 == trial.params["global_batch_size"]
        assert attrs["throughput"] > 0
