"""Hand-made Optuna ``FrozenTrial`` objects for unit tests of the pure modules."""

from __future__ import annotations

from typing import Any

from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState, create_trial

from tuner.core.recommend import recommend
from tuner.core.stats import t_interval, throughput_interval

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


def measured_trial(
    number: int,
    batch: int,
    rule: str = "none",
    *,
    runs: list[float],
    loss: float = 1.0,
    **attrs: Any,
) -> FrozenTrial:
    """A COMPLETE configuration measured over ``runs`` (each run's median throughput) as racing
    stores it: ``repeats``, the median as its throughput and the runs' interval."""
    ordered = sorted(runs)
    median = (ordered[(len(runs) - 1) // 2] + ordered[len(runs) // 2]) / 2
    interval = throughput_interval(runs, [])
    ci = {} if interval is None else {"throughput_ci": interval.as_list()}
    method = {} if interval is None else {"throughput_ci_method": interval.method}
    return make_trial(
        number,
        batch,
        rule,
        loss=loss,
        throughput=median,
        repeats=list(runs),
        repeat_losses=[loss] * len(runs),
        run_throughput=runs[-1],
        **ci,
        **method,
        **attrs,
    )


def target_trial(
    number: int,
    batch: int,
    rule: str = "none",
    *,
    times: list[float] | None,
    samples: int | None = None,
    loss: float = 1.0,
    throughput: float = 1000.0,
    **attrs: Any,
) -> FrozenTrial:
    """A COMPLETE trial of a time-to-target study: ``times`` (seconds to the target, one per
    run; ``None``: it never reached the target)."""
    if times is None:
        fields: dict[str, Any] = {"reached_target": False, "time_to_target_s": None}
    else:
        ordered = sorted(times)
        interval = t_interval(times)
        fields = {
            "reached_target": True,
            "time_to_target_s": (ordered[(len(times) - 1) // 2] + ordered[len(times) // 2]) / 2,
            "time_to_target_runs": list(times),
            "samples_to_target": samples,
        }
        if interval is not None:
            fields["time_to_target_ci"] = interval.as_list()
    return make_trial(number, batch, rule, loss=loss, throughput=throughput, **fields, **attrs)


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
