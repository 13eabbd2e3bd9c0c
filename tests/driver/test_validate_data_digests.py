"""The driver's side of "both runs saw the same data": the runs' batch digests compared, and a
difference made an inconclusive comparison with a named warning, never a failure."""

from __future__ import annotations

from typing import Any

from tuner.driver.validate.checks import OTHER_DATA, evaluate, first_differing_batch

WEIGHTS = {
    "compared": True,
    "max_relative_difference": 1.1,  # what other data leave: far past the tolerance
    "model_relative_difference": 1.1,
    "optimizer_relative_difference": 0.7,
    "variables_compared": 4,
    "largest": [["dense/kernel", 1.1]],
}


def run(replicas: int, losses: list[float], digests: list[str] | None) -> dict[str, Any]:
    return {
        "step_losses": losses,
        "num_replicas": replicas,
        "steps": len(losses),
        "weight_max_abs_diff": 0.0,
        "copies_per_variable": replicas,
        "variables_compared": 4,
        "replica_examples": [len(losses) * 64 // replicas] * replicas,
        "devices": [f"/cpu:{i}" for i in range(replicas)],
        "optimizer_learning_rate": 1e-3,
        **({"batch_digests": digests} if digests is not None else {}),
    }


def checks(one: list[str] | None, many: list[str] | None) -> dict[str, Any]:
    found = evaluate(
        run(1, [1.0, 0.9], one),
        run(2, [1.2, 0.8], many),
        global_batch=64,
        learning_rate=1e-3,
        weights=WEIGHTS,
    )
    return {c.name: c for c in found}


def test_the_first_differing_batch_is_found() -> None:
    assert first_differing_batch({"batch_digests": ["a", "b"]}, {"batch_digests": ["a", "c"]}) == 1
    assert first_differing_batch({"batch_digests": ["a"]}, {"batch_digests": ["a"]}) is None
    assert first_differing_batch({}, {"batch_digests": ["a"]}) is None  # nothing to compare


def test_other_data_make_the_comparison_inconclusive_with_a_named_warning() -> None:
    found = checks(["a", "b"], ["x", "b"])
    for name in ("loss parity", "final weights"):
        check = found[name]
        assert check.passed and check.figures["compared"] is False
        assert check.figures["first_differing_batch"] == 1
        assert check.warning is not None and check.warning.startswith(OTHER_DATA)
        assert "different data from batch 1" in check.summary


def test_the_same_data_leave_the_checks_to_judge() -> None:
    found = checks(["a", "b"], ["a", "b"])
    assert not found["loss parity"].passed and not found["final weights"].passed


def test_runs_without_digests_are_judged_as_before() -> None:
    found = checks(None, None)
    assert not found["final weights"].passed and found["final weights"].warning is None
