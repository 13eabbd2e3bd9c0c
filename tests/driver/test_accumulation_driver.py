"""The driver's accumulation fallback with a fake child (the real one: tests/e2e/
test_accumulation_e2e.py): micro-steps double until the micro-batch fits, what is known not to
fit starts it further, a failure that is not memory stops it for the search, and the
validation check's verdicts (tolerance, BatchNormalization)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from child_results import result_text

from tuner.core.devices import DevicePlan
from tuner.core.outcome import ChildRun, TrialOutcome
from tuner.core.protocol import Event, TrialRequest
from tuner.core.spec import spec_from_dict
from tuner.driver.observer import QuietObserver
from tuner.driver.trial.accumulation import Accumulation
from tuner.driver.validate.accumulation import accumulation_check

PLAN = DevicePlan("cpu", 2, memory_limit_bytes=2**27)


class Capped:
    """A child that runs out of memory (killed under the cap) when its micro-batch is larger
    than ``capacity``, and fails with ``error`` when set."""

    def __init__(self, capacity: int, error: str | None = None) -> None:
        self.capacity, self.error = capacity, error
        self.steps: list[int] = []

    def run(
        self,
        request: TrialRequest,
        env: dict[str, str],
        timeout_s: float,
        on_event: Callable[[Event], None] | None = None,
    ) -> ChildRun:
        self.steps.append(request.accumulation_steps)
        if self.error:
            return ChildRun(0, result_text({"status": "error", "error": self.error}))
        if request.global_batch_size // request.accumulation_steps > self.capacity:
            return ChildRun(-signal.SIGKILL, None)
        return ChildRun(0, result_text({"status": "ok", "final_loss": 0.5, "throughput": 900.0}))


def fallback(runner: Capped, backend: str = "jax") -> tuple[Accumulation, list[str]]:
    spec = spec_from_dict(None, {"search.accumulation": True, "workload.backend": backend})
    notes: list[str] = []
    observer = QuietObserver()
    observer.note = notes.append  # type: ignore[method-assign]
    return Accumulation(spec, PLAN, runner, 60, observer, lambda e: None, lambda: None), notes


def attrs(batch: int) -> dict[str, Any]:
    return {"global_batch_size": batch, "learning_rate": 1e-3, "lr_rule": "none",
            "precision": "float32"}  # fmt: skip


def test_micro_steps_double_until_the_micro_batch_fits() -> None:
    runner = Capped(capacity=256)
    accumulation, notes = fallback(runner)
    oom = TrialOutcome("oom", error="OOM when allocating")
    outcome = accumulation.reach(3, oom, attrs(1024), None, [])
    assert runner.steps == [2, 4]  # 512 did not fit, 256 does
    assert outcome.status == "ok" and outcome.values == (0.5, 900.0)
    assert outcome.attrs["accumulation_steps"] == 4
    assert outcome.attrs["micro_batch_per_replica"] == 128
    assert "global batch 1024 does not fit in one step" in outcome.attrs["accumulation_reason"]
    assert "trial 3" in notes[0] and "trying 2 accumulated micro-steps of 256" in notes[0]


def test_a_batch_that_fits_stores_one_step() -> None:
    accumulation, _ = fallback(Capped(capacity=256))
    done = accumulation.reach(0, TrialOutcome("ok", values=(0.5, 1.0)), attrs(256), None, [])
    assert done.attrs == {"accumulation_steps": 1, "micro_batch_per_replica": 128}


def test_nothing_fits_leaves_the_batch_out_of_memory() -> None:
    runner = Capped(capacity=0)
    accumulation, _ = fallback(runner)
    outcome = accumulation.reach(0, TrialOutcome("oom-implied", error="x"), attrs(8), None, [])
    assert runner.steps == [2, 4]  # 4 micro-steps of 1 per replica is the last split
    assert outcome.status == "oom" and "even as 4 micro-steps of 1 per replica" in outcome.error


def test_a_failure_other_than_memory_stops_accumulating_for_the_search() -> None:
    runner = Capped(
        capacity=256, error="RuntimeError: `merge_call` called while defining a new graph"
    )
    accumulation, _ = fallback(runner, backend="tensorflow")
    first = accumulation.reach(0, TrialOutcome("oom", error="OOM"), attrs(1024), None, [])
    assert first.status == "oom"
    assert "fails under TensorFlow's MirroredStrategy" in first.attrs["accumulation_skipped"]
    again = accumulation.reach(1, TrialOutcome("oom-implied", error="x"), attrs(2048), None, [])
    assert runner.steps == [2] and again.attrs["accumulation_skipped"] == accumulation.failed


def test_the_weights_check_holds_to_its_tolerance_except_under_batch_norm() -> None:
    figures = {"compared": True, "variables_compared": 4, "model_relative_difference": 6.5e-7}
    assert accumulation_check(figures, []).passed
    wrong = {**figures, "model_relative_difference": 0.5}  # e.g. summed, not averaged
    assert not accumulation_check(wrong, []).passed
    batch_norm = accumulation_check(wrong, ["batch_normalization"])
    assert batch_norm.passed and "normalizes each micro-batch" in str(batch_norm.warning)


class _Asked(Exception):
    pass


def test_the_accumulation_proof_multiplies_in_full_float32() -> None:
    """Both children are started with TensorFloat-32 off (JAX and TensorFlow): on a GPU its
    rounding parts the two summation orders by more than the tolerance."""
    from tuner.driver.validate.accumulation import run_accumulation_validation

    seen: list[dict[str, str]] = []

    class Recording:
        def run(self, request: Any, env: dict[str, str], timeout_s: float, on_event: Any = None):
            seen.append(env)
            raise _Asked

    spec = spec_from_dict(None, {"workload.backend": "jax"})
    with contextlib.suppress(_Asked):
        run_accumulation_validation(
            spec, PLAN, 2, micro_batch=None, lr_rule="none", steps=4, timeout_s=60,
            runner=Recording(),
        )  # fmt: skip
    assert seen and seen[0]["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"
    assert seen[0]["NVIDIA_TF32_OVERRIDE"] == "0"
    assert seen[0]["KERAS_BACKEND"] == "tensorflow"  # the plan's own environment is kept


def test_the_control_judges_a_failed_proof_against_rounding_order() -> None:
    """Failed at the fixed tolerance, the proof is judged against the control's figure: within
    3x of it a pass with a warning, past it a failure; the control is not run for a pass."""
    from tuner.driver.validate.accumulation import controlled_accumulation

    failed = accumulation_check(
        {"compared": True, "variables_compared": 8, "model_relative_difference": 2.3e-4}, []
    )
    assert not failed.passed
    control = {"compared": True, "model_relative_difference": 8.9e-4}
    rounding = controlled_accumulation(failed, control)
    assert rounding.passed and "rounding order alone" in str(rounding.warning)
    assert rounding.figures["control_relative_difference"] == 8.9e-4
    wrong = controlled_accumulation(failed, {"compared": True, "model_relative_difference": 1e-6})
    assert not wrong.passed
    assert "control run (true steps, batches reversed) 1.0e-06" in wrong.summary
    assert not controlled_accumulation(failed, {"compared": False}).passed


class _Weights:
    """A validation child that writes one variable moved from 0 to 1, the accumulated run's
    ``apart`` further and the control's ``control`` further; records what it was asked."""

    def __init__(self, apart: float, control: float) -> None:
        self.apart, self.control = apart, control
        self.asked: list[tuple[int, bool]] = []

    def run(self, request: Any, env: dict[str, str], timeout_s: float, on_event: Any = None):
        import numpy as np

        from tuner.driver.validate.checks import REORDER_ENV
        from tuner.worker.validate import save_weights

        reversed_ = env.get(REORDER_ENV) == "1"
        self.asked.append((request.accumulation_steps, reversed_))
        shift = self.control if reversed_ else self.apart if request.accumulation_steps > 1 else 0
        save_weights(
            Path(request.weights_file), {"w": np.zeros(4)}, {"w": np.ones(4) * (1 + shift)}
        )
        read = {"status": "ok", "model_variables": 1, "variable_names": ["w"], "steps": 4}
        return ChildRun(0, result_text(read))


