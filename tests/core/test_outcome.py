"""Unit tests of trial-outcome classification and the out-of-memory predicates (pure)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from child_results import result_text
from optuna.trial import TrialState

from tuner.core import oom, outcome
from tuner.core.outcome import STATES, ChildRun, classify
from tuner.core.protocol import PROTOCOL_VERSION
from tuner.core.record import encode

OOM_STDERR = (
    "Epoch 1/3\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 10, in fit\n'
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: "
    "OOM when allocating tensor with shape[4096,4096]\n"
)


def result(**fields: Any) -> str:
    return result_text(fields)


def ok_result(**extra: Any) -> str:
    fields: dict[str, Any] = {
        "status": "ok",
        "final_loss": 0.25,
        "throughput": 1234.5,
        "train_loss": 0.2,
        "devices": ["/cpu:0", "/cpu:1"],
        "steps_per_epoch": 16,
        "timings": {
            "import_s": 1.0,
            "training_s": 1.5,
            "fit_s": 1.5,
            "child_started_at": 100.2,
            "child_finished_at": 102.9,
        },
    }
    fields.update(extra)
    return result_text(fields)


# --- STATES --------------------------------------------------------------------------------------


def test_states_table() -> None:
    assert STATES == {
        "ok": "COMPLETE",
        "oom": "PRUNED",
        "oom-implied": "PRUNED",
        "bracketed": "PRUNED",
        "batch-failed": "PRUNED",
        "diverged": "PRUNED",
        "dominated": "PRUNED",
        "timeout": "FAIL",
        "crashed": "FAIL",
        "error": "FAIL",
        "interrupted": "FAIL",
    }


def test_states_match_the_documented_table() -> None:
    rows = re.findall(r"^``([\w-]+)``\s+(COMPLETE|PRUNED|FAIL)\b", outcome.__doc__ or "", re.M)
    assert dict(rows) == STATES


@pytest.mark.parametrize(
    ("run", "capped", "status", "state"),
    [
        (ChildRun(0, ok_result()), False, "ok", TrialState.COMPLETE),
        (ChildRun(-9, None), True, "oom", TrialState.PRUNED),
        (ChildRun(0, result(status="diverged", error="nan")), False, "diverged", TrialState.PRUNED),
        (ChildRun(-9, None, timed_out=True), True, "timeout", TrialState.FAIL),
        (ChildRun(-11, None), False, "crashed", TrialState.FAIL),
        (ChildRun(0, "not json"), False, "error", TrialState.FAIL),
    ],
)
def test_a_child_run_ends_in_the_optuna_state_of_its_status(
    run: ChildRun, capped: bool, status: str, state: TrialState
) -> None:
    out = classify(run, memory_capped=capped)
    assert out.status == status
    assert TrialState[out.state] is state  # the name the driver hands to Optuna


# --- a result was written ------------------------------------------------------------------------


def test_ok_result_is_complete() -> None:
    run = ChildRun(
        0,
        ok_result(peak_memory_bytes=None, extra="x"),
        wall_s=3.0,
        spawned_at=100.0,
        ended_at=103.0,
    )
    out = classify(run, False)
    assert out.status == "ok"
    assert out.state == "COMPLETE"
    assert out.values == (0.25, 1234.5)
    assert out.error is None
    assert out.attrs["train_loss"] == 0.2
    assert out.attrs["devices"] == ["/cpu:0", "/cpu:1"]
    assert out.attrs["steps_per_epoch"] == 16
    assert out.attrs["final_loss"] == 0.25
    timings = out.attrs["timings"]
    # Spawn to the child's first line, and its last line to the parent holding the result.
    assert timings["process_start_s"] == pytest.approx(0.2)
    assert timings["handback_s"] == pytest.approx(0.1)
    assert (timings["import_s"], timings["training_s"], timings["wall_s"]) == (1.0, 1.5, 3.0)
    assert timings["unaccounted_s"] == pytest.approx(3.0 - (0.2 + 1.0 + 1.5 + 0.1))
    assert "fit_s" not in timings  # the breakdown holds disjoint phases only
    assert "peak_memory_bytes" not in out.attrs  # None values are not stored
    assert "extra" not in out.attrs  # unknown keys are not stored
    assert "status" not in out.attrs


def test_the_noise_scale_is_stored_once() -> None:
    # An older worker also wrote the critical batch, a copy of the noise scale: not kept.
    run = ChildRun(0, ok_result(gradient_noise_scale=503.6, critical_batch_size=503.6))
    attrs = classify(run, False).attrs
    assert attrs["gradient_noise_scale"] == 503.6
    assert "critical_batch_size" not in attrs


def test_ok_result_integer_measurements_become_floats() -> None:
    out = classify(ChildRun(0, ok_result(final_loss=1, throughput=100)), False)
    assert out.values == (1.0, 100.0)
    assert all(isinstance(v, float) for v in out.values or ())


def test_ok_result_without_timings_gets_wall_time() -> None:
    text = result(status="ok", final_loss=0.5, throughput=10.0)
    out = classify(ChildRun(0, text, wall_s=7.5), False)
    assert out.attrs["timings"] == {"wall_s": 7.5, "unaccounted_s": 7.5}


@pytest.mark.parametrize(
    "bad",
    [
        {"final_loss": float("nan")},
        {"final_loss": float("inf")},
        {"final_loss": None},
        {"final_loss": "0.5"},
        {"final_loss": True},
        {"throughput": 0},
        {"throughput": 0.0},
        {"throughput": -5.0},
        {"throughput": float("nan")},
        {"throughput": None},
    ],
)
def test_ok_result_with_bad_measurement_is_error(bad: dict[str, Any]) -> None:
    out = classify(ChildRun(0, ok_result(**bad)), memory_capped=False)
    assert out.status == "error"
    assert out.state == "FAIL"
    assert out.values is None
    assert out.error is not None
    assert out.error.startswith("bad measurement")


def test_nan_loss_message() -> None:
    out = classify(ChildRun(0, ok_result(final_loss=float("nan"))), memory_capped=True)
    assert out.error == "bad measurement: loss nan, throughput 1234.5"


@pytest.mark.parametrize(
    ("status", "expected", "state"),
    [
        ("oom", "oom", "PRUNED"),
        ("diverged", "diverged", "PRUNED"),
        ("error", "error", "FAIL"),
        ("invalid", "error", "FAIL"),
    ],
)
def test_result_statuses(status: str, expected: str, state: str) -> None:
    text = result(status=status, error=f"{status} happened", final_loss=0.3, epoch_losses=[1.0])
    out = classify(ChildRun(1, text, wall_s=2.0), memory_capped=False)
    assert out.status == expected
    assert out.state == state
    assert out.values is None
    assert out.error == f"{status} happened"
    assert out.attrs["epoch_losses"] == [1.0]
    assert out.attrs["timings"] == {"wall_s": 2.0, "unaccounted_s": 2.0}


def test_result_error_is_truncated() -> None:
    out = classify(ChildRun(1, result(status="error", error="x" * 5000)), memory_capped=False)
    assert out.error == "x" * 1000


def test_unknown_result_status() -> None:
    out = classify(ChildRun(0, result(status="weird")), memory_capped=False)
    assert out.status == "error"
    assert out.error == "unknown result status 'weird'"


def test_result_wins_over_crash_exit() -> None:
    # A child that wrote a result and then died (e.g. in teardown) keeps its result.
    out = classify(ChildRun(-11, ok_result(), stderr_tail=OOM_STDERR), memory_capped=True)
    assert out.status == "ok"


# --- timed out -----------------------------------------------------------------------------------


def test_timed_out() -> None:
    out = classify(ChildRun(-9, None, timed_out=True, wall_s=12.4), memory_capped=True)
    assert out.status == "timeout"
    assert out.state == "FAIL"
    assert out.error == "no result after 12 s; killed"
    assert out.attrs == {"timings": {"wall_s": 12.4}}  # stored as every trial's (not flat)
    encode(out.attrs)  # every name an outcome carries is one the record owns


# --- no result -----------------------------------------------------------------------------------


def test_sigsegv_under_cap_is_oom() -> None:
    out = classify(ChildRun(-11, None, stderr_tail="Fatal Python error\n"), memory_capped=True)
    assert out.status == "oom"
    assert out.state == "PRUNED"
    assert out.error is not None
    assert "SIGSEGV" in out.error
    assert "Fatal Python error" in out.error


@pytest.mark.parametrize("sig", [-9, -7, -6, -4])  # SIGKILL, SIGBUS, SIGABRT, SIGILL
def test_other_crash_signals_under_cap_are_oom(sig: int) -> None:
    assert classify(ChildRun(sig, None), memory_capped=True).status == "oom"


def test_sigsegv_without_cap_is_crashed() -> None:
    out = classify(ChildRun(-11, None, stderr_tail="line 1\nSegmentation fault\n"), False)
    assert out.status == "crashed"
    assert out.state == "FAIL"
    assert out.error == "child died by SIGSEGV: Segmentation fault"


def test_crash_without_stderr_has_no_trailing_colon() -> None:
    out = classify(ChildRun(-11, None), memory_capped=False)
    assert out.error == "child died by SIGSEGV"


def test_sigterm_under_cap_is_not_oom() -> None:
    out = classify(ChildRun(-15, None), memory_capped=True)
    assert out.status == "crashed"
    assert "SIGTERM" in (out.error or "")


def test_exit_code_without_result_is_error() -> None:
    out = classify(ChildRun(3, None, stderr_tail="boom\nValueError: bad\n", wall_s=1.0), True)
    assert out.status == "error"
    assert out.state == "FAIL"
    assert out.error == "child exited with code 3 without a result: ValueError: bad"
    assert out.attrs == {"timings": {"wall_s": 1.0}}


def test_clean_exit_without_result_is_error() -> None:
    out = classify(ChildRun(0, None, stderr_tail=OOM_STDERR), memory_capped=True)
    assert out.status == "error"
    assert "without a result" in (out.error or "")


@pytest.mark.parametrize("garbage", ["{not json", "", "status: ok"])
def test_garbage_result_is_error(garbage: str) -> None:
    out = classify(ChildRun(0, garbage), memory_capped=False)
    assert out.status == "error"
    assert out.state == "FAIL"
    assert out.error == "child exited with code 0 and left a result that is not JSON"


@pytest.mark.parametrize("text", ["[1, 2]", '"ok"', "null"])
def test_result_that_is_not_an_object_is_error(text: str) -> None:
    out = classify(ChildRun(0, text), memory_capped=False)
    assert out.status == "error"
    assert out.values is None


def test_oom_message_in_stderr_is_oom() -> None:
    out = classify(ChildRun(1, None, stderr_tail=OOM_STDERR), memory_capped=False)
    assert out.status == "oom"
    assert out.state == "PRUNED"
    assert "ResourceExhaustedError" in (out.error or "")


def test_oom_message_beats_garbage_result() -> None:
    out = classify(ChildRun(1, "{trunc", stderr_tail=OOM_STDERR), memory_capped=False)
    assert out.status == "oom"


# --- oom predicates ------------------------------------------------------------------------------


class ResourceExhaustedError(Exception):
    """Stands in for TensorFlow's class of the same name."""


