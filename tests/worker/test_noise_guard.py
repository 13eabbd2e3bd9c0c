"""The noise meter as a side measurement: what it cannot measure, or what it raises, stops it with
the reason (``noise_scale_skipped``) and never fails the trial (fakes; no framework)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tuner.core.efficiency import NoiseScale
from tuner.worker import trial
from tuner.worker.noise import (
    HIDDEN_LOSS,
    GuardedNoise,
    NoiseUnsupported,
    failure_reason,
    guarded,
    overrides,
    unsupported_reason,
)

SUPPORTED = "the noise meter supports (x, y) batches of one input and one output"


class FakeMeter:
    """Measures one step per call (S = 2, |G|² = 1: B_simple 2), or raises ``fail_at`` call."""

    def __init__(self, fail_at: int | None = None, exc: Exception | None = None) -> None:
        self.scale = NoiseScale()
        self.seconds = 0.0
        self.stopped: str | None = None
        self.calls = 0
        self._fail_at, self._exc = fail_at, exc

    @property
    def measured_steps(self) -> int:
        return self.scale.steps

    def measure(self) -> float | None:
        self.calls += 1
        if self.calls == self._fail_at:
            assert self._exc is not None
            raise self._exc
        self.scale.update(1.0, 2.0)
        self.scale.mark_epoch()
        self.seconds += 0.5
        return self.scale.value


def test_a_working_meter_keeps_its_values():
    meter = FakeMeter()
    noise = guarded(lambda: meter)
    assert noise is not None
    assert [noise.measure(), noise.measure()] == [pytest.approx(2.0)] * 2
    assert noise.skipped is None and noise.stopped is None
    assert noise.measured_steps == 2
    assert noise.scale.history == meter.scale.history
    assert noise.seconds == 1.0


def test_no_meter_stays_none():
    assert guarded(lambda: None) is None


TRACED = (  # what TensorFlow's tracing re-raises: the name again inside the message
    'in user code:\n\n    File "/x/_noise.py", line 120, in replica_step  *\n'
    "        x, y = data\n\n"
    "    ValueError: replica_step() takes 2 positional arguments but 3 were given\n"
)
KERAS_CALL = (  # what Keras wraps around an error inside a layer's call
    "Exception encountered when calling Sequential.call().\n\n"
    "\x1b[1mInputs must be an iterable of at least one Tensor\x1b[0m\n\n"
    "Arguments received by Sequential.call():\n  • inputs=None\n  • training=True"
)


def test_an_error_in_a_measurement_stops_the_meter_with_the_reason():
    meter = FakeMeter(fail_at=2, exc=ValueError(TRACED))
    noise = guarded(lambda: meter)
    assert noise is not None
    assert noise.measure() == pytest.approx(2.0)
    assert noise.measure() == pytest.approx(2.0)  # the earlier estimate stays
    assert noise.skipped == (
        "the noise meter failed: ValueError: replica_step() takes 2 positional arguments but 3 "
        "were given"
    )  # the name once (tuner.core.errors.error_line)
    noise.measure()
    assert meter.calls == 2  # stopped: not called again
    assert noise.measured_steps == 1
    assert noise.seconds >= 0.5


def test_an_error_in_the_set_up_skips_the_measurement():
    def build() -> Any:
        raise ValueError(KERAS_CALL)

    noise = guarded(build)
    assert noise is not None
    assert noise.skipped == (  # Keras's own line, without the call frame around it
        "the noise meter failed: ValueError: Inputs must be an iterable of at least one Tensor"
    )
    assert noise.measure() is None
    assert (noise.measured_steps, noise.seconds, noise.stopped) == (0, 0.0, None)


def test_an_unsupported_setup_is_skipped_with_its_own_reason():
    def build() -> Any:
        raise NoiseUnsupported(f"{SUPPORTED}: this model has 2 outputs")

    noise = guarded(build)
    assert noise is not None and noise.skipped == f"{SUPPORTED}: this model has 2 outputs"


def test_an_out_of_memory_is_skipped_with_its_reason():
    oom = RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 123 bytes")
    noise = guarded(lambda: FakeMeter(fail_at=1, exc=oom))
    assert noise is not None
    assert noise.measure() is None
    assert noise.skipped == "the measurement ran out of memory (RuntimeError)"


def test_an_out_of_memory_the_meter_caught_itself_is_skipped_too():
    meter = FakeMeter()
    noise = GuardedNoise(meter)
    meter.stopped = "the measurement ran out of memory (ResourceExhaustedError)"
    noise.measure()
    assert noise.stopped == noise.skipped == meter.stopped


def test_interrupts_are_not_swallowed():
    noise = guarded(lambda: FakeMeter(fail_at=1, exc=KeyboardInterrupt()))  # type: ignore[arg-type]
    assert noise is not None
    with pytest.raises(KeyboardInterrupt):
        noise.measure()


def test_a_long_message_is_cut_to_one_short_line():
    reason = failure_reason(ValueError("x" * 1000))
    assert len(reason) < 400 and "\n" not in reason


class KerasModel:
    """Stands for Keras's own ``Model`` (its module is Keras's): a subclass that defines a method
    overrides it."""

    loss: Any = "mse"

    def train_step(self, data: Any) -> Any: ...

    def compute_loss(self, *args: Any) -> Any: ...


KerasModel.__module__ = "keras.src.models.model"


class OwnStep(KerasModel):
    loss = "mse"

    def train_step(self, data: Any) -> Any:  # as the guide writes it
        return self.compute_loss(y=data[1], y_pred=data[0])


class OwnStepOwnLossFunction(KerasModel):
    loss = "mse"  # compiled in by the spec (or tuner's default): not what train_step trains on

    def train_step(self, data: Any) -> Any:  # as the guide's lower-level example writes it
        return self.loss_fn(data[1], data[0])


class OwnStepOwnLoss(OwnStep):
    loss = None

    def compute_loss(self, *args: Any) -> Any: ...


class OwnStepNoLoss(OwnStep):
    loss = None


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (KerasModel(), None),  # Keras's train_step trains on compute_loss
        (OwnStep(), None),  # compiled with a loss: compute_loss gives it
        (OwnStepOwnLoss(), None),  # the user's compute_loss is the loss
        (OwnStepNoLoss(), None),  # its train_step calls compute_loss: an error there if any
        (OwnStepOwnLossFunction(), HIDDEN_LOSS),  # a compiled loss it never trains on
    ],
)
def test_only_a_hidden_loss_is_unsupported(model, reason):
    """Several outputs, sample weights and structured targets are measured (through
    ``compute_loss``); only a custom ``train_step`` that never calls ``compute_loss`` is not."""
    assert unsupported_reason(model) == reason


def test_an_instance_wrapped_train_step_is_not_an_override():
    model = KerasModel()
    model.train_step = lambda data: None  # type: ignore[method-assign]  # as FitLoop counts
    assert not overrides(model, "train_step")
    assert overrides(OwnStep(), "train_step") and not overrides(OwnStep(), "compute_loss")


def _session(replicas: int = 2) -> Any:
    return SimpleNamespace(plan=SimpleNamespace(num_replicas=replicas), source=SimpleNamespace())


def test_the_trial_reports_the_skip_beside_the_values():
    request = SimpleNamespace(noise_scale=True)
    noise = GuardedNoise(None, skipped=f"{SUPPORTED}: this model has 2 outputs")
    fields = trial._noise_fields(request, _session(), noise)  # type: ignore[arg-type]
    assert fields == {
        "noise_scale_skipped": f"{SUPPORTED}: this model has 2 outputs",
        "gradient_noise_scale": None,
        "gradient_noise_scale_per_epoch": [],
        "noise_scale_steps": 0,
    }


def test_a_working_meter_reports_as_before():
    request = SimpleNamespace(noise_scale=True)
    noise = GuardedNoise(FakeMeter())
    noise.measure()
    fields = trial._noise_fields(request, _session(), noise)  # type: ignore[arg-type]
    assert set(fields) == {
        "gradient_noise_scale",
        "gradient_noise_scale_per_epoch",
        "noise_scale_steps",
    }


def test_off_and_one_replica_report_as_before():
    off = trial._noise_fields(SimpleNamespace(noise_scale=False), _session(), None)  # type: ignore[arg-type]
    one = trial._noise_fields(SimpleNamespace(noise_scale=True), _session(1), None)  # type: ignore[arg-type]
    assert off == {}
    assert one == {"noise_scale_note": "the gradient noise scale needs at least 2 replicas"}
