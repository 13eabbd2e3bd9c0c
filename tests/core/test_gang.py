"""The gang's pure core: who is in it (options, then the launcher's environment), the plan
across hosts, and the one run that stands for a trial every rank trained."""

from __future__ import annotations

import pytest

from tuner.core.devices import DevicePlan, hosts_in
from tuner.core.errors import ConfigError
from tuner.core.gang import DEFAULT_PORT, KERAS_ISSUE, combine, first_node, read_gang
from tuner.core.outcome import ChildRun, classify
from tuner.core.protocol import Result, encode_result


def test_the_options_win_over_the_environment_and_one_host_is_the_default() -> None:
    assert read_gang(None, None, None, {}, "tensorflow").hosts == 1
    env = {"KERAS_DISTRIBUTION_NUM_PROCESSES": "4", "KERAS_DISTRIBUTION_PROCESS_ID": "3",
           "KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:1234"}  # fmt: skip
    gang = read_gang(None, None, None, env, "jax")
    assert (gang.hosts, gang.rank, gang.coordinator) == (4, 3, "10.0.0.1:1234")
    assert gang.source == "KERAS_DISTRIBUTION_*" and not gang.leads
    assert gang.runtime_address == "10.0.0.1:1235"
    mine = read_gang(2, 1, "h0:99", env, "jax")
    assert (mine.hosts, mine.rank, mine.coordinator, mine.source) == (2, 1, "h0:99", "options")


def test_a_multi_node_slurm_step_gives_a_gangs_rank_and_its_first_node() -> None:
    env = {"SLURM_STEP_NUM_NODES": "3", "SLURM_NTASKS": "3", "SLURM_PROCID": "2",
           "SLURM_STEP_NODELIST": "gpu[07-09]"}  # fmt: skip
    gang = read_gang(3, None, None, env, "jax")
    assert (gang.hosts, gang.rank, gang.coordinator) == (3, 2, f"gpu07:{DEFAULT_PORT}")
    assert gang.source == "SLURM_*"
    # Without --hosts a step is what it was: workers sharing one study, each its own search.
    alone = read_gang(None, None, None, env, "tensorflow")
    assert (alone.hosts, alone.rank, alone.coordinator) == (1, 0, None)
    with pytest.raises(ConfigError, match="one tuner per host"):
        read_gang(3, None, None, {**env, "SLURM_NTASKS": "6"}, "jax")


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [("gpu[03-06,9],login1", "gpu03"), ("node7", "node7"), ("a1,b2", "a1"), ("n[12]", "n12")],
)
def test_the_first_node_of_a_slurm_node_list(nodelist: str, first: str) -> None:
    assert first_node(nodelist) == first


def test_an_indexed_job_gives_the_rank_and_the_options_the_rest() -> None:
    gang = read_gang(2, None, "tuner-0.tuner:29470", {"JOB_COMPLETION_INDEX": "1"}, "jax")
    assert (gang.rank, gang.source) == (1, "JOB_COMPLETION_INDEX")
    # An Indexed Job of independent workers (no --hosts): each its own search, as before.
    assert read_gang(None, None, None, {"JOB_COMPLETION_INDEX": "1"}, "jax").rank == 0
    ipv6 = read_gang(2, 0, "[::1]:29470", {}, "jax")
    assert ipv6.runtime_address == "[::1]:29471" and ipv6.address == ("::1", 29470)


@pytest.mark.parametrize(
    ("hosts", "rank", "coordinator", "line"),
    [
        (2, 0, None, "needs --coordinator HOST:PORT"),
        (2, 2, "h:1", "must be 0 to 1"),
        (2, 0, "h", "must be HOST:PORT"),
        (2, 0, "h:65535", "port below 65535"),
        (65, 0, "h:1", "must be 1 to 64"),
    ],
)
def test_a_gang_that_cannot_be_is_one_line(
    hosts: int, rank: int, coordinator: str | None, line: str
) -> None:
    with pytest.raises(ConfigError, match=line):
        read_gang(hosts, rank, coordinator, {}, "jax")


def test_tensorflow_across_hosts_is_refused_naming_the_keras_issue() -> None:
    with pytest.raises(ConfigError, match=f"backend jax.*{KERAS_ISSUE}"):
        read_gang(2, 0, "h:1", {}, "tensorflow")


def test_a_plan_across_hosts_counts_every_device_and_splits_each_host_alone() -> None:
    plan = DevicePlan("cpu", 2, backend="jax", memory_limit_bytes=2**28).across(2)
    assert (plan.num_replicas, plan.local_replicas) == (4, 2)
    assert plan.signature == "2 hosts × 2x cpu, jax"
    env = plan.child_environment({})
    assert env["XLA_FLAGS"].endswith("=2")  # each host's own devices
    assert env["TUNER_CPU_MEMORY_CAP_BYTES"] == str(2 * 2**28)
    assert plan.single_device().hosts == 1
    # One host's reuse keys are those stored before hosts were counted.
    assert "hosts" not in DevicePlan("cpu", 2).to_dict() and plan.to_dict()["hosts"] == 2