class InternalError(Exception):
    """Stands in for TensorFlow's InternalError."""


def test_is_oom_error_by_class_name() -> None:
    assert oom.is_oom_error(ResourceExhaustedError("something"))
    assert oom.is_oom_error(MemoryError())


def test_is_oom_error_by_message() -> None:
    assert oom.is_oom_error(InternalError("Dst tensor is not initialized."))
    assert oom.is_oom_error(RuntimeError("Blas GEMM launch failed : a.shape=(8, 8)"))
    assert oom.is_oom_error(RuntimeError("CUDA_ERROR_OUT_OF_MEMORY: out of memory"))


def test_is_oom_error_by_chained_cause() -> None:
    try:
        try:
            raise ResourceExhaustedError("x")
        except ResourceExhaustedError as inner:
            raise RuntimeError("trial failed") from inner
    except RuntimeError as exc:
        assert oom.is_oom_error(exc)


def test_is_oom_error_by_implicit_context() -> None:
    try:
        try:
            raise InternalError("Dst tensor is not initialized")
        except InternalError:
            raise KeyError("cleanup")  # noqa: B904
    except KeyError as exc:
        assert oom.is_oom_error(exc)


def test_plain_errors_are_not_oom() -> None:
    assert not oom.is_oom_error(ValueError("shapes (3,) and (4,) not aligned"))
    assert not oom.is_oom_error(RuntimeError("loss became NaN"))
    try:
        try:
            raise ValueError("a")
        except ValueError as inner:
            raise RuntimeError("b") from inner
    except RuntimeError as exc:
        assert not oom.is_oom_error(exc)


