"""The protocol between the driver and the child (pure): every request, event and result reads
back as it was written, a message of another protocol version is refused with one line, and one
that lacks a field, has an unknown one or a value of the wrong type names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuner.core.devices import DevicePlan
from tuner.core.protocol import (
    EVENT_PREFIX,
    PROTOCOL_VERSION,
    Budget,
    EpochEvent,
    InspectRequest,
    LearningRateRule,
    NotJSONError,
    ProbeAttemptEvent,
    ProbeRequest,
    ProbeResultEvent,
    ProgressEvent,
    ProtocolError,
    ProtocolVersionError,
    Result,
    Target,
    TrialRequest,
    ValidateRequest,
    WindowsDoneEvent,
    Workload,
    decode_event,
    decode_request,
    decode_result,
    encode_event,
    encode_request,
    encode_result,
)

PLAN = DevicePlan(
    "gpu", 2, gpu_indices=(0, 1), gpu_names=("H200", "H200"), memory_limit_bytes=2**30
)
WORKLOAD = Workload(model="m:build", data=None, loss="mse", optimizer="adam", dataset="m:ds")
RULE = LearningRateRule(
    name="linear-warmup",
    ratio=4.0,
    base_lr=1e-3,
    learning_rate=4e-3,
    warmup_steps=None,
    warmup_epochs=0.5,
    sample_budget=True,
)
RUN: dict[str, Any] = {
    "plan": PLAN,
    "workload": WORKLOAD,
    "global_batch_size": 256,
    "learning_rate": 4e-3,
    "budget": Budget(train_samples=16_384, val_samples=512),
    "seed": 3,
    "precision": "mixed_bfloat16",
    "loop": "custom",
    "rule": RULE,
    "target": Target(loss=0.3, eval_every_samples=None, cadence_batches=(64, 256)),
    "model_hyperparameters": {"units": 64, "dropout": 0.1},
    "spawned_at": 1_700_000_000.5,
}
REQUESTS = [
    InspectRequest(
        workload=WORKLOAD,
        budget=Budget(epochs=3),
        loop="fit",
        lr_rules=("none", "sqrt-adam"),
        max_ratio=8,
    ),
    TrialRequest(**RUN, noise_scale=True, noise_scale_steps=4),
    ProbeRequest(
        **{**RUN, "budget": Budget(epochs=1, steps_per_epoch=5), "target": None},
        probe_search={"kind": "grid", "sizes": [64, 128], "fits": [[64, True]]},
        probe_sizes_per_child=1,
    ),
    ValidateRequest(**RUN, loss_reduction="replica-mean"),
]
EVENTS = [
    EpochEvent(
        epoch=2, epochs=6, loss=0.0123, throughput=21_687.5, samples=2048, total_samples=6144
    ),
    ProgressEvent(step=3, steps=8, samples=384, total_samples=1024),
    WindowsDoneEvent(),
    ProbeAttemptEvent(batch=512),
    ProbeResultEvent(batch=512, fits=False, seconds=1.5, error="ResourceExhaustedError: OOM"),
    ProbeResultEvent(batch=256, fits=True, seconds=0.5, peak_memory_bytes=123_456),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: r.mode)
def test_every_request_reads_back_as_it_was_written(request_: Any) -> None:
    text = encode_request(request_)
    assert decode_request(text) == request_
    data = json.loads(text)
    assert (data["protocol_version"], data["mode"]) == (PROTOCOL_VERSION, request_.mode)


def test_a_request_keeps_its_types_across_the_wire() -> None:
    back = decode_request(encode_request(REQUESTS[1]))
    assert isinstance(back, TrialRequest) and isinstance(back.plan, DevicePlan)
    assert back.plan.gpu_indices == (0, 1) and back.target is not None
    assert back.target.cadence_batches == (64, 256)  # a tuple again, not JSON's list


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.kind)
def test_every_event_is_one_line_that_reads_back(event: Any) -> None:
    line = encode_event(event)
    assert line.startswith(EVENT_PREFIX) and line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line[len(EVENT_PREFIX) :])["event"] == event.kind
    assert decode_event(line) == event


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 1/3 - loss: 0.5",  # the user's own output
        EVENT_PREFIX + "{not json",
        EVENT_PREFIX + "[1, 2]",
        EVENT_PREFIX + '{"event": "no-such-kind"}',
        EVENT_PREFIX + '{"event": "probe_attempt"}',  # a field missing
        EVENT_PREFIX + '{"event": "probe_attempt", "batch": "64"}',  # of the wrong type
        EVENT_PREFIX + '{"event": "windows_done", "extra": 1}',
    ],
)
def test_a_line_that_is_not_an_event_of_this_protocol_is_passed_over(line: str) -> None:
    assert decode_event(line) is None


def test_a_nan_loss_travels_in_an_epoch_event() -> None:
    event = decode_event(encode_event(EpochEvent(1, 2, float("nan"), 0.0, 10, 20)))
    assert isinstance(event, EpochEvent) and event.loss != event.loss


def test_a_result_reads_back_with_its_payload_as_written() -> None:
    result = Result(
        status="diverged",
        error="validation loss is nan",
        traceback=None,
        timings={"fit_s": 1.5, "child_started_at": 100.0},
        payload={"final_loss": float("inf"), "epoch_losses": [0.5, 0.25], "devices": ["/cpu:0"]},
    )
    back = decode_result(encode_result(result))
    assert back.payload["epoch_losses"] == [0.5, 0.25] and back.payload["final_loss"] == float(
        "inf"
    )
    assert (back.status, back.error, back.timings) == (result.status, result.error, result.timings)
    assert json.loads(encode_result(Result(status="ok")))["protocol_version"] == PROTOCOL_VERSION


def test_a_payload_value_json_cannot_hold_is_written_as_its_text() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert decode_result(encode_result(Result(status="ok", payload={"x": Odd()}))).payload == {
        "x": "odd"
    }


def _with(text: str, **changes: Any) -> str:
    data = json.loads(text)
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not None})


@pytest.mark.parametrize("found", [0, PROTOCOL_VERSION + 1, "1", None])
def test_a_request_of_another_protocol_version_is_refused_with_one_line(found: Any) -> None:
    text = _with(encode_request(REQUESTS[1]), protocol_version=found)
    with pytest.raises(ProtocolVersionError) as raised:
        decode_request(text)
    message = str(raised.value)
    assert "\n" not in message
    assert message.endswith("driver and worker are different tuner versions")
    assert f"reads version {PROTOCOL_VERSION}" in message
    shown = "of no protocol version" if found is None else f"of protocol version {found}"
    assert message.startswith(f"the request is {shown} and this worker")


def test_a_result_of_another_protocol_version_is_refused_with_one_line() -> None:
    text = _with(encode_result(Result(status="ok")), protocol_version=PROTOCOL_VERSION + 1)
    with pytest.raises(ProtocolVersionError, match=r"^the result is of protocol version \d+ and"):
        decode_result(text)


def test_a_request_missing_a_field_names_it() -> None:
    data = json.loads(encode_request(REQUESTS[1]))
    del data["global_batch_size"]
    with pytest.raises(ProtocolError, match=r"^request: missing field 'global_batch_size'$"):
        decode_request(json.dumps(data))
    del data["plan"]["num_replicas"]
    with pytest.raises(ProtocolError, match=r"^request\.plan: missing field 'num_replicas'$"):
        decode_request(json.dumps(data))


def test_a_field_with_a_default_may_be_left_out() -> None:
    data = json.loads(encode_request(REQUESTS[1]))
    for optional in ("spawned_at", "rule", "target", "noise_scale_steps"):
        del data[optional]
    back = decode_request(json.dumps(data))
    assert isinstance(back, TrialRequest) and (back.rule, back.target) == (None, None)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("global_batch_size",), "64", r"^request\.global_batch_size: expected int, got '64'$"),
        (("global_batch_size",), True, r"^request\.global_batch_size: expected int, got True$"),
        (("noise_scale",), 1, r"^request\.noise_scale: expected bool, got 1$"),
        (("rule", "ratio"), None, r"^request\.rule\.ratio: expected float, got None$"),
        (("target", "cadence_batches"), 64, r"^request\.target\.cadence_batches: expected a list"),
        (("plan",), [], r"^request\.plan: expected an object, got list$"),
    ],
)
def test_a_value_of_the_wrong_type_names_its_field(
    path: tuple[str, ...], value: Any, message: str
) -> None:
    data = json.loads(encode_request(REQUESTS[1]))
    inner = data
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    with pytest.raises(ProtocolError, match=message):
        decode_request(json.dumps(data))


def test_an_unknown_field_or_mode_is_refused() -> None:
    text = encode_request(REQUESTS[0])
    with pytest.raises(ProtocolError, match=r"^request: unknown field 'global_batch_sise'$"):
        decode_request(_with(text, global_batch_sise=64))
    with pytest.raises(ProtocolError, match=r"^unknown mode 'train'; known: inspect, trial, probe"):
        decode_request(_with(text, mode="train"))
    with pytest.raises(NotJSONError, match=r"^the request is not a JSON object$"):
        decode_request("[1, 2]")


@pytest.mark.slow
def test_the_child_refuses_a_request_of_another_version_with_one_line(tmp_path: Path) -> None:
    request, result = tmp_path / "request.json", tmp_path / "result.json"
    request.write_text(_with(encode_request(REQUESTS[0]), protocol_version=PROTOCOL_VERSION + 1))
    done = subprocess.run(
        [sys.executable, "-m", "tuner.worker", str(request), str(result)],
        env={**os.environ, "TUNER_PARENT_PID": str(os.getpid())},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = decode_result(result.read_text())
    assert answer.status == "error" and answer.error is not None
    assert answer.error == (
        f"the request is of protocol version {PROTOCOL_VERSION + 1} and this worker reads "
        f"version {PROTOCOL_VERSION}: driver and worker are different tuner versions"
    )
    assert answer.traceback is None and "child_total_s" in answer.timings
