"""The batch-size model (McCandlish et al. 2018) on planted data: data that follows it exactly,
and data that does not."""

from __future__ import annotations

import pytest
from trials import SIGNATURE, make_trial, run_recommend, target_trial

from tuner.core.batch_model import (
    BatchPoint,
    points_from_trials,
    predict,
    predicted_samples,
    predicted_steps,
)

B_NOISE, E_MIN = 100.0, 10_000.0
BATCHES = [32, 64, 128, 256, 512]


def throughput(batch: int) -> float:
    """Samples/s that saturate with the batch, as on real devices."""
    return 4000.0 * batch / (batch + 64)


def exact_points(batches: list[int] = BATCHES) -> list[BatchPoint]:
    return [
        BatchPoint(b, throughput(b), predicted_samples(b, B_NOISE, E_MIN), None) for b in batches
    ]


def test_data_that_follows_the_model_exactly() -> None:
    found = predict(exact_points(), [B_NOISE * 0.95, B_NOISE, B_NOISE * 1.05], [200, 200, 200])
    assert found["noise_scale"] == B_NOISE
    assert found["e_min"] == pytest.approx(E_MIN)
    assert found["s_min"] == pytest.approx(E_MIN / B_NOISE)
    assert found["agreement"] == pytest.approx(1.0)
    rows = found["per_batch"]
    assert [row["global_batch_size"] for row in rows] == BATCHES
    for row in rows:
        assert row["predicted_samples"] == pytest.approx(row["measured_samples"])
        assert row["held_out_ratio"] == pytest.approx(1.0)
        assert row["predicted_steps"] * row["global_batch_size"] == pytest.approx(
            row["predicted_samples"]
        )
    # time = E(B) / T(B) = (E_min / 4000)(1 + B/100)(B + 64)/B: smallest at B = 80, so of the
    # grid 64 (1.64 · 2 = 3.28) beats 128 (2.28 · 1.5 = 3.42).
    times = {b: predicted_samples(b, B_NOISE, E_MIN) / throughput(b) for b in BATCHES}
    assert found["fastest_predicted_batch"] == min(times, key=times.__getitem__) == 64
    assert found["trusted"] is True
    assert found["trust"].startswith("Trust it between global batches 32 and 512")


def test_steps_and_samples_follow_the_paper() -> None:
    # S(B) = S_min (1 + B_noise / B) and E(B) = E_min (1 + B / B_noise): at B = B_noise both are
    # twice their minimum.
    assert predicted_samples(B_NOISE, B_NOISE, E_MIN) == 2 * E_MIN
    assert predicted_steps(B_NOISE, B_NOISE, E_MIN) == 2 * E_MIN / B_NOISE


def test_data_that_does_not_follow_the_model_is_not_trusted() -> None:
    # Every batch needs the same samples: the model (B_noise = 100) predicts 16× more at 512.
    flat = [BatchPoint(b, throughput(b), 20_000.0) for b in BATCHES]
    found = predict(flat, [B_NOISE], [200])
    ratios = [row["held_out_ratio"] for row in found["per_batch"]]
    assert ratios[0] > 1.25 and ratios[-1] < 0.75
    assert found["trusted"] is False
    assert "outside ±25 %" in found["trust"]
    assert found["trust"].startswith("Do not trust it beyond the measured batches")


def test_one_outlier_does_not_move_the_fit() -> None:
    points = exact_points()
    points[2] = BatchPoint(128, throughput(128), 5 * predicted_samples(128, B_NOISE, E_MIN))
    found = predict(points, [B_NOISE], [200])
    assert found["e_min"] == pytest.approx(E_MIN)  # the median ignores the outlier
    assert found["agreement"] == pytest.approx(1.0)
    assert found["per_batch"][2]["held_out_ratio"] == pytest.approx(5.0)
    assert found["trusted"] is False


def test_too_few_batches_or_an_unsteady_noise_scale_are_not_trusted() -> None:
    two = predict(exact_points([64, 128]), [B_NOISE], [200])
    assert two["agreement"] == pytest.approx(1.0) and two["trusted"] is False
    assert "only 2 batch sizes reached the target (3 or more" in two["trust"]
    one = predict(exact_points([64]), [B_NOISE], [200])
    assert one["agreement"] is None and one["per_batch"][0]["held_out_ratio"] is None
    few_steps = predict(exact_points(), [B_NOISE], [10, 12])
    assert "B_noise rests on few steps (11 per trial, median)" in few_steps["trust"]
    varying = predict(exact_points(), [20.0, 100.0, 400.0], [200])
    assert "B_noise varies a lot across trials" in varying["trust"]


def test_batches_that_missed_the_target_are_predicted_not_fitted() -> None:
    points = [*exact_points([32, 64, 128]), BatchPoint(512, throughput(512))]
    found = predict(points, [B_NOISE], [200])
    last = found["per_batch"][-1]
    assert last["measured_samples"] is None and last["held_out_ratio"] is None
    assert last["predicted_samples"] == pytest.approx(predicted_samples(512, B_NOISE, E_MIN))
    assert last["predicted_time_to_target_s"] == pytest.approx(
        last["predicted_samples"] / throughput(512)
    )


@pytest.mark.parametrize(
    ("scales", "points", "why"),
    [
        ([], exact_points(), "no trial measured the gradient noise scale"),
        ([B_NOISE], [BatchPoint(64, 100.0)], "no batch size reached the target"),
    ],
)
def test_no_prediction_says_why(scales: list[float], points: list[BatchPoint], why: str) -> None:
    found = predict(points, scales)
    assert found["e_min"] is None and found["per_batch"] == [] and found["trusted"] is False
    assert found["trust"].startswith(f"No prediction: {why}")


def test_each_batch_is_represented_by_its_rule_that_reached_the_target_first() -> None:
    trials = [
        target_trial(0, 64, "none", times=[3.0], samples=8192, throughput=900.0),
        target_trial(1, 64, "sqrt", times=[2.0], samples=4096, throughput=1000.0),
        target_trial(2, 128, "none", times=None, throughput=1500.0),
        target_trial(3, 128, "sqrt", times=None, throughput=1700.0),
    ]
    assert points_from_trials(trials) == [
        BatchPoint(64, 1000.0, 4096.0, 2.0),
        BatchPoint(128, 1700.0),
    ]


def test_the_recommendation_reports_the_prediction_with_a_target() -> None:
    trials = [
        target_trial(
            i,
            b,
            times=[predicted_samples(b, B_NOISE, E_MIN) / throughput(b)],
            samples=round(predicted_samples(b, B_NOISE, E_MIN)),
            throughput=throughput(b),
            gradient_noise_scale=B_NOISE,
            noise_scale_steps=200,
        )
        for i, b in enumerate(BATCHES)
    ]
    rec = run_recommend(trials, target_loss=0.05)
    assert rec["policy"] == "time-to-target" and rec["global_batch_size"] == 64
    assert rec["target_loss"] == 0.05 and rec["reached_target"] is True
    assert rec["samples_to_target"] == round(predicted_samples(64, B_NOISE, E_MIN))
    assert rec["time_to_target_ci"] is None  # one run each
    prediction = rec["prediction"]
    assert prediction["fastest_predicted_batch"] == 64
    assert prediction["agreement"] == pytest.approx(1.0, rel=1e-3)
    assert prediction["trusted"] is True


def test_no_prediction_key_without_a_target() -> None:
    rec = run_recommend([make_trial(0, 64, loss=1.0, throughput=10.0)])
    assert "prediction" not in rec and "target_loss" not in rec
    assert SIGNATURE in rec["per_device_signature"]