def test_is_oom_error_survives_a_cycle() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert not oom.is_oom_error(a)


def test_oom_word_must_be_a_word() -> None:
    assert oom.is_oom_message("OOM when allocating tensor")
    assert not oom.is_oom_message("ZOOM level reached")
    assert not oom.is_oom_message("")


def test_summary_picks_the_oom_line() -> None:
    assert oom.summary(OOM_STDERR) == (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: "
        "OOM when allocating tensor with shape[4096,4096]"
    )
    text = "Traceback\n  out of memory while allocating 4 GiB\nRuntimeError: fit failed\n"
    assert oom.summary(text) == "out of memory while allocating 4 GiB"


def test_summary_without_oom_is_the_last_line() -> None:
    assert oom.summary("Traceback\n  line\nValueError: bad\n\n") == "ValueError: bad"
    assert oom.summary("OOM\nValueError: x") == "ValueError: x"  # too short to be telling
    assert oom.summary("") == ""
    assert oom.summary("\n \n") == ""


def test_is_probable_oom() -> None:
    assert not oom.is_probable_oom(0, OOM_STDERR, memory_capped=True)
    assert oom.is_probable_oom(-11, "", memory_capped=True)
    assert not oom.is_probable_oom(-11, "", memory_capped=False)
    assert oom.is_probable_oom(-11, OOM_STDERR, memory_capped=False)
    assert oom.is_probable_oom(1, "Dst tensor is not initialized", memory_capped=False)
    assert not oom.is_probable_oom(1, "ValueError: bad", memory_capped=True)
    assert not oom.is_probable_oom(-15, "", memory_capped=True)


