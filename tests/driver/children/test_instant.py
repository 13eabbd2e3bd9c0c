"""The instant stand-in runner (``TUNER_TEST_INSTANT_TRIALS=1``): the one choice of runner
(:func:`tuner.driver.children.child_runner`) picks it only when set, and it then answers every
request with what the driver's own classification accepts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_child import PLAN, make_spec

from tuner.core.outcome import classify
from tuner.core.protocol import decode_result
from tuner.driver.children import _instant as instant
from tuner.driver.children import _runner as runner
from tuner.driver.children import (
    child_runner,
    inspect_request,
    probe_request,
    trial_request,
    validate_request,
)

SPEC = make_spec()


def _trivial_child(request_path: Path, result_path: Path) -> list[str]:
    """A real process in place of the trial child: it writes a result naming itself."""
    code = "import sys; open(sys.argv[1], 'w').write('{\"status\": \"from a child\"}')"
    return [sys.executable, "-c", code, str(result_path)]


@pytest.mark.parametrize("value", [None, "", "0", "true", "yes"])
def test_the_stand_in_is_inert_unless_set_to_1(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(instant.INSTANT_ENV, raising=False)
    else:
        monkeypatch.setenv(instant.INSTANT_ENV, value)

    def refuse(request):
        raise AssertionError("the stand-in answered although it is off")

    monkeypatch.setattr(instant, "instant_run", refuse)
    monkeypatch.setattr(runner, "child_command", _trivial_child)
    chosen = child_runner()
    assert isinstance(chosen, runner.ProcessRunner)
    run = chosen.run(inspect_request(SPEC), {}, timeout_s=60)
    assert not instant.is_enabled()
    assert json.loads(run.result_text or "{}") == {"status": "from a child"}


def test_when_set_no_child_starts_and_every_mode_has_its_answer(monkeypatch):
    monkeypatch.setenv(instant.INSTANT_ENV, "1")

    def no_child(request_path, result_path):
        raise AssertionError("a child was started although the stand-in is on")

    monkeypatch.setattr(runner, "child_command", no_child)
    chosen = child_runner()
    assert isinstance(chosen, instant.InstantRunner)
    inspected = decode_result(chosen.run(inspect_request(SPEC), {}, 60).result_text or "")
    assert inspected.status == "ok" and inspected.payload["n_train"] == instant.N_TRAIN

    def trial(batch: int, rule: str, mode: str = "trial", seed: int | None = None):
        lr = 1e-3 * batch / 64
        request = (
            probe_request(SPEC, PLAN, batch, lr, steps=2)
            if mode == "probe"
            else trial_request(SPEC, PLAN, batch, lr, rule, seed=seed)
        )
        return classify(chosen.run(request, {}, 60), memory_capped=False)

    small, large = trial(64, "linear"), trial(512, "linear")
    assert small.status == large.status == "ok"
    assert small.values is not None and large.values is not None
    assert large.values[1] > small.values[1]  # throughput grows with the batch
    assert trial(64, "linear").values == small.values  # deterministic
    assert trial(64, "linear", seed=7).values != small.values  # the seed moves the loss
    assert small.attrs["device_kind"] == instant.DEVICE_KIND
    assert "wall_s" in small.attrs["timings"]
    probe = trial(512, "none", mode="probe")
    assert probe.status == "ok" and probe.values is None
    request = validate_request(SPEC, PLAN, 64, 1e-3, steps=4, loss_reduction="global")
    validate = classify(chosen.run(request, {}, 60), memory_capped=False)
    assert validate.status == "error" and instant.INSTANT_ENV in (validate.error or "")


def test_a_run_takes_the_seconds_set_asleep_and_says_so(monkeypatch):
    """``TUNER_TEST_INSTANT_SECONDS``: a training run keeps the driver waiting that long (as a
    child would), so several workers overlap; the check answers at once; a bad value is named."""
    monkeypatch.setenv(instant.SECONDS_ENV, "0.05")
    slept: list[float] = []
    monkeypatch.setattr(instant.time, "sleep", slept.append)
    trial = instant.instant_run(trial_request(SPEC, PLAN, 128, 2e-3))
    assert decode_result(trial.result_text or "").timings["training_s"] == 0.05
    instant.instant_run(inspect_request(SPEC))
    assert slept == [0.05]
    monkeypatch.setenv(instant.SECONDS_ENV, "soon")
    with pytest.raises(ValueError, match="TUNER_TEST_INSTANT_SECONDS must be a number"):
        instant.instant_run(trial_request(SPEC, PLAN, 128, 2e-3))
    monkeypatch.delenv(instant.SECONDS_ENV)
    assert instant.run_seconds() == 0.0
