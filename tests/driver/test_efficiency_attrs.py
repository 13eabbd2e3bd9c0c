"""The driver adds statistical efficiency and goodput to a trial's outcome when the noise scale
was measured."""

from __future__ import annotations

import pytest

from tuner.core.outcome import TrialOutcome
from tuner.driver.trial.objective import with_efficiency


def test_with_efficiency_adds_goodput_only_when_measured():
    measured = TrialOutcome("ok", (0.5, 1000.0), attrs={"gradient_noise_scale": 192.0})
    added = with_efficiency(measured, 64, 256)
    assert added.attrs["statistical_efficiency"] == pytest.approx(4 / 7)
    assert added.attrs["goodput"] == pytest.approx(4000 / 7)
    plain = TrialOutcome("ok", (0.5, 1000.0), attrs={})
    assert with_efficiency(plain, 64, 256) is plain