def test_summary_of_a_graph_execution_error_is_tensorflows_own_message() -> None:
    text = (
        "Graph execution error:\n\nDetected at node compile_loss/Sparse defined at (most recent "
        'call last):\n  File "/tmp/x.py", line 6, in <module>\n\n  File "/k/nn.py", line 1438, '
        "in sparse_categorical_crossentropy\n\nReceived a label value of 7 which is outside the "
        "valid range of [0, 4).  Label values: 7 7\n\t [[{{node compile_loss/Sparse}}]] "
        "[Op:__inference_multi_step_on_iterator_171]"
    )
    assert oom.summary(text) == (
        "Received a label value of 7 which is outside the valid range of [0, 4).  Label values: 7 7"
    )


def test_a_result_of_another_protocol_version_fails_with_the_one_line_that_says_so() -> None:
    text = json.dumps({"protocol_version": -1, "status": "ok", "payload": {"final_loss": 0.1}})
    out = classify(ChildRun(0, text, wall_s=2.0), memory_capped=False)
    assert (out.status, out.values) == ("error", None)
    assert out.error is not None and "\n" not in out.error
    assert out.error.startswith("the result is of protocol version -1 and this driver reads")
    assert out.error.endswith("driver and worker are different tuner versions")
    assert out.attrs == {"timings": {"wall_s": 2.0}}


def test_a_result_of_this_version_in_another_shape_names_what_it_lacks() -> None:
    text = json.dumps({"protocol_version": PROTOCOL_VERSION, "payload": {}})
    out = classify(ChildRun(0, text), memory_capped=False)
    assert out.status == "error"
    assert out.error == (
        "the child left a result this driver cannot read: result: missing field 'status'"
    )