def _proof(runner: _Weights) -> dict[str, Any]:
    from tuner.driver.validate.accumulation import run_accumulation_validation

    spec = spec_from_dict(None, {"workload.backend": "jax"})
    return run_accumulation_validation(
        spec, PLAN, 2, micro_batch=None, lr_rule="none", steps=4, timeout_s=60, runner=runner
    )


def test_a_failed_proof_starts_the_control_a_passed_one_does_not() -> None:
    runner = _Weights(apart=1e-7, control=0.0)
    assert _proof(runner)["passed"] and runner.asked == [(1, False), (2, False)]
    runner = _Weights(apart=1e-4, control=2e-4)  # rounding order moves it further: excused
    report = _proof(runner)
    assert runner.asked == [(1, False), (2, False), (1, True)]  # the true steps, reversed
    assert report["passed"] and report["warnings"]
    assert report["checks"]["accumulated_weights"]["control_relative_difference"] > 1e-4
    runner = _Weights(apart=1e-4, control=1e-7)  # beyond rounding: a wrong accumulation
    assert not _proof(runner)["passed"]


def test_a_control_that_diverged_excuses_nothing() -> None:
    """inf <= 3 x inf holds: a run that diverged (NaN weights, an infinite figure) must not
    pass against a control that diverged too."""
    from tuner.driver.validate.accumulation import controlled_accumulation

    for apart, floor in ((float("inf"), float("inf")), (0.9, float("inf"))):
        failed = accumulation_check(
            {"compared": True, "variables_compared": 8, "model_relative_difference": apart}, []
        )
        control = {"compared": True, "model_relative_difference": floor}
        assert not controlled_accumulation(failed, control).passed