def _run(status: str | None, stderr: str = "", timed_out: bool = False) -> ChildRun:
    text = None if status is None else encode_result(Result(status=status, error=status))
    return ChildRun(returncode=0 if status == "ok" else 1, result_text=text,
                    stderr_tail=stderr, timed_out=timed_out)  # fmt: skip


def test_every_rank_ok_is_rank_zeros_run() -> None:
    runs = [_run("ok", "zero"), _run("ok", "one")]
    assert combine(runs, [False, False]) is runs[0]
    same = [_run("diverged"), _run("diverged")]
    assert combine(same, [False, False]) is same[0]


def test_out_of_memory_on_any_rank_is_the_trials_outcome() -> None:
    # Rank 1 ran out of memory; rank 0, left in a collective, failed or was ended.
    runs = [_run("error", "collective failed"), _run("oom", "RESOURCE_EXHAUSTED")]
    found = combine(runs, [True, False])
    assert classify(found, memory_capped=True).status == "oom"
    assert found.rank == "rank 1 of 2"
    # A rank killed for memory leaves no result: its stderr says it.
    died = [_run(None, "", timed_out=False), _run(None, "RESOURCE_EXHAUSTED: out of memory")]
    assert combine(died, [False, False]).rank == "rank 1 of 2"


def test_a_rank_that_died_is_the_cause_not_the_ones_the_leader_ended() -> None:
    runs = [_run(None, "ended by the leader"), _run(None, "Killed")]
    found = combine(runs, [True, False])
    assert "Killed" in found.stderr_tail and classify(found, memory_capped=False).status != "ok"
    hung = [_run("ok"), _run(None, timed_out=True)]
    assert classify(combine(hung, [False, False]), memory_capped=False).status == "timeout"


def test_a_gangs_baseline_is_one_host_at_the_same_batch_per_device() -> None:
    plan = DevicePlan("cpu", 2, backend="jax").across(2)
    one = plan.baseline_plan()
    assert (one.hosts, one.num_replicas, plan.baseline_batch(128)) == (1, 2, 64)
    assert 128 // plan.num_replicas == plan.baseline_batch(128) // one.num_replicas
    assert DevicePlan("cpu", 2).baseline_plan().num_replicas == 1
    assert DevicePlan("cpu", 2).baseline_batch(128) == 128
    assert hosts_in(plan.signature) == 2 and hosts_in(DevicePlan("cpu", 2).signature) == 1


def test_the_verdict_and_the_answer_speak_in_hosts() -> None:
    from tuner.core.recommend._verdict import measure_speedup, verdict
    from tuner.core.stats import Interval
    from tuner.views.recommendation import answer_text

    baseline = {"throughput": 1000.0, "hosts": 4, "throughput_ci": [950.0, 1050.0]}
    speedup = measure_speedup(3100.0, Interval(3000.0, 3200.0, "t"), 16, baseline)
    assert (speedup.unit, speedup.replicas, round(speedup.efficiency or 0, 3)) == ("host", 4, 0.775)
    assert verdict(speedup).startswith("4 hosts give 3.10× one host (95 % CI")
    assert "78 % efficiency" in verdict(speedup)
    rec = {"global_batch_size": 4096, "per_replica_batch_size": 128, "num_replicas": 32,
           "devices": ["/gpu:0"] * 8, "device_signature": "4 hosts × 8x NVIDIA H100, jax",
           "learning_rate": 0.002}  # fmt: skip
    assert answer_text(rec).startswith("Use global batch 4096 (128 per GPU on 4 hosts × 8 GPUs)")


def test_a_probe_size_one_rank_cannot_fit_is_the_gangs_answer() -> None:
    # One size per child across hosts; the rank that did not fit it answers for the gang.
    from tuner.core.probe import sizes_per_child

    assert sizes_per_child("cpu", False, hosts=2) == 1 and sizes_per_child("cpu", False) is None
    attempts = {"probe": True, "attempts": [{"batch": 512, "fits": False}]}
    oom = ChildRun(returncode=0, result_text=encode_result(Result(status="ok", payload=attempts)))
    runs = [_run(None, "collective aborted"), oom]
    assert combine(runs, [False, False]).result_text == oom.result_text
    fits = {"probe": True, "attempts": [{"batch": 512, "fits": True}]}
    both = [ChildRun(0, encode_result(Result(status="ok", payload=fits)))] * 2
    assert combine(both, [False, False]) is both[0]


def test_a_rank_short_of_its_own_memory_is_the_cause_even_when_the_leader_ended_it() -> None:
    # Rank 1 under its own --memory-limit: a C++ allocation fails (SIGABRT, std::bad_alloc), or
    # it stalls short of memory while rank 0 times out in the collective and is the one to end.
    died = ChildRun(returncode=-6, result_text=None, stderr_tail="what():  std::bad_alloc")
    found = combine([_run("error", "Gloo context initialization failed"), died], [False, True])
    assert found.rank == "rank 1 of 2"
    assert classify(found, memory_capped=False).status == "oom"
