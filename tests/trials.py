"""Hand-made Optuna ``FrozenTrial`` objects for unit tests of the pure modules."""

from __future__ import annotations

from typing import Any

from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial

from tuner.core.recommend import recommend

BATCHES = [32, 64, 128, 256, 512]
RULES = ["none", "linear", "sqrt"]
DISTRIBUTIONS = {
    "global_batch_size": CategoricalDistribution(BATCHES),
    "lr_rule": CategoricalDistribution(RULES),
}
REPLICAS = 2
SIGNATURE = "2x cpu"


def make_trial(
    number: int,
    batch: int,
    rule: str = "none",
    status: str = "ok",
    loss: float | None = None,
    throughput: float | None = None,
    state: TrialState | None = None,
    **attrs: Any,
) -> FrozenTrial:
    """A trial at ``(batch, rule)``; ``ok`` trials are COMPLETE with ``[loss, throughput]``."""
    if state is None:
        state = {
            "ok": TrialState.COMPLETE,
            "oom": TrialState.PRUNED,
            "oom-implied": TrialState.PRUNED,
            "diverged": TrialState.PRUNED,
        }.get(status, TrialState.FAIL)
    user_attrs: dict[str, Any] = {"device_signature": SIGNATURE, **attrs}
    if state != TrialState.RUNNING:
        user_attrs["status"] = status
    if state == TrialState.COMPLETE:
        user_attrs.setdefault("per_replica_batch_size", batch // REPLICAS)
        user_attrs.setdefault("num_replicas", REPLICAS)
        user_attrs.setdefault("devices", ["/cpu:0", "/cpu:1"])
        user_attrs.setdefault("learning_rate", 1e-3 * batch / 64)
        user_attrs.setdefault("train_loss", (loss or 0.0) * 0.9)
    trial = create_trial(
        state=state,
        values=[loss, throughput] if state == TrialState.COMPLETE else None,
        params={"global_batch_size": batch, "lr_rule": rule},
        distributions=DISTRIBUTIONS,
        user_attrs=user_attrs,
    )
    trial.number = number
    return trial


def run_recommend(trials: list[FrozenTrial], **kwargs: Any) -> dict[str, Any]:
    return recommend(
        trials,
        study_name="unit",
        base_lr=1e-3,
        base_batch_size=64,
        versions={"tuner": "0.1.0", "optuna": "x"},
        created_at="2024-01-01T00:00:00Z",
        **kwargs,
    )


def write_small_study(db: Any) -> Any:
    """Store study ``small`` with two finished trials in the SQLite file ``db`` (no training);
    returns ``db``."""
    import optuna

    study = optuna.create_study(
        study_name="small", storage=f"sqlite:///{db}", directions=["minimize", "maximize"]
    )
    study.set_user_attr("spec", {"search": {"base_lr": 0.001, "base_batch_size": 256}})
    for number, (batch, rule) in enumerate([(256, "none"), (512, "linear")]):
        study.add_trial(make_trial(number, batch, rule, loss=0.5, throughput=1000.0 * (number + 1)))
    return db
